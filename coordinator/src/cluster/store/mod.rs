//! The job's data directory: the checkpointed state array and depth bytes of the table being
//! built (memory-mapped files), and the job's checkpoint that says how far the job got.
//!
//! ```text
//! <data-dir>/lock              held (File::try_lock) by the running coordinator
//! <data-dir>/checkpoint.json   job, tables written, table in progress and its next layer
//! <data-dir>/table-<i>.codes   the two-bit state array of table i
//! <data-dir>/table-<i>.depths  its depth bytes
//! ```
//!
//! The files are allocated in full when a table starts (so a full disk shows up there, as a
//! clear error, and never as a fault while writing a mapping). [`Checkpoint`] owns the order
//! of the writes: after each layer the mappings are flushed and then the checkpoint is
//! replaced atomically ([`write_atomically`]: write, fsync, rename, fsync of the directory),
//! so a checkpoint never names a layer whose data are not on disk; a table's arrays are
//! removed only after the checkpoint says it was written. (A set's `manifest.json`, in the
//! output, is another file: [`tilepdb_common::table::Manifest`].)
//!
//! Nothing read back is trusted. The checkpoint carries a checksum of its own fields and,
//! for the table in progress, checksums of both arrays as they were when the layer was done
//! (`array_checksums`); on resume every field is range-checked and the checksums are taken
//! again over what the layer being redone cannot have changed yet (its next-layer codes and
//! depths read as unseen). A second checksum of the state array also reads the layer's current
//! states as done: when only that one matches, the coordinator stopped while finishing the
//! layer (which retires them), after its expansion was complete, and the layer is finished
//! again rather than expanded again. An edited or damaged checkpoint is refused with a message that
//! names the file and what to do; damaged arrays are repaired by starting their table again
//! from its goal (with a warning naming the file). File sizes are checked before mapping and
//! after every layer, so an outside truncation is an error rather than a fault.

//!
//! * this module: the directory, its lock, its files and their mappings;
//! * `checkpoint`: the checkpoint's fields, their checks, and [`Checkpoint`], which owns the
//!   order of the writes;
//! * `checksum`: the checksums of the array files as a layer found them.

mod checkpoint;
mod checksum;
#[cfg(test)]
mod tests;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use memmap2::MmapMut;
use tilepdb_common::{StateCodes, StateSpace};

use crate::engine::DepthBytes;
use crate::engine::TableArrays;
use crate::engine::units::StateIndex;
use crate::error::{Error, Result};

pub use checkpoint::{CHECKPOINT_FORMAT, Checkpoint, JobCheckpoint, SEARCH_INDEX, TableCheckpoint};
use checksum::{ArrayKind, array_checksums};

/// Largest checkpoint file read (a real one is a few hundred bytes).
const MAX_CHECKPOINT_BYTES: u64 = 1 << 20;

/// An open data directory, locked against a second coordinator.
pub struct DataDir {
    path: PathBuf,
    _lock: File,
}

