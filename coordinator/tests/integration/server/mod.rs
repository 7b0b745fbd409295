//! What the integration tests that start processes share: the coordinator program, scratch
//! directories, the table files a build leaves, a server process (`serve`) with its log lines
//! collected, and a client that speaks the protocol by hand ([`client`]).

#![allow(dead_code)]

pub mod client;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
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
    /// Its gRPC address.
    pub addr: SocketAddr,
    /// Its dashboard's address, when it serves one (`--http-listen`).
    pub http: Option<SocketAddr>,
    /// The workers' token it was started with (`TILEPDB_TOKEN`), for the status call.
    token: Option<String>,
    log: Arc<Mutex<Vec<String>>>,
    /// The thread that collects the log, until the server's standard error closes.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Starts `command` (a `serve`) with its standard error collected, and waits for the
    /// address it binds, from the file it writes (`--address-file`).
    pub fn spawn(mut command: Command) -> Server {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let address_file = std::env::temp_dir().join(format!(
            "tilepdb-test-address-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&address_file);
        let token = command
            .get_envs()
            .find(|(k, _)| *k == "TILEPDB_TOKEN")
            .and_then(|(_, v)| v)
            .map(|v| v.to_string_lossy().into_owned());
        let mut child = command
            .arg("--address-file")
            .arg(&address_file)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let log2 = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                log2.lock().unwrap().push(line);
            }
        });
        let addr = wait_for_address(&address_file, &mut child, "grpc", &log);
        // The file is written whole: the dashboard's address is there if it is served.
        let http = read_address(&address_file, "http");
        let _ = std::fs::remove_file(&address_file);
        Server {
            child,
            addr,
            http,
            token,
            log,
            reader: Some(reader),
        }
    }

    /// The job's status as `tilepdb-coordinator status --json` prints it; `None` while the
    /// server does not answer.
    pub fn status(&self) -> Option<serde_json::Value> {
        let mut command = Command::new(coordinator_bin());
        command.args(["status", "--json", "--coordinator", &self.url()]);
        match &self.token {
            Some(token) => command.env("TILEPDB_TOKEN", token),
            None => command.env_remove("TILEPDB_TOKEN"),
        };
        let output = command.stderr(Stdio::null()).output().ok()?;
        if !output.status.success() {
            return None;
        }
        serde_json::from_slice(&output.stdout).ok()
    }

    /// Waits until the job's status satisfies `done` (`what` names it in the panic); the
    /// status then.
    pub fn wait_status(
        &self,
        what: &str,
        done: impl Fn(&serde_json::Value) -> bool,
        timeout: Duration,
    ) -> serde_json::Value {
        let until = Instant::now() + timeout;
        let mut last = None;
        loop {
            if let Some(status) = self.status() {
                if done(&status) {
                    return status;
                }
                last = Some(status);
            }
            if Instant::now() >= until {
                let log = self.log.lock().unwrap().join("\n");
                panic!("no status with {what} within {timeout:?}; last: {last:?}; log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the job is done: its status says so, or the server has exited successfully
    /// (it exits soon after the job is done unless it goes on serving).
    pub fn wait_job_done(&mut self, timeout: Duration) {
        let until = Instant::now() + timeout;
        loop {
            match self.child.try_wait().unwrap() {
                Some(status) if status.success() => return,
                Some(status) => {
                    let log = self.log.lock().unwrap().join("\n");
                    panic!("server failed: {status}; log:\n{log}");
                }
                None => {}
            }
            if self.status().is_some_and(|s| s["done"] == true) {
                return;
            }
            if Instant::now() >= until {
                let log = self.log.lock().unwrap().join("\n");
                panic!("the job was not done within {timeout:?}; log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the layer `depth` of table `table` is finished (the job is past it).
    pub fn wait_layer_done(&self, table: u64, depth: u64, timeout: Duration) -> serde_json::Value {
        self.wait_status(
            &format!("table {table} past layer {depth}"),
            |s| past_layer(s, table, depth),
            timeout,
        )
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

    /// The coordinator's exit status once it has exited, with its whole log collected (the
    /// lines it wrote last included); `None` while it runs.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().unwrap()?;
        if let Some(reader) = self.reader.take() {
            // The log is whole when its pipe closes; a process the coordinator started may
            // hold the pipe longer, so the wait is bounded.
            let until = Instant::now() + Duration::from_secs(10);
            while !reader.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if reader.is_finished() {
                reader.join().unwrap();
            }
        }
        Some(status)
    }

    /// Waits (`timeout` at most, then panics with the log) for the coordinator to exit; its
    /// exit status, with its whole log collected.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        self.wait_exit_or_show(timeout, String::new)
    }

    /// [`Server::wait_exit`], whose panic when the coordinator is still running after
    /// `timeout` also shows what `more` returns (called after the coordinator is killed).
    fn wait_exit_or_show(
        &mut self,
        timeout: Duration,
        more: impl FnOnce() -> String,
    ) -> ExitStatus {
        let until = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit() {
                return status;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                let log = self.log.lock().unwrap().join("\n");
                panic!(
                    "server still running after {timeout:?}; log:\n{log}{}",
                    more()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the coordinator to exit; asserts it succeeded. Its whole log.
    pub fn finish(self, timeout: Duration) -> Vec<String> {
        self.finish_or_show(timeout, String::new)
    }

    /// [`Server::finish`], whose panic when the coordinator is still running after
    /// `timeout` also shows what `more` returns (called after the coordinator is killed:
    /// the logs of the processes it waited for).
    pub fn finish_or_show(
        mut self,
        timeout: Duration,
        more: impl FnOnce() -> String,
    ) -> Vec<String> {
        let status = self.wait_exit_or_show(timeout, more);
        let log = self.log.lock().unwrap().clone();
        assert!(
            status.success(),
            "server failed: {status}; log:\n{}",
            log.join("\n")
        );
        log
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (a minute at most) for the address named `what` (`grpc` or `http`) in the address
/// file a server writes once it listens (`--address-file`); panics with the server's log if
/// it exits first.
pub fn wait_for_address(
    file: &Path,
    child: &mut Child,
    what: &str,
    log: &Mutex<Vec<String>>,
) -> SocketAddr {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(addr) = read_address(file, what) {
            return addr;
        }
        let exited = child.try_wait().unwrap();
        if exited.is_some() || Instant::now() > until {
            let log = log.lock().unwrap().join("\n");
            panic!(
                "no {what} address in {} ({exited:?}); log:\n{log}",
                file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The address named `what` in an address file, if the file is there.
pub fn read_address(file: &Path, what: &str) -> Option<SocketAddr> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|l| {
        let (name, addr) = l.split_once(' ')?;
        (name == what).then(|| addr.parse().ok())?
    })
}

/// Whether a status is past the layer `depth` of table `table` (the job is done, in a later
/// table, or expanding a deeper layer of it).
pub fn past_layer(status: &serde_json::Value, table: u64, depth: u64) -> bool {
    let at = |k: &str| status[k].as_u64().unwrap_or(0);
    status["done"].as_bool() == Some(true)
        || at("table") > table
        || (at("table") == table && at("depth") > depth)
}

/// Whether a status shows the job under way: a state found beyond the goal, a later table or
/// the job done (a coordinator answers before it has read its data directory).
pub fn under_way(status: &serde_json::Value) -> bool {
    status["states_found"].as_u64() > Some(1) || past_layer(status, 0, 0)
}
