//! The rule of the proofs wing (`proof/src/lib.rs`): no proof imports the build's search. A
//! proof must not trust the code it checks, so the crate's manifest names no crate of the
//! build among its dependencies, and no source file outside its tests names the coordinator,
//! the worker or the expansion kernel that the build runs.

use std::path::{Path, PathBuf};

/// What a proof may not use: the build's crates and the build's kernel in the shared crate.
const FORBIDDEN: [&str; 4] = [
    "tilepdb_coordinator",
    "tilepdb_worker",
    "tilepdb_solver",
    "region_expand",
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The lines of the `[dependencies]` table of a manifest.
fn dependencies(manifest: &str) -> Vec<&str> {
    let mut inside = false;
    let mut lines = vec![];
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            lines.push(line);
        }
    }
    lines
}

/// The lines of `source` that may import code (not comments, not test modules), with their
/// numbers: a file's lines from `#[cfg(test)]` on are its tests.
fn code_lines(source: &str) -> impl Iterator<Item = (usize, &str)> {
    source
        .lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
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

/// Whether `path` is a test module of its own (`tests.rs`).
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
}

/// Where `source` breaks the rule: `file:line: text` for each line that names a forbidden path.
fn violations(file: &str, source: &str) -> Vec<String> {
    code_lines(source)
        .filter(|(_, l)| FORBIDDEN.iter().any(|f| l.contains(f)))
        .map(|(n, l)| format!("{file}:{n}: {}", l.trim()))
        .collect()
}

#[test]
fn the_manifest_depends_on_no_crate_of_the_build() {
    let manifest = std::fs::read_to_string(crate_dir().join("Cargo.toml")).unwrap();
    let deps = dependencies(&manifest);
    assert!(
        deps.iter().any(|d| d.starts_with("tilepdb-common")),
        "{deps:?}"
    );
    for dep in deps {
        for name in ["tilepdb-coordinator", "tilepdb-worker", "tilepdb-solver"] {
            assert!(!dep.starts_with(name), "the proofs depend on {name}: {dep}");
        }
    }
}

#[test]
fn no_proof_imports_the_search() {
    let mut files = vec![];
    rust_files(&crate_dir().join("src"), &mut files);
    assert!(files.len() >= 8, "{files:?}");
    let mut found = vec![];
    for file in files.iter().filter(|f| !is_test_file(f)) {
        let source = std::fs::read_to_string(file).unwrap();
        found.extend(violations(&file.display().to_string(), &source));
    }
    assert!(
        found.is_empty(),
        "proofs that import the build:\n{}",
        found.join("\n")
    );
}

/// The check itself finds an import of the search, and only outside comments and tests.
#[test]
fn the_rule_finds_an_import_of_the_search() {
    let source = "use rayon::prelude::*;\n\
                  use tilepdb_common::region_expand::RegionKernel;\n\
                  /// use tilepdb_coordinator::build::build_table;\n\
                  #[cfg(test)]\n\
                  mod tests { use tilepdb_coordinator::build::build_table; }\n";
    let found = violations("bad.rs", source);
    assert_eq!(
        found,
        vec!["bad.rs:2: use tilepdb_common::region_expand::RegionKernel;"]
    );
    let manifest = "[dependencies]\ntilepdb-coordinator = { path = \"../coordinator\" }\n";
    assert_eq!(dependencies(manifest).len(), 1);
}
