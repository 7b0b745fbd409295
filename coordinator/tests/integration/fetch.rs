//! Table downloads from a real coordinator process on 127.0.0.1 (`serve --no-build`, and
//! `serve --keep-serving` after a job), fetched with the solver's library (the code behind
//! `tilepdb-solve fetch`): a transfer cut half way resumes, a byte corrupted on the server
//! is refused and nothing is kept, a second fetch downloads nothing, a damaged cached copy
//! is fetched again, and bad requests get the right status.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::server::{Server, coordinator_bin, scratch, serve_job, single_machine};
use tilepdb_common::table::TableSet;
use tilepdb_common::wire::connect::Endpoint;
use tilepdb_common::wire::proto::DownloadRequest;
use tilepdb_common::wire::proto::tables_client::TablesClient;
use tilepdb_solver::fetch::{fetch_set, list_sets};

const TOKEN: &str = "fetch-test-token";
const JOB: [&str; 4] = ["--puzzle", "15", "--partition", "15:5-5-5"];
const SET: &str = "4x4-5-5-5-minimized-blank-first";

/// `serve --no-build` of the sets in `out`.
fn serve_sets(out: &Path, extra: &[&str]) -> Server {
    let mut command = Command::new(coordinator_bin());
    command
        .args(["serve", "--no-build", "--listen", "127.0.0.1:0", "--out"])
        .arg(out)
        .args(extra)
        .env("TILEPDB_TOKEN", TOKEN);
    Server::spawn(command)
}

fn remote(server: &Server) -> Endpoint {
    Endpoint {
        address: server.url(),
        token: Some(TOKEN.into()),
        ..Endpoint::default()
    }
}

/// The files of a set directory, by name, without the manifest.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Names in `dir` (hidden ones too).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        total += if p.is_dir() {
            bytes_under(&p)
        } else {
            std::fs::metadata(&p).unwrap().len()
        };
    }
    total
}

fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

fn downloads_logged(server: &Server) -> usize {
    server.lines(&["download", "set="]).len()
}

