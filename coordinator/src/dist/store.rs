//! The job's data directory: the checkpointed state array and depth bytes of the table being
//! built (memory-mapped files), and the job's checkpoint that says how far the job got.
//!
//! ```text
//! <data-dir>/lock              held (flock) by the running coordinator
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

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;
use serde::{Deserialize, Serialize};
use tilepdb_common::{StateCodes, StateSpace};

use crate::engine::units::StateIndex;
use crate::engine::{SearchProgress, TableArrays};
use crate::error::{Error, Result};
use crate::merge::DepthBytes;

/// Version of the checkpoint's layout. Format 2 records the state index
/// ([`JobCheckpoint::search_index`]); format 1 (earlier versions) was always on the cell index.
pub const CHECKPOINT_FORMAT: u32 = 2;

/// The state index the job's arrays are on, as the checkpoint names it.
pub const SEARCH_INDEX: &str = tilepdb_common::wire::SEARCH_INDEX;

fn cell_index() -> String {
    "cell".into()
}

/// What the data directory says about the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCheckpoint {
    /// [`CHECKPOINT_FORMAT`].
    pub format: u32,
    /// The job's identity: a coordinator started with another job refuses the directory.
    pub job_id: String,
    /// The state index the arrays are on ([`SEARCH_INDEX`]; `cell` in format 1).
    #[serde(default = "cell_index")]
    pub search_index: String,
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

    fn checkpoint_path(&self) -> PathBuf {
        self.path.join("checkpoint.json")
    }

    pub fn codes_path(&self, table: usize) -> PathBuf {
        self.path.join(format!("table-{table}.codes"))
    }

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
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let checkpoint: JobCheckpoint =
            serde_json::from_str(&text).map_err(|e| Error::DataDir {
                path: path.clone(),
                reason: format!("unreadable checkpoint: {e}"),
            })?;
        if checkpoint.format != CHECKPOINT_FORMAT && checkpoint.format != 1 {
            return Err(Error::DataDir {
                path,
                reason: format!(
                    "checkpoint format {} (this coordinator reads 1 and {CHECKPOINT_FORMAT})",
                    checkpoint.format
                ),
            });
        }
        Ok(Some(checkpoint))
    }

    /// Replaces the checkpoint atomically, and durably if `sync`.
    pub fn write_checkpoint(&self, checkpoint: &JobCheckpoint, sync: bool) -> Result<()> {
        let mut text = serde_json::to_string_pretty(checkpoint).expect("a checkpoint serializes");
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

/// The job's checkpoint in its data directory, and the order of its writes: a checkpoint
/// never names data that are not on disk, and arrays go only once the checkpoint no longer
/// needs them.
pub struct Checkpoint<'d> {
    dir: &'d DataDir,
    state: JobCheckpoint,
    sync: bool,
}

