//! The job's checkpoint: what it records ([`JobCheckpoint`], sealed by a checksum of its
//! fields), the checks of its fields against the job, and [`Checkpoint`], which owns the order
//! of flushes, checkpoint writes and removals.

use serde::{Deserialize, Serialize};
use tilepdb_common::StateSpace;
use tilepdb_common::wire::saturating_u32;

use super::DataDir;
use crate::engine::search::MAX_DEPTH;
use crate::engine::units::StateIndex;
use crate::engine::{SearchProgress, TableArrays};
use crate::error::{Error, Result};

/// Version of the checkpoint's layout. Format 2 has checksums (of its fields and of the
/// arrays) and records the state index ([`JobCheckpoint::search_index`]); format 1 (earlier
/// versions, on the cell index, without checksums) is refused.
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
    /// CRC-32 of the checkpoint's JSON with this field empty ([`JobCheckpoint::sealed`]).
    #[serde(default)]
    pub checksum: String,
}

impl JobCheckpoint {
    /// The checksum of every other field.
    pub(super) fn own_checksum(&self) -> String {
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
    /// `array_checksum` of its state array with the layer's current states read as done:
    /// what the array reads as while the layer is finished (absent in a checkpoint of an
    /// earlier version).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub finished_codes_checksum: String,
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
                let at = c.table.as_ref().map_or_else(
                    || "no table in progress".to_string(),
                    |t| format!("table {} at depth {}", t.table + 1, t.progress.next_depth),
                );
                tracing::info!(
                    job = %job_id,
                    tables_written = c.tables_written,
                    "resuming from the data directory: {} table(s) written, {at}",
                    c.tables_written
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
    /// table in progress (with [`SearchProgress::layer_expanded`] set if the coordinator
    /// stopped while finishing the layer), else new arrays with the goal marked, flushed,
    /// then checkpointed.
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
                Ok((arrays, layer_expanded)) => {
                    let mut progress = c.progress;
                    if layer_expanded {
                        tracing::info!(
                            table,
                            depth = progress.next_depth,
                            "the coordinator stopped while finishing layer {}: finishing it again",
                            progress.next_depth
                        );
                        progress.layer_expanded = true;
                    }
                    return Ok((arrays, progress));
                }
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
        self.record_table(table, &progress)?;
        Ok((arrays, progress))
    }

    /// The arrays of the checkpoint's table `table`, if they are as the checkpoint says, and
    /// whether its layer was found expanded and being finished (its state array matches only
    /// with the layer's current states read as done: the finishing pass retires them only
    /// after the expansion is complete); else what is wrong with them.
    fn resume_arrays(
        &self,
        table: usize,
        space: &StateSpace,
        index: &StateIndex,
        c: &TableCheckpoint,
    ) -> std::result::Result<(TableArrays, bool), String> {
        self.dir
            .check_sizes(table, index.states(space), index.depth_entries(space))
            .map_err(|e| e.to_string())?;
        let found = self
            .dir
            .checksums(table, c.progress.next_depth)
            .map_err(|e| e.to_string())?;
        let damaged = |path: std::path::PathBuf| {
            format!(
                "{} does not match its checksum in the checkpoint (damaged)",
                path.display()
            )
        };
        if found.depths != c.depths_checksum {
            return Err(damaged(self.dir.depths_path(table)));
        }
        let layer_expanded = if found.codes == c.codes_checksum {
            false
        } else if !c.finished_codes_checksum.is_empty()
            && found.finished_codes == c.finished_codes_checksum
        {
            true
        } else {
            return Err(damaged(self.dir.codes_path(table)));
        };
        let arrays = self
            .dir
            .arrays(table, space, index, false)
            .map_err(|e| e.to_string())?;
        Ok((arrays, layer_expanded))
    }

    /// The state array of table `table` to flush once a layer's expansion is complete and
    /// before its finishing pass, if the checkpoint syncs: on disk no state is then retired
    /// before its successors are marked, so a resume after a machine's crash in the finishing
    /// pass may finish the layer again.
    pub fn codes_to_flush(&self, table: usize) -> Option<std::path::PathBuf> {
        self.sync.then(|| self.dir.codes_path(table))
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
        self.record_table(table, progress)
    }

    /// Records `progress` of `table` with the checksums of its arrays, and writes the
    /// checkpoint.
    fn record_table(&mut self, table: usize, progress: &SearchProgress) -> Result<()> {
        let found = self.dir.checksums(table, progress.next_depth)?;
        self.state.table = Some(TableCheckpoint {
            table: saturating_u32(table),
            progress: progress.clone(),
            codes_checksum: found.codes,
            depths_checksum: found.depths,
            finished_codes_checksum: found.finished_codes,
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
pub(super) fn check_fields(dir: &DataDir, c: &JobCheckpoint, spaces: &[StateSpace]) -> Result<()> {
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
    if !p.layer_counts.is_empty()
        && p.layer_counts
            .iter()
            .try_fold(0u64, |sum, &c| sum.checked_add(c))
            != Some(p.states_found)
    {
        return Err(bad(format!(
            "the layers' states {:?} do not add up to states_found {}",
            p.layer_counts, p.states_found
        )));
    }
    Ok(())
}