#[test]
fn a_cut_fetch_resumes_corruption_is_refused_and_a_second_fetch_is_a_no_op() {
    let dir = scratch("resume");
    let served = dir.join("served");
    single_machine(&JOB, &served);
    let set_dir = served.join(SET);
    let cache = dir.join("cache");

    // A slow coordinator (256 KiB/s), killed once half of the set has arrived.
    let mut slow = serve_sets(&served, &["--download-limit", "256K"]);
    let (half, at_half) = mpsc::channel();
    let fetch = {
        let (remote, cache) = (remote(&slow), cache.clone());
        std::thread::spawn(move || {
            fetch_set(&remote, SET, &cache, |p| {
                if p.bytes * 2 >= p.total {
                    let _ = half.send(());
                }
            })
        })
    };
    at_half
        .recv_timeout(Duration::from_secs(60))
        .expect("half of the set arrives");
    slow.child.kill().unwrap();
    slow.child.wait().unwrap();
    let error = fetch.join().unwrap().unwrap_err().to_string();
    assert!(
        error.contains("interrupted") && error.contains("run the same fetch again"),
        "{error}"
    );
    // Nothing that looks like a set: only the download in progress.
    assert_eq!(names(&cache), [".partial"]);
    let kept = bytes_under(&cache.join(".partial"));
    let total: u64 = files(&set_dir)
        .iter()
        .filter(|(n, _)| {
            std::path::Path::new(n)
                .extension()
                .is_some_and(|e| e == "pdb")
        })
        .map(|(_, b)| b.len() as u64)
        .sum();
    assert!(kept > 0 && kept < total, "kept {kept} of {total}");

    // The coordinator again (another port): the fetch resumes where it stopped.
    let server = serve_sets(&served, &[]);
    let report = fetch_set(&remote(&server), SET, &cache, |_| {}).unwrap();
    assert!(!report.already_present);
    assert_eq!(report.bytes, total);
    assert_eq!(report.resumed, kept, "{report:?}");
    assert_eq!(report.resumed + report.downloaded, total);
    assert_eq!(
        files(&report.dir),
        files(&set_dir),
        "the fetched set differs"
    );
    let set = TableSet::open(&report.dir).unwrap();
    assert_eq!(set.tables().len(), 3);
    assert_eq!(
        names(&cache.join(".partial")).len(),
        1,
        "only the lock file is left"
    );

    // A byte of a table corrupted on the coordinator's disk: refused, nothing kept.
    let table = set_dir.join("pattern-1-2-3-6-7.pdb");
    assert!(table.is_file());
    flip_byte(&table, 4096 + 12_345);
    let cache2 = dir.join("cache2");
    let error = fetch_set(&remote(&server), SET, &cache2, |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("failed its check") && error.contains("deleted"),
        "{error}"
    );
    assert_eq!(names(&cache2), [".partial"]);
    assert_eq!(bytes_under(&cache2), 0, "a corrupt download was kept");
    flip_byte(&table, 4096 + 12_345);

    // The same set again: checked in the cache, nothing downloaded.
    let before = downloads_logged(&server);
    let again = fetch_set(&remote(&server), SET, &cache, |_| {}).unwrap();
    assert!(again.already_present);
    assert_eq!((again.downloaded, again.resumed), (0, 0));
    assert_eq!(again.dir, report.dir);
    assert_eq!(
        downloads_logged(&server),
        before,
        "a second fetch downloaded"
    );

    // A cached copy damaged since: found out, and fetched again in full.
    flip_byte(&report.dir.join("pattern-4-5-8-9-12.pdb"), 5000);
    let repaired = fetch_set(&remote(&server), SET, &cache, |_| {}).unwrap();
    assert!(!repaired.already_present);
    assert_eq!(repaired.downloaded, total);
    assert_eq!(files(&repaired.dir), files(&set_dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_coordinator_keeps_serving_the_tables_of_its_job() {
    let dir = scratch("keep");
    let mut command = serve_job(&JOB, &dir);
    command
        .args([
            "--listen",
            "127.0.0.1:0",
            "--keep-serving",
            "--linger",
            "1",
            "--no-sync",
        ])
        .env("TILEPDB_TOKEN", TOKEN);
    let mut coordinator = Server::spawn(command);
    let worker = Command::new(coordinator_bin())
        .args([
            "worker",
            "--coordinator",
            &coordinator.url(),
            "--threads",
            "2",
        ])
        .env("TILEPDB_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(worker.success());
    coordinator.wait_status(
        "the job done",
        |s| s["done"] == true,
        Duration::from_secs(60),
    );
    let remote = remote(&coordinator);
    let sets = list_sets(&remote).unwrap();
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].name, SET);
    assert_eq!(sets[0].files.len(), 3);
    let report = fetch_set(&remote, SET, &dir.join("cache"), |_| {}).unwrap();
    assert_eq!(files(&report.dir), files(&dir.join("out").join(SET)));
    // Still serving until told to stop; then it exits cleanly.
    assert!(coordinator.child.try_wait().unwrap().is_none());
    let pid = coordinator.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    coordinator.finish(Duration::from_secs(30));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_requests_are_refused_with_the_right_status() {
    let dir = scratch("refuse");
    let served = dir.join("served");
    single_machine(&JOB, &served);
    let server = serve_sets(&served, &[]);

    // The wrong token.
    let wrong = Endpoint {
        token: Some("not-the-token".into()),
        ..remote(&server)
    };
    let error = list_sets(&wrong).unwrap_err().to_string();
    assert!(error.contains("Unauthenticated"), "{error}");
    // An unknown set: the error names the served ones.
    let error = fetch_set(
        &remote(&server),
        "4x4-7-8-minimized-blank-first",
        &dir,
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("serves no set") && error.contains(SET),
        "{error}"
    );

    let sets = list_sets(&remote(&server)).unwrap();
    let file = &sets[0].files[0];
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut client = TablesClient::connect(server.url()).await.unwrap();
        let request = |set: &str, name: &str, offset: u64, checksum: &str| {
            let mut r = tonic::Request::new(DownloadRequest {
                set: set.into(),
                file: name.into(),
                offset,
                checksum: checksum.into(),
            });
            r.metadata_mut()
                .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
            r
        };
        let cases = [
            (
                request(SET, &file.name, file.size + 1, ""),
                tonic::Code::OutOfRange,
            ),
            (
                request(SET, &file.name, 0, "crc32:00000000"),
                tonic::Code::FailedPrecondition,
            ),
            (request(SET, "manifest.json", 0, ""), tonic::Code::NotFound),
            (
                request(SET, "../../etc/passwd", 0, ""),
                tonic::Code::NotFound,
            ),
            (request("..", &file.name, 0, ""), tonic::Code::NotFound),
            (request("nope", &file.name, 0, ""), tonic::Code::NotFound),
        ];
        for (r, code) in cases {
            let what = format!("{:?}", r.get_ref());
            match client.download(r).await {
                Err(status) => assert_eq!(status.code(), code, "{what}: {status:?}"),
                Ok(_) => panic!("{what} was served"),
            }
        }
        // A resumed download from the last byte: one chunk of one byte.
        let mut stream = client
            .download(request(SET, &file.name, file.size - 1, &file.checksum))
            .await
            .unwrap()
            .into_inner();
        let chunk = stream.message().await.unwrap().unwrap();
        assert_eq!((chunk.offset, chunk.decompressed_size), (file.size - 1, 1));
        assert!(stream.message().await.unwrap().is_none());
    });
    let _ = std::fs::remove_dir_all(&dir);
}