impl<'d> Checkpoint<'d> {
    /// The checkpoint of job `job_id` in `dir` (a new one in a new directory); refuses a
    /// directory of another job. `sync`: flush the arrays and sync the checkpoint after every
    /// layer. The arrays of tables already written are removed (a kill may have come
    /// between the checkpoint and their removal).
    pub fn open(dir: &'d DataDir, job_id: &str, sync: bool) -> Result<Checkpoint<'d>> {
        let state = match dir.read_checkpoint()? {
            Some(c) if c.job_id != job_id => {
                return Err(Error::DataDir {
                    path: dir.path().to_path_buf(),
                    reason: format!(
                        "it holds job {}, not {job_id}; use another --data-dir, or remove it to start over",
                        c.job_id
                    ),
                });
            }
            Some(c) if c.search_index != SEARCH_INDEX && c.table.is_some() => {
                return Err(Error::DataDir {
                    path: dir.path().to_path_buf(),
                    reason: format!(
                        "its table in progress was searched on the {} index by an earlier \
                         version, and this coordinator searches on the {SEARCH_INDEX} index; \
                         finish the job with that version, or remove the directory to start \
                         over (the tables written are kept in the output)",
                        c.search_index
                    ),
                });
            }
            Some(mut c) => {
                // Nothing in progress: what follows is on this coordinator's index.
                c.format = CHECKPOINT_FORMAT;
                c.search_index = SEARCH_INDEX.to_string();
                tracing::info!(
                    job = %job_id,
                    tables_written = c.tables_written,
                    table = ?c.table.as_ref().map(|t| t.table),
                    next_depth = ?c.table.as_ref().map(|t| t.progress.next_depth),
                    "resuming from the data directory"
                );
                c
            }
            None => {
                let c = JobCheckpoint {
                    format: CHECKPOINT_FORMAT,
                    job_id: job_id.to_string(),
                    search_index: SEARCH_INDEX.to_string(),
                    tables_written: 0,
                    table: None,
                };
                dir.write_checkpoint(&c, true)?;
                c
            }
        };
        for table in 0..state.tables_written as usize {
            dir.remove_arrays(table);
        }
        Ok(Checkpoint { dir, state, sync })
    }

    /// Tables written to the output, in order.
    pub fn tables_written(&self) -> usize {
        self.state.tables_written as usize
    }

    /// What the checkpoint holds.
    pub fn state(&self) -> &JobCheckpoint {
        &self.state
    }

    /// The arrays and search progress of table `table`: those of the checkpoint if it is the
    /// table in progress, else new arrays with the goal marked, flushed, then checkpointed.
    pub fn begin_table(
        &mut self,
        table: usize,
        space: &StateSpace,
        index: &StateIndex,
    ) -> Result<(TableArrays, SearchProgress)> {
        if let Some(c) = self
            .state
            .table
            .clone()
            .filter(|c| c.table as usize == table)
        {
            return Ok((self.dir.arrays(table, space, index, false)?, c.progress));
        }
        let arrays = self.dir.arrays(table, space, index, true)?;
        arrays.mark_goal(space, index);
        self.dir.flush_arrays(table, &arrays)?;
        let progress = SearchProgress::start();
        self.state.table = Some(TableCheckpoint {
            table: table as u32,
            progress: progress.clone(),
        });
        self.dir.write_checkpoint(&self.state, self.sync)?;
        Ok((arrays, progress))
    }

    /// A layer of table `table` is finished: flush its arrays (if syncing), then checkpoint
    /// `progress`.
    pub fn layer_done(
        &mut self,
        table: usize,
        arrays: &TableArrays,
        progress: &SearchProgress,
    ) -> Result<()> {
        if self.sync {
            self.dir.flush_arrays(table, arrays)?;
        }
        self.state.table = Some(TableCheckpoint {
            table: table as u32,
            progress: progress.clone(),
        });
        self.dir.write_checkpoint(&self.state, self.sync)
    }

    /// Table `table` is written to the output: checkpoint it, then remove its arrays.
    pub fn table_written(&mut self, table: usize) -> Result<()> {
        self.state.tables_written = table as u32 + 1;
        self.state.table = None;
        self.dir.write_checkpoint(&self.state, self.sync)?;
        self.dir.remove_arrays(table);
        Ok(())
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
            assert_eq!(data.read_checkpoint().unwrap(), None);
            let arrays = data.arrays(0, &space, &StateIndex::Cell, true).unwrap();
            arrays.codes.try_mark(17, 2);
            arrays.depths.record_first(3, 4);
            data.flush_arrays(0, &arrays).unwrap();
            let m = JobCheckpoint {
                format: CHECKPOINT_FORMAT,
                job_id: "j".into(),
                search_index: SEARCH_INDEX.into(),
                tables_written: 0,
                table: Some(TableCheckpoint::default()),
            };
            data.write_checkpoint(&m, true).unwrap();
        }
        let data = DataDir::open(&dir).unwrap();
        assert_eq!(data.read_checkpoint().unwrap().unwrap().job_id, "j");
        let arrays = data.arrays(0, &space, &StateIndex::Cell, false).unwrap();
        assert_eq!(arrays.codes.get(17), 2);
        assert_eq!(arrays.depths.get(3), 5);
        let _ = fs::remove_dir_all(&dir);
    }
}
