//! `tilepdb-solve` writing JSON into a pipe whose reader has already gone ends quietly
//! (SIGPIPE, as Unix tools do) instead of panicking; bad numbers of seconds or threads are
//! refused with a message, never a panic.

#![cfg(unix)]

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

const SIGPIPE: i32 = 13;

fn solve() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
}

#[test]
fn json_into_a_closed_pipe_does_not_panic() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = solve()
        .args([
            "solve",
            "--puzzle",
            "8",
            "--json",
            "--state",
            "1 2 0 3 4 5 6 7 8",
        ])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}

#[test]
fn bad_timeouts_and_thread_counts_are_refused() {
    for (flag, value, needle) in [
        ("--timeout", "NaN", "finite number of seconds"),
        ("--timeout", "inf", "finite number of seconds"),
        ("--timeout", "1e300", "too long"),
        ("--timeout=-3", "", "above zero"),
        ("--timeout", "0", "above zero"),
        ("--threads", "100000", "at most 1024"),
    ] {
        let out = solve()
            .args([
                "solve",
                "--puzzle",
                "8",
                flag,
                value,
                "--state",
                "1 2 0 3 4 5 6 7 8",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} accepted");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains(needle), "{flag} {value}: {stderr}");
    }
}
