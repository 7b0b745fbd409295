//! `tilepdb-solve fetch`, the program: killed half way through a download, it resumes when run
//! again; the set it fetched solves; a second fetch downloads nothing; bad input gets a clear
//! error. The tables are served by the coordinator's table service on a real socket, run in
//! this test's process (`coordinator/tests/fetch.rs` runs it as the coordinator program).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{BlankRule, Goal, Partition};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_coordinator::cluster::{ServeOptions, TableService, bind, serve_tables};

/// The token of the tables served by [`serve`].
pub const TOKEN: &str = "fetch-cli-token";

fn solve_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"));
    c.env("TILEPDB_TOKEN", TOKEN).env_remove("TILEPDB_CACHE");
    c
}

fn run(args: &[&str]) -> Output {
    solve_cmd().args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Serves the sets in `dir` (at `rate_limit` bytes per second per download, if given) with the
/// token [`TOKEN`], on 127.0.0.1 in this process; the URL.
pub fn serve(dir: &Path, rate_limit: Option<u64>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
            tx.send(format!("http://{addr}")).unwrap();
            let options = ServeOptions {
                token: Some(TOKEN.into()),
                tables: Some(TableService::new(dir, rate_limit)),
                ..ServeOptions::default()
            };
            serve_tables(listener, options).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| {
            if p.is_dir() {
                bytes_under(&p)
            } else {
                std::fs::metadata(&p).map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// A directory with the set of the named partition (blank-first goal) built in it, and the set.
fn served_set(
    partition: &str,
    rule: BlankRule,
    encoding: Encoding,
) -> (tempfile::TempDir, TableSet) {
    let served = tempfile::tempdir().unwrap();
    let partition = Partition::named(partition).unwrap();
    let (set, _) = open_or_build(
        served.path(),
        &partition,
        Goal::BlankFirst,
        rule,
        encoding,
        &BuildOptions::default(),
    )
    .unwrap();
    (served, set)
}

#[test]
fn a_killed_fetch_resumes_and_its_set_solves() {
    let (served, set) = served_set("15:5-5-5", BlankRule::Minimized, Encoding::Byte);
    let name = set
        .dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let total: u64 = set.manifest().tables.iter().map(|t| t.size).sum();
    let url = serve(served.path(), Some(256 << 10));
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let fetch = [
        "fetch", "--from", &url, "--set", &name, "--cache", cache_dir,
    ];

    // Killed (SIGKILL) once half of the set is on disk.
    let mut child = solve_cmd()
        .args(fetch)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while bytes_under(cache.path()) * 2 < total {
        assert!(Instant::now() < until, "the download does not progress");
        assert!(child.try_wait().unwrap().is_none(), "fetch ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = bytes_under(cache.path());
    assert!(kept < total, "the fetch finished before it was killed");
    let listed: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, [".partial"], "a partial set is visible");

    // Run again: it resumes, and says so.
    let out = run(&[&fetch[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (resumed, downloaded) = (
        report["resumed_bytes"].as_u64().unwrap(),
        report["downloaded_bytes"].as_u64().unwrap(),
    );
    assert!(
        resumed * 2 >= total && resumed + downloaded == total,
        "{report}"
    );
    assert_eq!(report["already_present"], false);

    // The fetched set solves; its directory is what plain `fetch` prints on stdout.
    let out = run(&fetch);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already in the cache"),
        "{}",
        stderr(&out)
    );
    let dir = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(dir, report["set_dir"].as_str().unwrap());
    let out = run(&[
        "solve",
        "--tables",
        &dir,
        "--reflect",
        "--json",
        "--state",
        "1 2 3 0 4 5 6 7 8 9 10 11 12 13 14 15",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let solved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(solved["results"][0]["length"], 3);

    // The listing names the set.
    let out = run(&["fetch", "--from", &url, "--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&name));
}

#[test]
fn bad_fetches_are_refused_clearly() {
    let refused = |args: &[&str], needle: &str| {
        let out = run(args);
        let text = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(!text.contains("panicked"), "{text}");
        assert!(text.contains(needle), "expected {needle:?} in {text}");
    };
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path().to_str().unwrap();
    refused(
        &[
            "fetch",
            "--from",
            "coordinator:7878",
            "--set",
            "x",
            "--cache",
            cache,
        ],
        "bad coordinator address",
    );
    // Port 1: nothing listens there.
    refused(
        &[
            "fetch",
            "--from",
            "http://127.0.0.1:1",
            "--set",
            "x",
            "--cache",
            cache,
        ],
        "cannot reach http://127.0.0.1:1",
    );
    refused(&["fetch", "--from", "http://127.0.0.1:1"], "--set");
    let url = serve(tempfile::tempdir().unwrap().path(), Some(1 << 20));
    refused(
        &[
            "fetch", "--from", &url, "--set", "4x4-7-8", "--cache", cache,
        ],
        "serves no set \"4x4-7-8\"; it serves: none",
    );
    let out = solve_cmd()
        .args(["fetch", "--from", &url, "--list"])
        .env("TILEPDB_TOKEN", "wrong")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Unauthenticated"), "{}", stderr(&out));
}

/// Raises one entry of every table of the set in `dir` by two (the same parity, still above the
/// Manhattan distance, so every check but the proof passes) and writes each file and the
/// manifest again with their checksums and histograms recomputed: a forged set that only a
/// proof tells from the real one.
fn forge(dir: &Path) {
    use tilepdb_common::table::{EncodedTable, Manifest, Pdb};
    let set = TableSet::open(dir).unwrap();
    let m = set.manifest().clone();
    let mut manifest = Manifest::new(
        m.partition.clone(),
        m.board,
        m.goal,
        m.blank_rule,
        m.encoding,
    );
    for entry in &m.tables {
        let path = dir.join(&entry.file);
        let (space, mut values) = {
            let pdb = Pdb::open(&path).unwrap();
            (pdb.space().clone(), pdb.decode_all().unwrap())
        };
        // The deepest entry: raising it keeps the heuristic's values plausible.
        let (at, _) = values.iter().enumerate().max_by_key(|&(_, v)| *v).unwrap();
        values[at] += 2;
        let forged = EncodedTable::new(&space, m.encoding, &values).unwrap();
        std::fs::remove_file(&path).unwrap();
        forged.write(&path).unwrap();
        manifest.push(&Pdb::open(&path).unwrap());
    }
    manifest.write(dir).unwrap();
    TableSet::open(dir).expect("the forged set passes every checksum");
}

/// A server that raises entries and recomputes every checksum: `fetch` proves the set, refuses
/// it and keeps nothing, so `solve` has no directory to use; with `--no-proof` the set is kept
/// and reported unproven, and the next fetch without it proves the copy and deletes it.
#[test]
fn a_forged_set_is_refused_by_its_proof_and_never_kept() {
    let (served, set) = served_set("8:4-4", BlankRule::Minimized, Encoding::Byte);
    let set_dir = set.dir().to_path_buf();
    let name = set_dir.file_name().unwrap().to_string_lossy().into_owned();
    drop(set);
    forge(&set_dir);
    let url = serve(served.path(), None);
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let fetch = [
        "fetch", "--from", &url, "--set", &name, "--cache", cache_dir, "--json",
    ];

    let out = run(&fetch);
    assert!(!out.status.success(), "a forged set was accepted");
    let err = stderr(&out);
    assert!(err.contains("failed its proof"), "{err}");
    assert!(err.contains("deleted, not kept"), "{err}");
    assert!(out.stdout.is_empty(), "a directory was printed");
    // Nothing but the partial area is left, and it holds no table.
    let kept: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert!(kept.is_empty(), "kept {kept:?}");
    let pdbs = walk_files(cache.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pdb"))
        .count();
    assert_eq!(pdbs, 0, "a table file was kept");

    // solve given the directory the fetch would have made: nothing to use, no length printed.
    let manifest = std::fs::read(set_dir.join("manifest.json")).unwrap();
    let would_be = cache
        .path()
        .join(format!("{name}-{:08x}", crc32fast::hash(&manifest)));
    let out = run(&[
        "solve",
        "--tables",
        would_be.to_str().unwrap(),
        "--json",
        "--state",
        "8 6 7 2 5 4 3 0 1",
    ]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"optimal\""));

    // --no-proof keeps it, and says it is unproven.
    let mut unproven = fetch.to_vec();
    unproven.push("--no-proof");
    let out = run(&unproven);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["proven"], false, "{report}");
    let dir = report["set_dir"].as_str().unwrap().to_string();
    assert!(Path::new(&dir).join("manifest.json").exists());

    // The next fetch, proving, finds the cached copy forged: refused and deleted.
    let out = run(&fetch);
    assert!(!out.status.success(), "the forged copy was accepted");
    assert!(
        stderr(&out).contains("failed its proof"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&dir).exists(), "the forged copy was kept");
}

/// Every file under `dir`.
fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = vec![];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// An honest set is proven by the fetch, and the report says so; a second fetch downloads and
/// proves nothing again.
#[test]
fn an_honest_set_is_fetched_proven() {
    let (served, set) = served_set("8:4-4", BlankRule::ZeroAware, Encoding::OneBit);
    let name = set
        .dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let url = serve(served.path(), None);
    let cache = tempfile::tempdir().unwrap();
    let fetch = [
        "fetch",
        "--from",
        &url,
        "--set",
        &name,
        "--cache",
        cache.path().to_str().unwrap(),
        "--json",
    ];
    let out = run(&fetch);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["proven"], true, "{report}");
    assert_eq!(report["already_present"], false, "{report}");
    let out = run(&fetch);
    assert!(out.status.success(), "{}", stderr(&out));
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["already_present"], true, "{again}");
    assert_eq!(again["proven"], true, "{again}");
    assert_eq!(again["proof_seconds"], 0.0, "{again}");
}
