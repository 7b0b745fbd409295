//! Every `--json` command writing into a pipe whose reader has already gone ends quietly
//! (killed by SIGPIPE, as Unix tools are) instead of panicking with "failed printing to
//! stdout". The reader is closed before the program starts, so its first write always fails.

#![cfg(unix)]

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

fn run_into_closed_pipe(program: &str, args: &[&str]) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{args:?} ended with {:?}: {stderr}",
        out.status
    );
}

#[test]
fn json_output_into_a_closed_pipe_does_not_panic() {
    let bin = env!("CARGO_BIN_EXE_tilepdb-coordinator");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    // A real set to inspect and verify.
    let built = Command::new(bin)
        .args(["build", "--puzzle", "3x3", "--pattern", "1,2", "--out", out])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(built.success());
    let set = dir.path().join("3x3-1.2-minimized-blank-first");
    let set = set.to_str().unwrap();
    for args in [
        &["partitions", "--json"][..],
        &[
            "build",
            "--puzzle",
            "3x3",
            "--pattern",
            "1,2",
            "--out",
            out,
            "--json",
        ],
        &["inspect", set, "--json"],
        &["inspect", "--plan", "--partition", "15:6-6-3", "--json"],
        &["verify", "--deep", set, "--json"],
    ] {
        run_into_closed_pipe(bin, args);
    }
}
