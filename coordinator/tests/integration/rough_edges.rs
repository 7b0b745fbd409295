//! The rough edges a new user met (issue 13), each run as the user ran it: `verify` on a
//! directory of sets, a partition named without its board, a resumed job that was already
//! done, and the errors of `status` and the worker when nothing answers.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-coordinator");

fn run(args: &[&str]) -> Output {
    Command::new(PROGRAM)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn build(out: &Path, patterns: &[&str]) {
    let mut args = vec!["build", "--puzzle", "3x3", "--out", out.to_str().unwrap()];
    for p in patterns {
        args.extend(["--pattern", p]);
    }
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn verify_walks_a_directory_of_sets() {
    let root = tempfile::tempdir().unwrap();
    build(root.path(), &["1,2,3", "4,5"]);
    build(root.path(), &["1,2"]);
    let r = root.path().to_str().unwrap();
    let o = run(&["verify", r]);
    let stdout = text(&o.stdout);
    assert!(o.status.success(), "{}{stdout}", text(&o.stderr));
    assert!(
        stdout.contains(&format!(
            "2 set(s) in {r}: 2 ok, 0 failed; 3 table(s), 0 failed"
        )),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("\nset    ").count() + usize::from(stdout.starts_with("set    ")),
        2
    );

    // One file of one set damaged: that set fails, the other is still verified.
    let damaged = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("pattern-1-2.pdb").exists())
        .unwrap()
        .join("pattern-1-2.pdb");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&damaged, bytes).unwrap();
    let o = run(&["verify", r]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(!o.status.success());
    assert!(
        stdout.contains("2 set(s)") && stdout.contains("1 ok, 1 failed"),
        "{stdout}"
    );
    assert!(stderr.contains("1 of 2 set(s)"), "{stderr}");

    // A directory with no set at all: a clear error, not an OS error.
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir(empty.path().join("not-a-set")).unwrap();
    let o = run(&["verify", empty.path().to_str().unwrap()]);
    let stderr = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("is not a table set") && stderr.contains("holds no set"),
        "{stderr}"
    );
    assert!(!stderr.contains("os error"), "{stderr}");
}

#[test]
fn a_partition_named_without_its_board_is_found() {
    for args in [
        &["--partition", "6-6-3", "--puzzle", "15"][..],
        &["--partition", "6-6-3"],
        &["--partition", "15:6-6-3", "--puzzle", "15"],
    ] {
        let o = run(&[&["inspect", "--plan", "--json"][..], args].concat());
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["partition"], "15:6-6-3", "{args:?}");
    }
    // On another board it is still refused, with the known names.
    let o = run(&[
        "inspect",
        "--plan",
        "--partition",
        "6-6-3",
        "--puzzle",
        "24",
    ]);
    let stderr = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("6-6-3") && stderr.contains("15:6-6-3"),
        "{stderr}"
    );
}

#[test]
fn a_resumed_job_that_was_done_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let data = dir.path().join("data");
    let args = [
        "build",
        "--puzzle",
        "3x3",
        "--pattern",
        "1,2",
        "--pattern",
        "3,4",
        "--workers",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ];
    let first = run(&args);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(text(&first.stdout).contains("2 table(s) of"));
    let again = run(&args);
    let stdout = text(&again.stdout);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        stdout.contains("the job was already done: its 2 table(s)"),
        "{stdout}"
    );
    assert!(!stdout.contains("0 table(s)"), "{stdout}");
}

/// One `error:` line, in words: no tonic `Debug` structures, nothing said twice.
fn one_clear_error(what: &str, o: &Output) {
    let stderr = text(&o.stderr);
    assert!(!o.status.success(), "{what} succeeded");
    // Retries may be logged as warnings; the error itself is said once.
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error") || l.contains("ERROR"))
        .collect();
    assert_eq!(errors.len(), 1, "{what}:\n{stderr}");
    assert!(errors[0].starts_with("error: "), "{what}:\n{stderr}");
    for debug in [
        "Status {",
        "metadata",
        "MetadataMap",
        "details:",
        "source:",
        "Error {",
    ] {
        assert!(
            !stderr.contains(debug),
            "{what} prints {debug:?}:\n{stderr}"
        );
    }
}

#[test]
fn status_and_worker_errors_are_one_line_in_words() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    one_clear_error("status", &run(&["status", "--coordinator", &url]));
    one_clear_error(
        "worker",
        &run(&["worker", "--coordinator", &url, "--give-up-after", "1"]),
    );
}
