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
//! (`array_checksum`); on resume every field is range-checked and the checksums are taken
//! again over what the layer being redone cannot have changed yet (its next-layer codes and
//! depths read as unseen). An edited or damaged checkpoint is refused with a message that
//! names the file and what to do; damaged arrays are repaired by starting their table again
//! from its goal (with a warning naming the file). File sizes are checked before mapping and
//! after every layer, so an outside truncation is an error rather than a fault.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tilepdb_common::wire::saturating_u32;
use tilepdb_common::{StateCodes, StateSpace};

use crate::engine::search::MAX_DEPTH;
use crate::engine::units::StateIndex;
use crate::engine::{SearchProgress, TableArrays};
use crate::error::{Error, Result};
use crate::merge::DepthBytes;

/// Version of the checkpoint's layout. Format 2 has checksums (of its fields and of the
/// arrays) and records the state index ([`JobCheckpoint::search_index`]); format 1 (earlier
/// versions, on the cell index, without checksums) is refused.
pub const CHECKPOINT_FORMAT: u32 = 2;

/// The state index the job's arrays are on, as the checkpoint names it.
pub const SEARCH_INDEX: &str = tilepdb_common::wire::SEARCH_INDEX;

fn cell_index() -> String {
    "cell".into()
}

/// Largest checkpoint file read (a real one is a few hundred bytes).
const MAX_CHECKPOINT_BYTES: u64 = 1 << 20;

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
    /// CRC-32 of the checkpoint's JSON with this field empty ([`JobCheckpoint::sealed`]).
    #[serde(default)]
    pub checksum: String,
}

impl JobCheckpoint {
    /// The checksum of every other field.
    fn own_checksum(&self) -> String {
        let unsealed = JobCheckpoint {
            checksum: String::new(),
            ..self.clone()
        };
        let json = serde_json::to_string(&unsealed).expect("a checkpoint serializes");
        format!("{:08x}", crc32fast::hash(json.as_bytes()))
    }

    /// The checkpoint with its checksum set.
    pub fn sealed(mut self) -> JobCheckpoint {
        self.checksum = self.own_checksum();
        self
    }
}

