//! Every numeric flag of `tilepdb-coordinator` (and of its `worker`, the `tilepdb-worker`
//! program's arguments) given 0, -1, NaN, inf, 2^64-1 and 2^64: a clear refusal or a bounded
//! run, never a panic (issue 21). Files that are not regular files (a FIFO, `/dev/zero`) given
//! as a table or a set are refused, and a `--data-dir` that is a file says so.
//!
//! The runs go in parallel batches; a program that serves (`serve`, `worker`) and is still
//! running after a moment took the value and is stopped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{coordinator_bin, scratch};

const VALUES: [&str; 6] = [
    "0",
    "-1",
    "NaN",
    "inf",
    "18446744073709551615",
    "18446744073709551616",
];

/// How long a command that does not serve may take.
const BOUNDED: Duration = Duration::from_secs(60);
/// How long a serving command is watched before it counts as having taken the value.
const SERVING: Duration = Duration::from_secs(3);

struct Case {
    what: String,
    serving: bool,
    child: Child,
    started: Instant,
}

fn spawn(args: &[String], serving: bool) -> Case {
    let child = Command::new(coordinator_bin())
        .args(args)
        .env("RUST_LOG", "warn")
        .env("TILEPDB_TOKEN", "hostile-flags-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Case {
        what: args.join(" "),
        serving,
        child,
        started: Instant::now(),
    }
}

/// Waits for `case`; a description of what went wrong, if anything did.
fn judge(mut case: Case) -> Option<String> {
    let limit = if case.serving { SERVING } else { BOUNDED };
    loop {
        if let Some(status) = case.child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(case.child.stderr.as_mut().unwrap(), &mut stderr)
                .unwrap();
            if stderr.contains("panicked") || status.code() == Some(101) {
                return Some(format!("{}: panicked: {stderr}", case.what));
            }
            let Some(code) = status.code() else {
                return Some(format!("{}: killed by a signal: {status}", case.what));
            };
            if code != 0 && stderr.trim().is_empty() {
                return Some(format!("{}: exit {code} without a message", case.what));
            }
            return None;
        }
        if case.started.elapsed() > limit {
            let _ = case.child.kill();
            let _ = case.child.wait();
            if case.serving {
                let mut stderr = String::new();
                std::io::Read::read_to_string(case.child.stderr.as_mut().unwrap(), &mut stderr)
                    .unwrap();
                return stderr
                    .contains("panicked")
                    .then(|| format!("{}: panicked: {stderr}", case.what));
            }
            return Some(format!("{}: still running after {limit:?}", case.what));
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
    let dir = scratch("hostile-flags");
    let set_out = dir.join("set");
    let o = Command::new(coordinator_bin())
        .args(["build", "--puzzle", "3x3", "--pattern", "1,2", "--out"])
        .arg(&set_out)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let set = std::fs::read_dir(&set_out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    let mut cases: Vec<(Vec<String>, bool)> = Vec::new();
    let mut n = 0;
    let mut fresh = |what: &str| {
        n += 1;
        path(&dir.join(format!("{what}-{n}")))
    };
    for v in VALUES {
        let v = v.to_string();
        for flag in ["--threads", "--task-ranks", "--memory-limit", "--workers"] {
            let mut args = s(&["build", "--puzzle", "3x3", "--pattern", "1,2", "--out"]);
            args.push(fresh("build"));
            args.extend([flag.to_string(), v.clone()]);
            cases.push((args, false));
        }
        let mut args = s(&[
            "build",
            "--puzzle",
            "3x3",
            "--pattern",
            "1,2",
            "--workers",
            "1",
        ]);
        args.extend(s(&["--lease-timeout", &v, "--out"]));
        args.push(fresh("build"));
        cases.push((args, false));
        let mut args = s(&["encode", &path(&set), "--encoding", "nibble", "--check"]);
        args.extend(s(&["--threads", &v, "--out"]));
        args.push(fresh("encode"));
        cases.push((args, false));
        for flag in ["--random-states", "--seed"] {
            cases.push((s(&["inspect", &path(&set), flag, &v]), false));
        }
        cases.push((
            s(&[
                "status",
                "--coordinator",
                "http://127.0.0.1:1",
                "--watch",
                &v,
            ]),
            false,
        ));
        for flag in [
            "--download-limit",
            "--lease-timeout",
            "--task-ranks",
            "--threads",
            "--linger",
            "--memory-limit",
        ] {
            let mut args = s(&["serve", "--puzzle", "3x3", "--pattern", "1,2", "--no-token"]);
            args.extend(s(&["--listen", "127.0.0.1:0", "--data-dir"]));
            args.push(fresh("data"));
            args.push("--out".into());
            args.push(fresh("out"));
            args.extend([flag.to_string(), v.clone()]);
            cases.push((args, true));
        }
        for flag in ["--threads", "--give-up-after", "--zstd-level"] {
            cases.push((
                s(&["worker", "--coordinator", "http://127.0.0.1:1", flag, &v]),
                true,
            ));
        }
    }
    let started = Instant::now();
    let mut failures = Vec::new();
    let total = cases.len();
    // The commands that end by themselves in batches; those that serve all at once (each is
    // watched for the same moment).
    let (serving, ending): (Vec<_>, Vec<_>) = cases.into_iter().partition(|(_, serving)| *serving);
    for batch in ending.chunks(16) {
        let running: Vec<Case> = batch.iter().map(|(a, _)| spawn(a, false)).collect();
        failures.extend(running.into_iter().filter_map(judge));
    }
    let running: Vec<Case> = serving.iter().map(|(a, _)| spawn(a, true)).collect();
    failures.extend(running.into_iter().filter_map(judge));
    println!("{total} runs in {:.1} s", started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_that_are_not_regular_are_refused() {
    let dir = scratch("hostile-files");
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A set whose manifest is a FIFO.
    let set = dir.join("set");
    std::fs::create_dir(&set).unwrap();
    let manifest = set.join("manifest.json");
    let m = std::ffi::CString::new(manifest.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the C string.
    assert_eq!(unsafe { libc::mkfifo(m.as_ptr(), 0o600) }, 0);
    let mut runs = Vec::new();
    for target in [path(&fifo), "/dev/zero".to_string(), path(&set)] {
        for command in ["verify", "inspect"] {
            runs.push((command, target.clone()));
        }
    }
    for (command, target) in runs {
        let mut child = Command::new(coordinator_bin())
            .args([command, &target])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > until {
                let _ = child.kill();
                panic!("{command} {target}: still running");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // verify reports each table on standard output, the count on standard error.
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stderr).unwrap();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(!status.success(), "{command} {target}");
        assert!(
            stderr.contains("a FIFO")
                || stderr.contains("a device")
                || stderr.contains("regular file"),
            "{command} {target}: {stderr}"
        );
    }

    // A --data-dir that is a file says so.
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let o = Command::new(coordinator_bin())
        .args(["serve", "--puzzle", "3x3", "--pattern", "1,2", "--no-token"])
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("is a file, not a directory"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
