//! The job's data directory: the checkpointed state array and depth bytes of the table being
//! built (memory-mapped files), and a small manifest that says how far the job got.
//!
//! ```text
//! <data-dir>/lock            held (flock) by the running coordinator
//! <data-dir>/manifest.json   job, tables written, table in progress and its next layer
//! <data-dir>/table-<i>.codes the two-bit state array of table i
//! <data-dir>/table-<i>.depths its depth bytes
//! ```
//!
//! The files are allocated in full when a table starts (so a full disk shows up there, as a
//! clear error, and never as a fault while writing a mapping). After each layer the mappings
//! are flushed and then the manifest is replaced atomically (write, fsync, rename, fsync of
//! the directory): a manifest never names a layer whose data are not on disk.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;
use serde::{Deserialize, Serialize};
use tilepdb_common::{StateCodes, StateSpace};

use crate::engine::{SearchProgress, TableArrays};
use crate::error::{Error, Result};
use crate::merge::DepthBytes;

/// Version of the manifest's layout.
pub const MANIFEST_FORMAT: u32 = 1;

/// What the data directory says about the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The job's identity: a coordinator started with another job refuses the directory.
    pub job_id: String,
    /// Tables written to the output, in order.
    pub tables_written: u32,
    /// The table in progress, if its arrays exist.
    pub table: Option<TableCheckpoint>,
}

/// How far the search of the table in progress got.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableCheckpoint {
    /// The table's index in the set.
    pub table: u32,
    /// Its search.
    #[serde(flatten)]
    pub progress: SearchProgress,
}

/// An open data directory, locked against a second coordinator.
pub struct DataDir {
    path: PathBuf,
    _lock: File,
}

impl DataDir {
    /// Opens (creating it if needed) and locks the data directory.
    pub fn open(path: &Path) -> Result<DataDir> {
        fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        let lock_path = path.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Error::DataDir {
                path: path.to_path_buf(),
                reason: "another coordinator is using it (its lock file is held)".into(),
            });
        }
        Ok(DataDir {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn manifest_path(&self) -> PathBuf {
        self.path.join("manifest.json")
    }

    pub fn codes_path(&self, table: usize) -> PathBuf {
        self.path.join(format!("table-{table}.codes"))
    }

    pub fn depths_path(&self, table: usize) -> PathBuf {
        self.path.join(format!("table-{table}.depths"))
    }

    /// The manifest, or `None` in a new directory.
    pub fn read_manifest(&self) -> Result<Option<Manifest>> {
        let path = self.manifest_path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| Error::DataDir {
            path: path.clone(),
            reason: format!("unreadable manifest: {e}"),
        })?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(Error::DataDir {
                path,
                reason: format!(
                    "manifest format {} (this coordinator reads {MANIFEST_FORMAT})",
                    manifest.format
                ),
            });
        }
        Ok(Some(manifest))
    }

    /// Replaces the manifest atomically (a rename), and durably if `sync` (fsync of the file
    /// and the directory).
    pub fn write_manifest(&self, manifest: &Manifest, sync: bool) -> Result<()> {
        let path = self.manifest_path();
        let tmp = self.path.join("manifest.json.partial");
        let text = serde_json::to_string_pretty(manifest).expect("a manifest serializes");
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.write_all(b"\n")?;
            if sync {
                f.sync_all()?;
            }
            fs::rename(&tmp, &path)?;
            if sync {
                File::open(&self.path)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io(&path, e)
        })
    }

    /// The arrays of table `table`: new ones (all unseen, files allocated in full) if `fresh`,
    /// else the files already there (checked for size).
    pub fn arrays(&self, table: usize, space: &StateSpace, fresh: bool) -> Result<TableArrays> {
        let codes_bytes = StateCodes::file_bytes(space.states());
        let codes_map = self.map(&self.codes_path(table), codes_bytes, fresh)?;
        let depths_map = self.map(&self.depths_path(table), space.entries(), fresh)?;
        Ok(TableArrays {
            codes: StateCodes::from_mmap(codes_map, space.states()).expect("mapping of the size"),
            depths: DepthBytes::from_mmap(depths_map, space.entries())
                .expect("mapping of the size"),
        })
    }

    fn map(&self, path: &Path, bytes: u64, fresh: bool) -> Result<MmapMut> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(fresh)
            .truncate(fresh)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        if fresh {
            file.set_len(bytes).map_err(|e| Error::io(path, e))?;
            allocate(&file, bytes).map_err(|e| Error::io(path, e))?;
        } else {
            let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
            if len != bytes {
                return Err(Error::DataDir {
                    path: path.to_path_buf(),
                    reason: format!(
                        "{len} bytes where the job needs {bytes}: damaged; remove the data directory to start over"
                    ),
                });
            }
        }
        if bytes == 0 {
            return MmapMut::map_anon(1).map_err(|e| Error::io(path, e));
        }
        // SAFETY: the file is ours (the directory is locked) and keeps its size while mapped.
        unsafe { MmapMut::map_mut(&file) }.map_err(|e| Error::io(path, e))
    }

    /// Writes both mappings of table `table`'s arrays to disk and waits.
    pub fn flush_arrays(&self, table: usize, arrays: &TableArrays) -> Result<()> {
        arrays
            .codes
            .flush()
            .map_err(|e| Error::io(self.codes_path(table), e))?;
        arrays
            .depths
            .flush()
            .map_err(|e| Error::io(self.depths_path(table), e))
    }

    /// Removes the arrays of a table that has been written.
    pub fn remove_arrays(&self, table: usize) {
        let _ = fs::remove_file(self.codes_path(table));
        let _ = fs::remove_file(self.depths_path(table));
    }
}

/// Reserves the blocks of the whole file, so that writing its mapping later cannot hit a full
/// disk (which would kill the process with SIGBUS).
fn allocate(file: &File, bytes: u64) -> std::io::Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: posix_fallocate on a file descriptor we own.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, bytes as libc::off_t) };
    match rc {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => {
            tracing::warn!("the file system cannot reserve space; a full disk will be found late");
            Ok(())
        }
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::{BlankRule, Board, Goal, Pattern};

    #[test]
    fn arrays_and_manifest_survive_a_reopen() {
        let dir = std::env::temp_dir().join(format!("tilepdb-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let board: Board = "3x3".parse().unwrap();
        let space = StateSpace::new(
            board,
            Goal::BlankFirst,
            Pattern::new(board, vec![1, 2]).unwrap(),
            BlankRule::Minimized,
        )
        .unwrap();
        {
            let data = DataDir::open(&dir).unwrap();
            assert!(DataDir::open(&dir).is_err(), "locked");
            assert_eq!(data.read_manifest().unwrap(), None);
            let arrays = data.arrays(0, &space, true).unwrap();
            arrays.codes.try_mark(17, 2);
            arrays.depths.record_first(3, 4);
            data.flush_arrays(0, &arrays).unwrap();
            let m = Manifest {
                format: MANIFEST_FORMAT,
                job_id: "j".into(),
                tables_written: 0,
                table: Some(TableCheckpoint::default()),
            };
            data.write_manifest(&m, true).unwrap();
        }
        let data = DataDir::open(&dir).unwrap();
        assert_eq!(data.read_manifest().unwrap().unwrap().job_id, "j");
        let arrays = data.arrays(0, &space, false).unwrap();
        assert_eq!(arrays.codes.get(17), 2);
        assert_eq!(arrays.depths.get(3), 5);
        let _ = fs::remove_dir_all(&dir);
    }
}