/// How far the search of the table in progress got.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableCheckpoint {
    /// The table's index in the set.
    pub table: u32,
    /// Its search.
    #[serde(flatten)]
    pub progress: SearchProgress,
    /// `array_checksum` of its state array when the checkpoint was written.
    #[serde(default)]
    pub codes_checksum: String,
    /// `array_checksum` of its depth bytes when the checkpoint was written.
    #[serde(default)]
    pub depths_checksum: String,
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

    /// The checksums of table `table`'s state array and depth bytes as the layer `depth`
    /// found them (`array_checksum`).
    fn checksums(&self, table: usize, depth: u32) -> Result<(String, String)> {
        let codes = self.codes_path(table);
        let depths = self.depths_path(table);
        let (c, d) = rayon::join(
            || array_checksum(&codes, &ArrayKind::Codes, depth),
            || array_checksum(&depths, &ArrayKind::Depths, depth),
        );
        Ok((
            c.map_err(|e| Error::io(&codes, e))?,
            d.map_err(|e| Error::io(&depths, e))?,
        ))
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
    ///
    /// Every field is checked against the job's `spaces` (the tables it searches): an edited
    /// checkpoint is refused.
    pub fn open(
        dir: &'d DataDir,
        job_id: &str,
        sync: bool,
        spaces: &[StateSpace],
    ) -> Result<Checkpoint<'d>> {
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
            Some(c) => {
                check_fields(dir, &c, spaces)?;
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
                    checksum: String::new(),
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
            match self.resume_arrays(table, space, index, &c) {
                Ok(arrays) => return Ok((arrays, c.progress)),
                Err(damage) => tracing::warn!(
                    table,
                    data_dir = %self.dir.path().display(),
                    "{damage}: starting the table again from its goal"
                ),
            }
        }
        let arrays = self.dir.arrays(table, space, index, true)?;
        arrays.mark_goal(space, index);
        self.dir.flush_arrays(table, &arrays)?;
        let progress = SearchProgress::start();
        let (codes_checksum, depths_checksum) = self.dir.checksums(table, progress.next_depth)?;
        self.state.table = Some(TableCheckpoint {
            table: saturating_u32(table),
            progress: progress.clone(),
            codes_checksum,
            depths_checksum,
        });
        self.dir.write_checkpoint(&self.state, self.sync)?;
        Ok((arrays, progress))
    }

    /// The arrays of the checkpoint's table `table`, if they are as the checkpoint says;
    /// else what is wrong with them.
    fn resume_arrays(
        &self,
        table: usize,
        space: &StateSpace,
        index: &StateIndex,
        c: &TableCheckpoint,
    ) -> std::result::Result<TableArrays, String> {
        self.dir
            .check_sizes(table, index.states(space), index.depth_entries(space))
            .map_err(|e| e.to_string())?;
        let (codes, depths) = self
            .dir
            .checksums(table, c.progress.next_depth)
            .map_err(|e| e.to_string())?;
        for (path, found, want) in [
            (self.dir.codes_path(table), codes, &c.codes_checksum),
            (self.dir.depths_path(table), depths, &c.depths_checksum),
        ] {
            if found != *want {
                return Err(format!(
                    "{} does not match its checksum in the checkpoint (damaged)",
                    path.display()
                ));
            }
        }
        self.dir
            .arrays(table, space, index, false)
            .map_err(|e| e.to_string())
    }

    /// Forgets the search of table `table` (its table failed its check): the next
    /// [`Checkpoint::begin_table`] starts it again from its goal, on new arrays.
    pub fn restart_table(&mut self, table: usize) -> Result<()> {
        if self
            .state
            .table
            .as_ref()
            .is_some_and(|c| c.table as usize == table)
        {
            self.state.table = None;
            self.dir.write_checkpoint(&self.state, self.sync)?;
        }
        self.dir.remove_arrays(table);
        Ok(())
    }

    /// A layer of table `table` is finished: flush its arrays (if syncing), then checkpoint
    /// `progress`.
    pub fn layer_done(
        &mut self,
        table: usize,
        _space: &StateSpace,
        arrays: &TableArrays,
        progress: &SearchProgress,
    ) -> Result<()> {
        if self.sync {
            self.dir.flush_arrays(table, arrays)?;
        }
        self.dir
            .check_sizes(table, arrays.codes.states(), arrays.depths.len())?;
        let (codes_checksum, depths_checksum) = self.dir.checksums(table, progress.next_depth)?;
        self.state.table = Some(TableCheckpoint {
            table: saturating_u32(table),
            progress: progress.clone(),
            codes_checksum,
            depths_checksum,
        });
        self.dir.write_checkpoint(&self.state, self.sync)
    }

    /// Table `table` is written to the output: checkpoint it, then remove its arrays.
    pub fn table_written(&mut self, table: usize) -> Result<()> {
        self.state.tables_written = saturating_u32(table + 1);
        self.state.table = None;
        self.dir.write_checkpoint(&self.state, self.sync)?;
        self.dir.remove_arrays(table);
        Ok(())
    }
}

/// Refuses a checkpoint whose fields do not fit the job of `spaces`.
fn check_fields(dir: &DataDir, c: &JobCheckpoint, spaces: &[StateSpace]) -> Result<()> {
    let bad = |reason: String| Error::DataDir {
        path: dir.checkpoint_path(),
        reason: format!(
            "{reason}: the checkpoint was edited or damaged; remove the data directory {} to \
             start the job over",
            dir.path().display()
        ),
    };
    let tables = spaces.len();
    if c.tables_written as usize > tables {
        return Err(bad(format!(
            "tables_written is {}, but the job has {tables} tables",
            c.tables_written
        )));
    }
    let Some(t) = &c.table else {
        return Ok(());
    };
    if t.table != c.tables_written {
        return Err(bad(format!(
            "the table in progress is {}, but {} tables are written (it must be the next one)",
            t.table, c.tables_written
        )));
    }
    let states = spaces[t.table as usize].states();
    let p = &t.progress;
    if p.next_depth > MAX_DEPTH + 1 {
        return Err(bad(format!(
            "next_depth is {}, deeper than any table ({MAX_DEPTH})",
            p.next_depth
        )));
    }
    if p.states_found > states || p.layer_states > p.states_found || p.expanded > p.states_found {
        return Err(bad(format!(
            "states_found {}, layer_states {} and expanded {} do not fit a table of {states} \
             states",
            p.states_found, p.layer_states, p.expanded
        )));
    }
    Ok(())
}

/// Which array a file holds, for `array_checksum`.
enum ArrayKind {
    /// Two-bit state codes.
    Codes,
    /// Depth bytes (`depth + 1`, 0 unreached).
    Depths,
}

/// Bytes per checksummed piece of an array file.
const CHECKSUM_PIECE: usize = 8 << 20;

