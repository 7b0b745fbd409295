//! A coordinator killed in the middle of a job and restarted on a damaged data directory: a
//! real `tilepdb-coordinator serve` process and worker processes on 127.0.0.1.
//!
//! Flipped bytes in the state array or the depth bytes, or a truncated array: the restarted
//! coordinator finds that the arrays no longer match the checkpoint's checksums, starts the
//! table again from its goal (saying so) and ends with the single-machine tables. An edited
//! checkpoint (`next_depth` changed, `tables_written: 99`, garbage): refused with a message
//! naming the file and what to do, a non-zero exit, no panic, no hang.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::server::{Server, coordinator_bin, scratch, single_machine};

const TOKEN: &str = "checkpoint-test-token";
const JOB: [&str; 4] = ["--pattern", "1,2,3,4,5", "--pattern", "6,7,8"];
const MINUTES: Duration = Duration::from_secs(300);

fn start_coordinator(dir: &Path, data: &Path) -> Server {
    let mut command = Command::new(coordinator_bin());
    command
        .arg("serve")
        .args(JOB)
        .arg("--data-dir")
        .arg(data)
        .arg("--out")
        .arg(dir.join("out"))
        .args(["--listen", "127.0.0.1:0", "--linger", "2"])
        .args(["--task-ranks", "2048", "--lease-timeout", "2"])
        .env("TILEPDB_TOKEN", TOKEN);
    Server::spawn(command)
}

struct Worker(Child);

impl Worker {
    fn start(url: &str, extra: &[&str]) -> Worker {
        let child = Command::new(coordinator_bin())
            .arg("worker")
            .args([
                "--coordinator",
                url,
                "--threads",
                "1",
                "--give-up-after",
                "30",
            ])
            .args(extra)
            .env("TILEPDB_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every table file under `out`, by name.
fn tables(out: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = vec![];
    for set in std::fs::read_dir(out).unwrap() {
        let set = set.unwrap().path();
        if !set.is_dir() || set.file_name().unwrap().to_string_lossy().starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(&set).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                files.push((
                    f.strip_prefix(out).unwrap().to_path_buf(),
                    std::fs::read(&f).unwrap(),
                ));
            }
        }
    }
    files.sort();
    files
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Flips `count` bytes of `path` spread over its middle half.
fn flip_bytes(path: &Path, count: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let len = bytes.len() as u64;
    assert!(len > 4 * count, "{} is too small", path.display());
    for i in 0..count {
        let at = usize::try_from(len / 4 + i * (len / 2) / count).unwrap();
        bytes[at] ^= 0x5a;
    }
    std::fs::write(path, bytes).unwrap();
}

/// A data directory of the job killed in the middle of its first table, after a few layers.
fn killed_job(dir: &Path) -> PathBuf {
    let data = dir.join("killed");
    let first = start_coordinator(dir, &data);
    let _worker = Worker::start(&first.url(), &["--debug-task-delay-ms", "5"]);
    first.wait_layer_done(0, 6, MINUTES);
    let mut first = first;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    data
}

/// Waits for a server that must fail; its log.
fn refused(server: Server) -> String {
    let mut server = server;
    let status = server.wait_exit(MINUTES);
    let log = server.lines(&[]).join("\n");
    assert!(
        !status.success(),
        "the coordinator accepted it; log:\n{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    log
}

#[test]
fn a_damaged_data_directory_is_repaired_or_refused_never_a_wrong_table() {
    let dir = scratch("checkpoint-damage");
    single_machine(&JOB, &dir.join("single"));
    let want = tables(&dir.join("single"));
    assert!(!want.is_empty());
    let killed = killed_job(&dir);
    let codes = Path::new("table-0.codes");
    let depths = Path::new("table-0.depths");

    // Damaged arrays: repaired by starting the table again.
    #[allow(clippy::type_complexity, reason = "a table of named damages")]
    let damages: [(&str, &dyn Fn(&Path)); 3] = [
        ("codes", &|d: &Path| flip_bytes(&d.join(codes), 50)),
        ("depths", &|d: &Path| flip_bytes(&d.join(depths), 50)),
        ("truncated", &|d: &Path| {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(d.join(codes))
                .unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len / 2).unwrap();
        }),
    ];
    for (what, damage) in damages {
        let data = dir.join(format!("data-{what}"));
        copy_dir(&killed, &data);
        damage(&data);
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let c = start_coordinator(&dir, &data);
        let _worker = Worker::start(&c.url(), &[]);
        let log = c.finish(MINUTES);
        assert!(
            log.iter()
                .any(|l| l.contains("starting the table again from its goal")),
            "{what}: the damage was not reported"
        );
        assert_eq!(
            tables(&dir.join("out")),
            want,
            "{what}: not the single-machine tables"
        );
    }

    // An edited checkpoint: refused, naming the file and what to do.
    #[allow(clippy::type_complexity, reason = "a table of named edits")]
    let edits: [(&str, &dyn Fn(&str) -> String); 4] = [
        ("next_depth", &|t: &str| {
            let depth: u32 = t
                .split("\"next_depth\": ")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|d| d.parse().ok())
                .expect("a next_depth");
            t.replace(
                &format!("\"next_depth\": {depth}"),
                &format!("\"next_depth\": {}", depth + 3),
            )
        }),
        ("tables_written", &|t: &str| {
            t.replace("\"tables_written\": 0", "\"tables_written\": 99")
        }),
        ("garbage", &|t: &str| t[..t.len() / 2].to_string()),
        ("empty", &|_: &str| String::new()),
    ];
    for (what, edit) in edits {
        let data = dir.join(format!("data-{what}"));
        copy_dir(&killed, &data);
        let path = data.join("checkpoint.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = edit(&text);
        assert_ne!(edited, text, "{what}: the edit changes the checkpoint");
        std::fs::write(&path, edited).unwrap();
        let log = refused(start_coordinator(&dir, &data));
        assert!(
            log.contains("checkpoint.json") && log.contains("remove the data directory"),
            "{what}: the message names the file and what to do; log:\n{log}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