impl DataDir {
    /// Opens (creating it if needed) and locks the data directory.
    pub fn open(path: &Path) -> Result<DataDir> {
        if path.exists() && !path.is_dir() {
            return Err(Error::DataDir {
                path: path.to_path_buf(),
                reason: "it is a file, not a directory: name a directory (it is created if \
                         missing)"
                    .into(),
            });
        }
        fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        let lock_path = path.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        // An advisory lock (flock on Unix, LockFileEx on Windows), released when the file is.
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(Error::DataDir {
                    path: path.to_path_buf(),
                    reason: "another coordinator is using it (its lock file is held)".into(),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        Ok(DataDir {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn checkpoint_path(&self) -> PathBuf {
        self.path.join("checkpoint.json")
    }

    /// The file of table `table`'s state codes.
    pub fn codes_path(&self, table: usize) -> PathBuf {
        self.path.join(format!("table-{table}.codes"))
    }

    /// The file of table `table`'s depths.
    pub fn depths_path(&self, table: usize) -> PathBuf {
        self.path.join(format!("table-{table}.depths"))
    }

    /// The checkpoint, or `None` in a new directory. (A directory of an earlier version,
    /// whose checkpoint was called `manifest.json`, is read too.)
    pub fn read_checkpoint(&self) -> Result<Option<JobCheckpoint>> {
        let mut path = self.checkpoint_path();
        if !path.exists() && self.path.join("manifest.json").exists() {
            path = self.path.join("manifest.json");
        }
        let damaged = |reason: String| Error::DataDir {
            path: path.clone(),
            reason: format!(
                "{reason}; remove the data directory {} to start the job over",
                self.path.display()
            ),
        };
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        if !meta.is_file() || meta.len() > MAX_CHECKPOINT_BYTES {
            return Err(damaged(format!(
                "not a checkpoint (a regular file of at most {MAX_CHECKPOINT_BYTES} bytes)"
            )));
        }
        let mut text = String::new();
        File::open(&path)
            .and_then(|f| f.take(MAX_CHECKPOINT_BYTES).read_to_string(&mut text))
            .map_err(|e| Error::io(&path, e))?;
        let checkpoint: JobCheckpoint = serde_json::from_str(&text)
            .map_err(|e| damaged(format!("unreadable checkpoint: {e}")))?;
        if checkpoint.format == 1 {
            return Err(Error::DataDir {
                path,
                reason: format!(
                    "a checkpoint of format 1, written by an earlier version on the cell index; \
                     finish the job with that version, or remove the directory {} to start \
                     over (the tables written are kept in the output)",
                    self.path.display()
                ),
            });
        }
        if checkpoint.format != CHECKPOINT_FORMAT {
            return Err(damaged(format!(
                "checkpoint format {} (this coordinator reads {CHECKPOINT_FORMAT})",
                checkpoint.format
            )));
        }
        if checkpoint.checksum != checkpoint.own_checksum() {
            return Err(damaged(
                "the checkpoint does not match its checksum: it was edited or damaged".into(),
            ));
        }
        Ok(Some(checkpoint))
    }

    /// Replaces the checkpoint atomically, and durably if `sync`.
    pub fn write_checkpoint(&self, checkpoint: &JobCheckpoint, sync: bool) -> Result<()> {
        let sealed = checkpoint.clone().sealed();
        let mut text = serde_json::to_string_pretty(&sealed).expect("a checkpoint serializes");
        text.push('\n');
        write_atomically(&self.checkpoint_path(), text.as_bytes(), sync)?;
        let legacy = self.path.join("manifest.json");
        if legacy.exists() {
            let _ = fs::remove_file(legacy);
        }
        Ok(())
    }

    /// The arrays of table `table`: new ones (all unseen, files allocated in full) if `fresh`,
    /// else the files already there (checked for size).
    /// They are sized by `index` ([`StateIndex::states`], [`StateIndex::depth_entries`]).
    pub fn arrays(
        &self,
        table: usize,
        space: &StateSpace,
        index: &StateIndex,
        fresh: bool,
    ) -> Result<TableArrays> {
        let (states, entries) = (index.states(space), index.depth_entries(space));
        let codes_bytes = StateCodes::file_bytes(states);
        let codes_map = self.map(&self.codes_path(table), codes_bytes, fresh)?;
        let depths_map = self.map(&self.depths_path(table), entries, fresh)?;
        Ok(TableArrays {
            codes: StateCodes::from_mmap(codes_map, states).expect("mapping of the size"),
            depths: DepthBytes::from_mmap(depths_map, entries).expect("mapping of the size"),
            store_is_state: false,
        })
    }

    #[expect(
        clippy::unused_self,
        reason = "a method of the directory, as the paths it maps"
    )]
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

    /// Checks that both array files of table `table` still have their sizes (nothing
    /// outside truncated or grew them while mapped).
    pub fn check_sizes(&self, table: usize, states: u64, depth_entries: u64) -> Result<()> {
        for (path, bytes) in [
            (self.codes_path(table), StateCodes::file_bytes(states)),
            (self.depths_path(table), depth_entries),
        ] {
            let len = fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
            if len != bytes {
                return Err(Error::DataDir {
                    path,
                    reason: format!(
                        "{len} bytes where the job needs {bytes}: something other than this \
                         coordinator changed it; remove the data directory {} to start over",
                        self.path.display()
                    ),
                });
            }
        }
        Ok(())
    }

    /// The checksums of table `table`'s arrays as the layer `depth` found them
    /// (`array_checksums`).
    fn checksums(&self, table: usize, depth: u32) -> Result<ArrayChecksums> {
        let codes = self.codes_path(table);
        let depths = self.depths_path(table);
        let (c, d) = rayon::join(
            || array_checksums(&codes, [ArrayKind::Codes, ArrayKind::FinishedCodes], depth),
            || array_checksums(&depths, [ArrayKind::Depths], depth),
        );
        let [codes_checksum, finished_codes] = c.map_err(|e| Error::io(&codes, e))?;
        let [depths_checksum] = d.map_err(|e| Error::io(&depths, e))?;
        Ok(ArrayChecksums {
            codes: codes_checksum,
            finished_codes,
            depths: depths_checksum,
        })
    }

    /// Removes the arrays of a table that has been written.
    pub fn remove_arrays(&self, table: usize) {
        let _ = fs::remove_file(self.codes_path(table));
        let _ = fs::remove_file(self.depths_path(table));
    }
}

/// The checksums of a table's arrays as a layer found them.
struct ArrayChecksums {
    /// Of the state array.
    codes: String,
    /// Of the state array with the layer's current states read as done.
    finished_codes: String,
    /// Of the depth bytes.
    depths: String,
}

/// Replaces `path` with `bytes` atomically (a temporary file renamed over it), and durably
/// if `sync` (fsync of the file, then of its directory).
pub fn write_atomically(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let tmp = path.with_file_name(name);
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        if sync {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            File::open(dir.unwrap_or(Path::new(".")))?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// Reserves the blocks of the whole file, so that writing its mapping later cannot hit a full
/// disk (which would kill the process with SIGBUS). Linux only (`posix_fallocate`): elsewhere
/// nothing is reserved and a full disk is found when the mapping is written.
#[cfg(not(target_os = "linux"))]
fn allocate(_file: &File, _bytes: u64) -> std::io::Result<()> {
    Ok(())
}

/// Reserves the blocks of the whole file, so that writing its mapping later cannot hit a full
/// disk (which would kill the process with SIGBUS).
#[cfg(target_os = "linux")]
fn allocate(file: &File, bytes: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: posix_fallocate on a file descriptor we own.
    let rc = unsafe {
        libc::posix_fallocate(
            file.as_raw_fd(),
            0,
            libc::off_t::try_from(bytes).unwrap_or(libc::off_t::MAX),
        )
    };
    match rc {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => {
            tracing::warn!("the file system cannot reserve space; a full disk will be found late");
            Ok(())
        }
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}
