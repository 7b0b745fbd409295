//! `prove_file FILE...`: opens each table file as a build opens the file it has just written
//! (`Pdb::open_released`: the payload's pages let go once their checksum is read) and runs
//! [`tilepdb_proof::verify_deep`] on it, so that `/usr/bin/time -v` measures a proof's own
//! memory as it is in a build, without building. Prints one line per file: the proof and the
//! entries per distance, or the error.

use std::process::ExitCode;

use tilepdb_common::table::Pdb;

fn main() -> ExitCode {
    tilepdb_common::allocator::keep_large_blocks_mapped();
    let mut failed = false;
    for path in std::env::args_os().skip(1) {
        let path = std::path::PathBuf::from(path);
        let proven = Pdb::open_released(&path)
            .map_err(|e| e.to_string())
            .and_then(|pdb| tilepdb_proof::verify_deep(&pdb).map_err(|e| e.to_string()));
        match proven {
            Ok(report) => println!(
                "{}: {} proven by {}, {:?} ({} unreached)",
                path.display(),
                report.entries,
                report.proof,
                report.decoded_histogram,
                report.decoded_unreached
            ),
            Err(e) => {
                println!("{}: {e}", path.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
