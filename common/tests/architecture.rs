//! The mechanical rules of `ARCHITECTURE.md`: which workspace crate may depend on which, what
//! the engine's folder may import, where gRPC statuses are made, where wire messages stop and
//! status codes are compared, and what `proto/` holds.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The workspace crates named in the `[dependencies]` table of `crate_dir`'s manifest.
fn workspace_dependencies(crate_dir: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(workspace().join(crate_dir).join("Cargo.toml")).unwrap();
    let mut inside = false;
    let mut found = vec![];
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && line.starts_with("tilepdb-") {
            let name = line.split(['=', '.', ' ']).next().unwrap();
            found.push(name.to_string());
        }
    }
    found.sort();
    found
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// `file:line: text` for each line of the Rust files under `dir` (comments left out) that
/// contains one of `needles`, except in the files `allowed` (paths relative to `dir`).
/// Whether `code` names `needle` as a path of its own: not the end of a longer identifier
/// (`ShardedStatus::new` does not name `Status::`).
fn names(code: &str, needle: &str) -> bool {
    code.match_indices(needle).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn lines_naming(dir: &str, needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let root = workspace().join(dir);
    let mut files = vec![];
    rust_files(&root, &mut files);
    assert!(!files.is_empty(), "no Rust file under {dir}");
    let mut found = vec![];
    for file in files {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if allowed.contains(&relative.as_str()) {
            continue;
        }
        let source = std::fs::read_to_string(&file).unwrap();
        for (n, line) in source.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && needles.iter().any(|x| names(code, x)) {
                found.push(format!("{dir}/{relative}:{}: {}", n + 1, code));
            }
        }
    }
    found
}

#[test]
fn each_crate_depends_only_on_the_crates_the_map_allows() {
    let rules: [(&str, &[&str]); 5] = [
        ("common", &[]),
        ("proof", &["tilepdb-common"]),
        ("worker", &["tilepdb-common", "tilepdb-proof"]),
        ("solver", &["tilepdb-common", "tilepdb-proof"]),
        (
            "coordinator",
            &["tilepdb-common", "tilepdb-proof", "tilepdb-worker"],
        ),
    ];
    for (dir, allowed) in rules {
        for dep in workspace_dependencies(dir) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{dir} depends on {dep}; ARCHITECTURE.md allows {allowed:?}"
            );
        }
    }
    assert_eq!(workspace_dependencies("proof"), ["tilepdb-common"]);
}

#[test]
fn the_engine_imports_nothing_of_the_cluster_the_cli_or_observe() {
    let found = lines_naming(
        "coordinator/src/engine",
        &["crate::cluster", "crate::cli", "crate::observe", "tonic"],
        &[],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn only_the_service_layer_makes_grpc_statuses() {
    let found = lines_naming(
        "coordinator/src",
        &["Status::", "tonic::Status"],
        &[
            "cluster/service.rs",
            "cluster/server.rs",
            "cluster/tables.rs",
            "cluster/sharded/service.rs",
            "observe/health.rs",
        ],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_engine_the_job_and_the_control_plane_speak_no_wire_messages() {
    let found = [
        lines_naming("coordinator/src/engine", &["wire::proto"], &[]),
        // The job's tests make headers to check their conversion.
        lines_naming(
            "coordinator/src/cluster/job",
            &["wire::proto"],
            &["tests.rs"],
        ),
        lines_naming(
            "coordinator/src/cluster/sharded",
            &["wire::proto"],
            // The edges: the services, the server, and the builder's reads of the values.
            &["service.rs", "server.rs", "builder/write.rs", "values.rs"],
        ),
    ]
    .concat();
    assert!(found.is_empty(), "{}", found.join("\n"));
    for file in ["results.rs", "progress.rs", "workers.rs"] {
        let source =
            std::fs::read_to_string(workspace().join("coordinator/src/cluster").join(file))
                .unwrap();
        assert!(
            !source.contains("wire::proto"),
            "coordinator/src/cluster/{file} names a wire message"
        );
    }
}

#[test]
fn only_the_classifiers_compare_status_codes() {
    let found = [
        lines_naming("worker/src", &["Code::"], &["client/retry.rs"]),
        lines_naming("solver/src", &["Code::"], &["fetch/mod.rs"]),
        lines_naming(
            "coordinator/src",
            &["Code::"],
            &[
                "cluster/service.rs",
                "cluster/sharded/service.rs",
                "observe/refusals.rs",
                "observe/health.rs",
            ],
        ),
    ]
    .concat();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn proto_holds_only_proto_files() {
    let mut stack = vec![workspace().join("proto")];
    let mut protos = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                assert!(
                    path.extension().is_some_and(|e| e == "proto"),
                    "{} in proto/",
                    path.display()
                );
                protos += 1;
            }
        }
    }
    assert!(protos > 0);
}