/// The checksum of an array file as the layer `depth` found it: what expanding that layer
/// changes (unseen states marked with the next layer's code, their depths recorded as
/// `depth + 1`) reads as unseen, so that a coordinator stopped in the middle of the layer
/// finds the checksum of the layer's start. CRC-32 of each 8 MiB piece (in parallel), then
/// CRC-32 of those, with the file's length.
#[expect(
    clippy::cast_possible_truncation,
    reason = "bytes of a 256-entry table and 8 MiB pieces: every value fits its type"
)]
fn array_checksum(path: &Path, kind: &ArrayKind, depth: u32) -> std::io::Result<String> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let unseen: [u8; 256] = match kind {
        ArrayKind::Codes => {
            let next = StateCodes::code_of_depth(depth + 1);
            std::array::from_fn(|b| {
                (0..4).fold(0u8, |out, i| {
                    let code = (b as u8 >> (2 * i)) & 3;
                    out | if code == next { 0 } else { code << (2 * i) }
                })
            })
        }
        ArrayKind::Depths => {
            let next = depth + 2;
            std::array::from_fn(|b| if b as u32 == next { 0 } else { b as u8 })
        }
    };
    let pieces = len.div_ceil(CHECKSUM_PIECE as u64);
    let crcs = (0..pieces)
        .into_par_iter()
        .map(|i| {
            let start = i * CHECKSUM_PIECE as u64;
            let mut buf = vec![0u8; (len - start).min(CHECKSUM_PIECE as u64) as usize];
            file.read_exact_at(&mut buf, start)?;
            for b in &mut buf {
                *b = unseen[*b as usize];
            }
            Ok(crc32fast::hash(&buf))
        })
        .collect::<std::io::Result<Vec<u32>>>()?;
    let mut all = crc32fast::Hasher::new();
    for crc in crcs {
        all.update(&crc.to_le_bytes());
    }
    Ok(format!("{:08x}-{len}", all.finalize()))
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
                checksum: String::new(),
            };
            data.write_checkpoint(&m, true).unwrap();
        }
        let data = DataDir::open(&dir).unwrap();
        assert_eq!(data.read_checkpoint().unwrap().unwrap().job_id, "j");
        // An edited field no longer matches the checkpoint's checksum.
        let path = dir.join("checkpoint.json");
        let text = fs::read_to_string(&path).unwrap();
        fs::write(
            &path,
            text.replace("\"tables_written\": 0", "\"tables_written\": 1"),
        )
        .unwrap();
        let e = data.read_checkpoint().unwrap_err().to_string();
        assert!(
            e.contains("checksum") && e.contains("checkpoint.json"),
            "{e}"
        );
        let arrays = data.arrays(0, &space, &StateIndex::Cell, false).unwrap();
        assert_eq!(arrays.codes.get(17), 2);
        assert_eq!(arrays.depths.get(3), 5);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn fields_that_do_not_fit_the_job_are_refused_even_with_their_checksum() {
        let dir = std::env::temp_dir().join(format!("tilepdb-fields-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let data = DataDir::open(&dir).unwrap();
        let board: Board = "3x3".parse().unwrap();
        let space = StateSpace::new(
            board,
            Goal::BlankFirst,
            Pattern::new(board, vec![1, 2]).unwrap(),
            BlankRule::Minimized,
        )
        .unwrap();
        let spaces = vec![space.clone(), space.clone()];
        let good = JobCheckpoint {
            format: CHECKPOINT_FORMAT,
            job_id: "j".into(),
            search_index: SEARCH_INDEX.to_string(),
            tables_written: 1,
            table: Some(TableCheckpoint {
                table: 1,
                ..TableCheckpoint::default()
            }),
            checksum: String::new(),
        };
        check_fields(&data, &good, &spaces).unwrap();
        let mut bad = vec![];
        bad.push(JobCheckpoint {
            tables_written: 99,
            table: None,
            ..good.clone()
        });
        bad.push(JobCheckpoint {
            tables_written: 0,
            ..good.clone()
        });
        let mut deep = good.clone();
        deep.table.as_mut().unwrap().progress.next_depth = 1000;
        bad.push(deep);
        let mut found = good.clone();
        found.table.as_mut().unwrap().progress.states_found = space.states() + 1;
        bad.push(found);
        for c in bad {
            // Sealed: the checksum matches, the fields do not fit.
            data.write_checkpoint(&c, false).unwrap();
            let read = data.read_checkpoint().unwrap().unwrap();
            let e = check_fields(&data, &read, &spaces).unwrap_err().to_string();
            assert!(
                e.contains("checkpoint.json") && e.contains("remove the data directory"),
                "{e}"
            );
        }
        drop(data);
        let _ = fs::remove_dir_all(&dir);
    }
}
