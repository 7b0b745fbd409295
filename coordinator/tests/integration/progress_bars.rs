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
            crate::skip::skipped(name, "tmux is not installed (apt-get install tmux)");
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

/// `build --workers N` in a terminal: the bars own it as in a single-machine build. No layer's
/// log line is printed through them, each table's summary line appears once (below the bars,
/// not also as a log line), and the table bar's rate is never 0 once the first layer is done.
#[test]
fn a_local_cluster_build_leaves_the_terminal_to_its_bars() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "RUST_LOG=info {PROGRAM} build --workers 2 --threads 2 --puzzle 4x3 --pattern 1,2,3,4 \
         --pattern 5,6,7 --out {}",
        dir.path().display()
    );
    let Some(tmux) = Tmux::start("owner", &command) else {
        return;
    };
    let (during, last) = tmux.until_exit(Duration::from_secs(300));
    assert!(last.contains("EXIT=0"), "the build failed:\n{last}");
    for screen in during.iter().chain([&last]) {
        assert!(
            !screen.contains("layer done") && !screen.contains("building table"),
            "a log line of the job's progress through the bars:\n{screen}"
        );
        // "layer D, found/expected states, R states/s, ETA": a rate once past layer 0.
        if let Some(bar) = line_with(screen, "table ") {
            let past_first = bar
                .split("layer ")
                .nth(1)
                .and_then(|rest| rest.split(',').next())
                .and_then(|d| d.trim().parse::<u32>().ok())
                .is_some_and(|d| d > 1);
            assert!(
                !(past_first && bar.contains(" 0 states/s")),
                "the table bar shows no rate:\n{screen}"
            );
        }
    }
    for tiles in ["{1,2,3,4}: ", "{5,6,7}: "] {
        assert_eq!(
            last.matches(tiles).count(),
            1,
            "table {tiles} is not summed up exactly once:\n{last}"
        );
    }
    let table = line_with(&last, "table ").unwrap_or_else(|| panic!("no table bar:\n{last}"));
    assert!(!table.contains(" 0 states/s"), "{table}");
    println!("owner: the last screen:\n{last}");
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
