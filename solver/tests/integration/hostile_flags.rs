//! Every numeric flag of `tilepdb-solve` given 0, -1, NaN, inf, 2^64-1 and 2^64: a clear
//! refusal or a bounded run, never a panic (issue 21); an instances file that is a FIFO or
//! `/dev/zero` is refused.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-solve");
const VALUES: [&str; 6] = [
    "0",
    "-1",
    "NaN",
    "inf",
    "18446744073709551615",
    "18446744073709551616",
];
/// How long one run may take.
const BOUNDED: Duration = Duration::from_secs(60);
/// An 8-puzzle instance of 30 moves.
const STATE: &str = "8 6 7 2 5 4 3 0 1";

fn spawn(args: &[String]) -> Child {
    Command::new(PROGRAM)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child`; its exit status and standard error, or `None` past [`BOUNDED`].
fn wait(mut child: Child) -> Option<(std::process::ExitStatus, String)> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            return Some((status, stderr));
        }
        if started.elapsed() > BOUNDED {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn every_numeric_flag_refuses_or_runs_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let instances = dir.path().join("instances.txt");
    std::fs::write(&instances, format!("{STATE}\n")).unwrap();
    let mut cases: Vec<Vec<String>> = Vec::new();
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        path(&dir.path().join(format!("out-{n}")))
    };
    for v in VALUES {
        let solve = s(&["solve", "--puzzle", "8", "--heuristic", "manhattan"]);
        for flag in ["--max-nodes", "--timeout", "--threads", "--search-threads"] {
            let mut a = solve.clone();
            a.extend(s(&["--state", STATE, flag, v]));
            cases.push(a);
        }
        let mut a = solve.clone();
        a.extend(s(&["--algorithm", "weighted-astar", "--state", STATE]));
        a.extend(s(&["--weight", v]));
        cases.push(a);
        for flag in [
            "--max-nodes",
            "--timeout",
            "--threads",
            "--search-threads",
            "--random-states",
            "--seed",
        ] {
            let mut a = s(&["bench", &path(&instances), "--entry", "manhattan"]);
            a.extend(s(&["--puzzle", "8", flag, v, "--out"]));
            a.push(fresh());
            cases.push(a);
        }
        for extra in [["--walk", v], ["--count", v], ["--seed", v]] {
            let mut a = s(&["gen", "--puzzle", "8"]);
            if extra[0] != "--walk" {
                a.extend(s(&["--walk", "5"]));
            }
            a.extend(s(&extra));
            a.push("-o".into());
            a.push(fresh());
            cases.push(a);
        }
        for flag in ["--walk", "--seed", "--hint-nodes"] {
            cases.push(s(&["play", "--puzzle", "8", flag, v]));
        }
    }
    let started = Instant::now();
    let mut failures = Vec::new();
    let total = cases.len();
    for batch in cases.chunks(16) {
        let running: Vec<(String, Child)> = batch.iter().map(|a| (a.join(" "), spawn(a))).collect();
        for (what, child) in running {
            match wait(child) {
                None => failures.push(format!("{what}: still running after {BOUNDED:?}")),
                Some((status, stderr)) => {
                    if stderr.contains("panicked") || status.code() == Some(101) {
                        failures.push(format!("{what}: panicked: {stderr}"));
                    } else if status.code().is_none() {
                        failures.push(format!("{what}: killed by a signal: {status}"));
                    } else if !status.success() && stderr.trim().is_empty() {
                        failures.push(format!("{what}: {status} without a message"));
                    }
                }
            }
        }
    }
    println!("{total} runs in {:.1} s", started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn instance_files_that_are_not_regular_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for file in [path(&fifo), "/dev/zero".to_string()] {
        for command in [
            s(&["solve", "--puzzle", "8", "--heuristic", "manhattan", &file]),
            s(&["eval", "--tables", &file, "--state", STATE]),
            s(&["solve", "--tables", &file, "--state", STATE]),
        ] {
            let what = command.join(" ");
            let Some((status, stderr)) = wait(spawn(&command)) else {
                panic!("{what}: still running");
            };
            assert!(!status.success(), "{what}");
            assert!(
                stderr.contains("a FIFO")
                    || stderr.contains("a device")
                    || stderr.contains("regular file")
                    || stderr.contains("not a directory")
                    || stderr.contains("Not a directory"),
                "{what}: {stderr}"
            );
        }
    }
}
