//! `tilepdb-coordinator encode`: a set encoded from a lossless one is byte-identical, file by
//! file and manifest included, to the set `build` writes directly in that encoding; the
//! encodings `build` refuses are refused the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn coordinator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn refused(out: &Output, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "expected a refusal, got success");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    stderr
}

/// The only set directory under `out`.
fn only_set(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

fn build(out: &Path, job: &[&str], encoding: &str) -> PathBuf {
    let mut args = vec![
        "build",
        "--out",
        out.to_str().unwrap(),
        "--encoding",
        encoding,
    ];
    args.extend_from_slice(job);
    ok(coordinator(&args));
    only_set(out)
}

/// Builds `job` in bytes (or `source` encoding), encodes it into each of `encodings` and
/// compares with direct builds.
fn encoded_equals_built(job: &[&str], source: &str, encodings: &[&str]) {
    let work = tempfile::tempdir().unwrap();
    let lossless = build(&work.path().join("source"), job, source);
    for &encoding in encodings {
        let encoded_out = work.path().join(format!("encoded-{encoding}"));
        let stdout = ok(coordinator(&[
            "encode",
            lossless.to_str().unwrap(),
            "--encoding",
            encoding,
            "--check",
            "--out",
            encoded_out.to_str().unwrap(),
        ]));
        assert!(stdout.contains("encoded to"), "{stdout}");
        let encoded = only_set(&encoded_out);
        let built = build(
            &work.path().join(format!("built-{encoding}")),
            job,
            encoding,
        );
        assert_eq!(encoded.file_name(), built.file_name(), "set names");
        let (a, b) = (files(&encoded), files(&built));
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{encoding}: file names"
        );
        assert!(a.len() >= 3, "tables and a manifest: {:?}", a.keys());
        for (name, bytes) in &a {
            assert!(bytes == &b[name], "{job:?} {encoding}: {name} differs");
        }
    }
}

#[test]
fn minimized_set_to_every_allowed_encoding() {
    encoded_equals_built(
        &["--partition", "8:4-4"],
        "byte",
        &["nibble", "min-nibble:2", "min-nibble:4"],
    );
}

#[test]
fn aware_custom_set_to_every_allowed_encoding_and_back_from_mod3() {
    let job = [
        "--puzzle",
        "3x3",
        "--pattern",
        "1,2,3",
        "--pattern",
        "4,5,6,7,8",
        "--blank",
        "aware",
        "--goal",
        "blank-last",
    ];
    encoded_equals_built(&job, "byte", &["mod3", "nibble", "min-nibble:2"]);
    // mod3 is lossless too: it encodes back to bytes.
    encoded_equals_built(&job, "mod3", &["byte"]);
}

#[test]
fn refusals_are_those_of_build() {
    let work = tempfile::tempdir().unwrap();
    let source = build(&work.path().join("s"), &["--partition", "8:4-4"], "byte");
    let src = source.to_str().unwrap();
    // mod3 of a minimized set: the very message build gives.
    let from_build = refused(
        &coordinator(&[
            "build",
            "--partition",
            "8:4-4",
            "--encoding",
            "mod3",
            "--out",
            work.path().join("b").to_str().unwrap(),
        ]),
        "consistent",
    );
    let from_encode = refused(
        &coordinator(&["encode", src, "--encoding", "mod3"]),
        "consistent",
    );
    assert_eq!(from_build, from_encode);
    refused(
        &coordinator(&["encode", src, "--encoding", "min-nibble:3"]),
        "power of two",
    );
    refused(
        &coordinator(&["encode", src, "--encoding", "byte"]),
        "already in the byte",
    );
    let lossy = build(&work.path().join("n"), &["--partition", "8:4-4"], "nibble");
    refused(
        &coordinator(&[
            "encode",
            lossy.to_str().unwrap(),
            "--encoding",
            "min-nibble:2",
        ]),
        "does not keep every value",
    );
    refused(
        &coordinator(&["encode", "/nonexistent/set", "--encoding", "nibble"]),
        "/nonexistent/set",
    );
}
