//! Progress bars as a person sees them: `build` run in a real terminal (tmux) shows a bar for
//! the set and one for the table, which end at 100 % above the summary, in the single-machine
//! and the local-cluster (`--workers`) modes; on a pipe there are no bars and no escape codes,
//! only log lines. Skipped, with the reason printed, where tmux is not installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-coordinator");

/// A tmux server of this test alone, with one window running a shell command.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, command: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: tmux is not installed (apt-get install tmux)");
            return None;
        }
        let tmux = Tmux {
            socket: format!("tilepdb-bars-{name}-{}", std::process::id()),
        };
        // The shell waits after the program so that the last screen stays to be read.
        let script = format!("{command}; echo EXIT=$?; sleep 600");
        let status = Command::new("tmux")
            .args(["-L", &tmux.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "bars", "-x", "160", "-y", "40"])
            .args(["sh", "-c", &script])
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Some(tmux)
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "bars"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Screens captured every 50 ms until the program has ended; the last one.
    fn until_exit(&self, timeout: Duration) -> (Vec<String>, String) {
        let started = Instant::now();
        let mut seen = Vec::new();
        loop {
            let screen = self.screen();
            if screen.contains("EXIT=") {
                return (seen, screen);
            }
            seen.push(screen.clone());
            assert!(
                started.elapsed() < timeout,
                "the build did not end; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The last line of `screen` that starts with `start` (the bars as last drawn).
fn line_with<'a>(screen: &'a str, start: &str) -> Option<&'a str> {
    screen.lines().rfind(|l| l.starts_with(start))
}

/// Runs `args` in a terminal and checks the last screen: both bars at 100 %, every table
/// counted, the summary below them, no module paths in the log lines.
fn bars_end_at_100_percent(name: &str, args: &str, out: &Path, tables: usize) {
    let command = format!("RUST_LOG=info {PROGRAM} {args} --out {}", out.display());
    let Some(tmux) = Tmux::start(name, &command) else {
        return;
    };
    let (during, last) = tmux.until_exit(Duration::from_secs(300));
    assert!(last.contains("EXIT=0"), "the build failed:\n{last}");
    let set = line_with(&last, "set ").unwrap_or_else(|| panic!("no set bar:\n{last}"));
    assert!(set.contains("100%"), "{set}");
    assert!(set.contains(&format!("{tables}/{tables} tables")), "{set}");
    assert!(set.contains("done"), "{set}");
    let table = line_with(&last, "table ").unwrap_or_else(|| panic!("no table bar:\n{last}"));
    assert!(table.contains("100%"), "{table}");
    // The summary comes after the bars.
    let bars_at = last.rfind("\nset ").unwrap();
    let summary_at = last
        .rfind("table(s) of")
        .unwrap_or_else(|| panic!("no summary:\n{last}"));
    assert!(
        summary_at > bars_at,
        "the summary is above the bars:\n{last}"
    );
    assert!(
        !last.contains("tilepdb_coordinator::"),
        "module paths in a terminal's log:\n{last}"
    );
    // What a person saw while it ran (the screens are kept in the test's output).
    let moving = during.iter().rev().find(|s| {
        line_with(s, "set ").is_some_and(|l| !l.contains("100%"))
            && line_with(s, "table ").is_some()
    });
    match moving {
        Some(screen) => println!("{name}: a screen during the build:\n{screen}"),
        None => println!("{name}: the build ended before a screen was captured mid-way"),
    }
    println!("{name}: the last screen:\n{last}");
}

#[test]
fn a_single_machine_build_shows_set_and_table_bars_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    bars_end_at_100_percent(
        "single",
        "build --puzzle 4x3 --pattern 1,2,3,4 --pattern 5,6,7 --pattern 8,9,10,11",
        dir.path(),
        3,
    );
}

#[test]
fn a_local_cluster_build_shows_the_same_bars_from_the_jobs_status() {
    let dir = tempfile::tempdir().unwrap();
    bars_end_at_100_percent(
        "cluster",
        "build --workers 2 --threads 2 --puzzle 4x3 --pattern 1,2,3,4 --pattern 5,6,7",
        dir.path(),
        2,
    );
}

#[test]
fn a_build_into_a_pipe_writes_log_lines_without_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    for workers in ["0", "1"] {
        let out = Command::new(PROGRAM)
            .args(["build", "--puzzle", "3x3", "--pattern", "1,2,3"])
            .args(["--pattern", "4,5", "--workers", workers, "--out"])
            .arg(dir.path().join(workers))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        for text in [&stderr, &String::from_utf8_lossy(&out.stdout)] {
            assert!(!text.contains('\x1b'), "escape codes on a pipe:\n{text}");
        }
        assert!(
            stderr.contains("layer done") && stderr.contains("table=1"),
            "no layer log lines:\n{stderr}"
        );
    }
}
