//! What the integration tests that start processes share: the coordinator program, scratch
//! directories, the table files a build leaves, a server process (`serve`) with its log lines
//! collected, and a client that speaks the protocol by hand ([`client`]).

#![allow(dead_code)]

pub mod client;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

pub fn coordinator_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
}

/// `tilepdb-coordinator serve` of `job`, with its data in `dir/data` and its tables in
/// `dir/out`; the caller adds the rest.
pub fn serve_job(job: &[&str], dir: &Path) -> Command {
    let mut command = Command::new(coordinator_bin());
    command
        .arg("serve")
        .args(job)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--out")
        .arg(dir.join("out"));
    command
}

/// Builds `job` on this machine into `out`.
pub fn single_machine(job: &[&str], out: &Path) {
    let status = Command::new(coordinator_bin())
        .arg("build")
        .args(job)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// A scratch directory of one test, empty.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tilepdb-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every table file of the set in `dir`, by name, with its bytes.
pub fn set_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![];
    for f in std::fs::read_dir(dir).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            files.push((name, std::fs::read(&f).unwrap()));
        }
    }
    files.sort();
    files
}

/// Every table file of every set under `out` (as `SET/FILE`), with its bytes.
pub fn table_files(out: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![];
    for set in std::fs::read_dir(out).unwrap() {
        let set = set.unwrap().path();
        let name = set.file_name().unwrap().to_string_lossy().into_owned();
        if !set.is_dir() || name.starts_with('.') {
            continue;
        }
        for (file, bytes) in set_files(&set) {
            files.push((format!("{name}/{file}"), bytes));
        }
    }
    files.sort();
    files
}

/// A running server process, its log lines collected.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `command` with its standard error collected; its first log line must name
    /// the address it listens on (`listening on HOST:PORT`).
    pub fn spawn(mut command: Command) -> Server {
        let mut child = command
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut first = true;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if first {
                    first = false;
                    let addr = line
                        .split("listening on ")
                        .nth(1)
                        .and_then(|rest| rest.split_whitespace().next())
                        .and_then(|a| a.parse::<SocketAddr>().ok());
                    let _ = tx.send((addr, line.clone()));
                }
                log2.lock().unwrap().push(line);
            }
        });
        let (addr, line) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server logs a first line");
        let addr = addr.unwrap_or_else(|| panic!("first log line names no address: {line}"));
        Server { child, addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until a log line contains every one of `words`.
    pub fn wait_for(&self, words: &[&str], timeout: Duration) -> String {
        let until = Instant::now() + timeout;
        loop {
            if let Some(l) = self
                .log
                .lock()
                .unwrap()
                .iter()
                .find(|l| words.iter().all(|w| l.contains(w)))
            {
                return l.clone();
            }
            if Instant::now() >= until {
                // The log copied out first: the panic must not poison the lock.
                let log = self.log.lock().unwrap().join("\n");
                panic!("no log line with {words:?} within {timeout:?}; log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The log lines that contain every one of `words`.
    pub fn lines(&self, words: &[&str]) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| words.iter().all(|w| l.contains(w)))
            .cloned()
            .collect()
    }

    pub fn has(&self, words: &[&str]) -> bool {
        self.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| words.iter().all(|w| l.contains(w)))
    }

    /// Waits for the coordinator to exit; asserts it succeeded.
    pub fn finish(mut self, timeout: Duration) {
        let until = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if !status.success() {
                    let log = self.log.lock().unwrap().join("\n");
                    panic!("server failed: {status}; log:\n{log}");
                }
                return;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                let log = self.log.lock().unwrap().join("\n");
                panic!("server still running after {timeout:?}; log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
