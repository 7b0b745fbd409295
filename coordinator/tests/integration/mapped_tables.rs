//! A table file truncated while a process has it mapped: the process says which file and
//! exits 1, instead of dying of SIGBUS (exit 135) without a word.
//!
//! The process is this test binary run again on one test ([`child_reads_its_table`]), which
//! opens the table, says so by a file, waits for the parent's file and then reads every
//! byte of the payload; the parent truncates the table in between.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tilepdb_common::table::{EncodedTable, Encoding, Pdb};
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};

const CHILD: &str = "TILEPDB_TEST_MAPPED_TABLE";

/// Waits (at most a minute) for `path` to exist.
fn wait_for_file(path: &Path) {
    let until = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < until, "no {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A table of tiles 1, 2, 3 on 4x4 with the blank ignored (3360 entries, a byte each).
fn write_table(dir: &Path) -> PathBuf {
    let board: Board = "4x4".parse().unwrap();
    let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
    let values: Vec<u8> = tilepdb_common::table::walk::manhattan_by_rank(&space);
    let path = dir.join("pattern-1-2-3.pdb");
    EncodedTable::new(&space, Encoding::Byte, &values)
        .unwrap()
        .write(&path)
        .unwrap();
    path
}

/// The child: runs only when the parent sets [`CHILD`] to its scratch directory.
#[test]
fn child_reads_its_table() {
    let Some(dir) = std::env::var_os(CHILD).map(PathBuf::from) else {
        return;
    };
    let pdb = Pdb::open(dir.join("pattern-1-2-3.pdb")).unwrap();
    std::fs::write(dir.join("mapped"), b"").unwrap();
    wait_for_file(&dir.join("go"));
    let sum: u64 = pdb.payload().iter().map(|&b| u64::from(b)).sum();
    println!("read {sum}");
}

#[test]
fn a_table_truncated_while_mapped_is_named_and_the_process_exits_1() {
    let dir = crate::server::scratch("mapped-truncated");
    let table = write_table(&dir);
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "mapped_tables::child_reads_its_table",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&dir.join("mapped"));
    // The header's page stays; the payload's pages are gone.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap()
        .set_len(4096)
        .unwrap();
    std::fs::write(dir.join("go"), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {stderr}", out.status);
    assert!(
        stderr.contains(&format!("error: the table file {}", table.display()))
            && stderr.contains("changed while mapped"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
