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
        &["completions", "bash"],
    ] {
        run_into_closed_pipe(bin, args);
    }
}

/// Whether `SIGPIPE` is among the signals process `pid` ignores (`SigIgn` in its status).
fn ignores_sigpipe(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .expect("a SigIgn line");
    let mask = u64::from_str_radix(mask.trim(), 16).unwrap();
    mask & (1 << (libc::SIGPIPE - 1)) != 0
}

/// The programs are gRPC servers and clients: a vectored write to a socket whose peer has gone
/// raises `SIGPIPE`, so they must keep ignoring it (only their standard output ends them on a
/// closed pipe). A coordinator killed by it dies without a word when a worker disconnects.
#[test]
#[cfg(target_os = "linux")]
fn a_running_program_ignores_sigpipe_on_its_sockets() {
    let bin = env!("CARGO_BIN_EXE_tilepdb-coordinator");
    // A worker retrying a coordinator that is not there: a program that is up and connecting.
    let mut worker = Command::new(bin)
        .args([
            "worker",
            "--coordinator",
            "http://127.0.0.1:9",
            "--give-up-after",
            "20",
        ])
        .env("TILEPDB_TOKEN", "t")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let ignored = ignores_sigpipe(worker.id());
    worker.kill().unwrap();
    worker.wait().unwrap();
    assert!(ignored, "the running program does not ignore SIGPIPE");
}
