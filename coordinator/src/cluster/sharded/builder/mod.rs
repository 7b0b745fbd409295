//! The driver of a sharded job: each table's layers given as steps to every shard, and the
//! finished table's file written from the shards' values, read range by range in file order
//! (`write.rs`: the coordinator holds one range at a time, never the table).
//!
//! The builder is a [`TableBuilder`], so [`crate::engine::build_set`] has each table proven
//! and publishes it, its manifest and its reuse, as for every other build; with two shards or
//! more the proof runs on the shards, by two disjoint teams of workers, driven by
//! [`super::proof`] ([`TableBuilder::prove`], `docs/DESIGN.md` §5).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tilepdb_common::StateSpace;
use tilepdb_common::region_expand::ExpandStats;
use tilepdb_common::table::{DepthCode, Encoding, Header, Pdb};
use tilepdb_proof::Proof;

use super::control::Control;
use super::service::ProvenFile;
use super::step::{ShardReport, Step, StepOutcome};

use super::progress::ProgressRecord;
use super::server::ShardedBuild;
use super::status::{ShardedStatus, Shown};
use crate::engine::build_memory::depth_code;
use crate::engine::search::{BuiltTable, table_of_values};
use crate::engine::{SearchProgress, TableBuilder};
use crate::error::{Error, Result};
use crate::output::table_file_name;
use crate::report::TableReport;

mod write;

pub(super) use write::READ_ENTRIES;

/// What a sharded build measured of one table, besides its values.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ShardedTableFigures {
    /// Successors that belong to another shard than their parent's.
    pub foreign_successors: u64,
    /// States sent to another shard (the foreign successors, deduplicated in each list).
    pub sent_states: u64,
    /// Their bytes on the wire.
    pub sent_bytes: u64,
    /// Successors generated.
    pub generated: u64,
    /// Bytes of the shards' checkpoints.
    pub checkpoint_bytes: u64,
    /// The peak resident memory each shard's worker reported, bytes, its proof's included.
    pub worker_peak_rss_bytes: Vec<u64>,
}

/// Builds a set's tables with the shards of a [`Control`].
pub struct ShardedBuilder {
    pub(super) control: Arc<Control>,
    pub(super) peers: Vec<String>,
    encoding: Encoding,
    token: Option<String>,
    runtime: tokio::runtime::Handle,
    proves: bool,
    proof: Option<Proof>,
    /// Where the progress of the table being built is recorded, for a restarted coordinator.
    record: ProgressRecord,
    /// How long to wait for a lost shard's replacement.
    pub(super) replacement_wait: std::time::Duration,
    /// Each table's report, as it was written or reused.
    pub reports: Vec<TableReport>,
    /// Each built table's figures, by table.
    pub figures: Vec<ShardedTableFigures>,
    /// The job's status, kept as each step is given.
    status: Arc<ShardedStatus>,
    /// The table searched and not yet written: its progress and figures so far.
    searched: Option<(SearchProgress, ShardedTableFigures)>,
    /// The table whose file a restarted coordinator found written by the job's last run
    /// (kept beside the progress record), and its header: [`TableBuilder::write`] places
    /// that file instead of reading the shards, and the table is proven again.
    resumed: Option<(u32, Header)>,
    /// Where the control plane finds the file the shards prove.
    pub(super) proven: Arc<ProvenFile>,
}

impl ShardedBuilder {
    /// A builder over `control`, whose shards joined at `peers`; tables written in
    /// `encoding`; `token`: the shared token of the peers; `runtime`: where the values are
    /// read; `how`: whether tables are proven, where the progress is recorded (for a restarted
    /// coordinator), how long a lost shard's replacement is waited for; `status`: where each
    /// step is recorded for the job's status.
    pub fn new(
        control: Arc<Control>,
        peers: Vec<String>,
        encoding: Encoding,
        token: Option<String>,
        runtime: tokio::runtime::Handle,
        how: &ShardedBuild,
        status: Arc<ShardedStatus>,
    ) -> ShardedBuilder {
        let record = ProgressRecord::new(how.progress_file.clone(), control.job_id.clone());
        ShardedBuilder {
            control,
            peers,
            encoding,
            token,
            runtime,
            proves: how.prove,
            proof: None,
            record,
            replacement_wait: how.join_timeout,
            reports: Vec::new(),
            figures: Vec::new(),
            searched: None,
            resumed: None,
            status,
            proven: Arc::new(ProvenFile::default()),
        }
    }

    /// The builder, its tables' files served to the shards' provers through `proven` (the
    /// control plane's `ReadEntries`).
    #[must_use]
    pub fn proving_through(mut self, proven: Arc<ProvenFile>) -> ShardedBuilder {
        self.proven = proven;
        self
    }
}

/// What every shard's expansion of a layer did (`reports`), added up; the states and bytes
/// sent added to `figures`.
fn expanded(reports: &[ShardReport], figures: &mut ShardedTableFigures) -> ExpandStats {
    let mut stats = ExpandStats::default();
    for r in reports {
        stats.expanded += r.expanded;
        stats.generated += r.generated;
        figures.sent_states += r.sent_states;
        figures.foreign_successors += r.foreign_successors;
        figures.sent_bytes += r.sent_bytes;
    }
    stats
}

/// Where the search of a table stands: the step to give next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    Expand(u32),
    Checkpoint(u32),
    Finish(u32),
    Read,
    Close,
}

impl Phase {
    /// What the job's status says the shards do in this phase.
    fn shown(self) -> Shown {
        match self {
            Phase::Open | Phase::Expand(_) => Shown::Expanding,
            Phase::Checkpoint(_) | Phase::Finish(_) => Shown::FinishingLayer,
            Phase::Read | Phase::Close => Shown::WritingTable,
        }
    }

    /// After shards were lost in this phase: the layer the replacements restore to (they
    /// then expand it next), and the phase to take up again.
    fn recovery(self, progress: &SearchProgress) -> (u32, Phase) {
        match self {
            Phase::Open => (0, Phase::Expand(0)),
            Phase::Expand(d) | Phase::Checkpoint(d) => (d, Phase::Expand(d)),
            // Every shard has checkpointed the layer `d + 1`; finishing again is a no-op where
            // it was done.
            Phase::Finish(d) => (d + 1, Phase::Finish(d)),
            // The values are read again: a lost shard may have taken its part with it.
            Phase::Read | Phase::Close => (progress.next_depth, Phase::Read),
        }
    }
}

/// Most times the shards of one table are replaced before the build gives up.
const MAX_RECOVERIES: u32 = 16;

impl ShardedBuilder {
    /// Gives `step`; on shards lost, waits for their replacements and has them restore to
    /// `phase`'s recovery layer, then answers `None` (the caller takes up the phase the
    /// recovery names).
    fn step_or_recover(
        &mut self,
        table: u32,
        step: Step,
        phase: Phase,
        progress: &SearchProgress,
        recoveries: &mut u32,
    ) -> Result<Option<Vec<ShardReport>>> {
        let mut lost = match self.control.run_step(step)? {
            StepOutcome::Done(reports) => return Ok(Some(reports)),
            StepOutcome::Lost(lost) => lost,
        };
        loop {
            *recoveries += 1;
            if *recoveries > MAX_RECOVERIES {
                return Err(Error::Shards(format!(
                    "table {table}: shards were lost {MAX_RECOVERIES} times; giving up"
                )));
            }
            if lost.is_empty() {
                // A shard could not reach another that is still there: try again shortly.
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            self.peers = self.control.wait_members(self.replacement_wait)?;
            let (depth, _) = phase.recovery(progress);
            tracing::info!(table, depth, shards = ?lost, "restoring lost shards from their checkpoints");
            let restore = Step::Restore {
                table,
                depth,
                shards: lost.clone(),
                peers: self.peers.clone(),
            };
            match self.control.run_step(restore)? {
                StepOutcome::Done(_) => return Ok(None),
                StepOutcome::Lost(more) => {
                    lost.extend(more);
                    lost.sort_unstable();
                    lost.dedup();
                }
            }
        }
    }

    /// Takes table `table` on the shards from `progress` through its phases, starting with
    /// `phase`: without `file`, up to the end of the search (the shards keep the table);
    /// with it, until the table is written there ([`ShardedBuilder::write_values`]) and
    /// closed on the shards. What writing gave: the header, or why the values make no table.
    #[expect(
        clippy::too_many_arguments,
        reason = "the table's whole context; the loop is the one place its phases follow each other"
    )]
    fn drive(
        &mut self,
        table: u32,
        space: &StateSpace,
        code: DepthCode,
        mut phase: Phase,
        progress: &mut SearchProgress,
        figures: &mut ShardedTableFigures,
        file: Option<(&Path, (&[u64], u64))>,
    ) -> Result<Option<Result<Header>>> {
        let mut recoveries = 0;
        let mut stats = ExpandStats::default();
        let mut written = None;
        loop {
            self.status
                .searching(table as usize, progress, phase.shown());
            let step = match phase {
                Phase::Open => Step::Open {
                    table,
                    peers: self.peers.clone(),
                },
                Phase::Expand(depth) => Step::Expand { table, depth },
                Phase::Checkpoint(depth) => Step::Checkpoint { table, depth },
                Phase::Finish(depth) => Step::Finish { table, depth },
                Phase::Read => {
                    let Some((path, counts)) = file else {
                        return Ok(None);
                    };
                    written = self.write_or_retry(table, space, code, counts, path)?;
                    phase = Phase::Close;
                    continue;
                }
                Phase::Close => Step::Close { table },
            };
            let Some(reports) =
                self.step_or_recover(table, step, phase, progress, &mut recoveries)?
            else {
                phase = match phase {
                    // Written already: the restored shards close the table too.
                    Phase::Close if written.is_some() => Phase::Close,
                    _ => phase.recovery(progress).1,
                };
                continue;
            };
            phase = match phase {
                Phase::Open => Phase::Expand(progress.next_depth),
                Phase::Expand(d) => {
                    stats = expanded(&reports, figures);
                    Phase::Checkpoint(d)
                }
                Phase::Checkpoint(d) => {
                    figures.checkpoint_bytes +=
                        reports.iter().map(|r| r.checkpoint_bytes).sum::<u64>();
                    Phase::Finish(d)
                }
                Phase::Finish(d) => {
                    self.layer_finished(table, space, d, &reports, stats, progress)?;
                    if progress.search_done {
                        Phase::Read
                    } else {
                        Phase::Expand(d + 1)
                    }
                }
                Phase::Read => unreachable!("reading is not a step"),
                Phase::Close => {
                    figures.worker_peak_rss_bytes = reports.iter().map(|r| r.peak_rss).collect();
                    match written.take() {
                        Some(outcome) => return Ok(Some(outcome)),
                        // Not written: a shard was lost while the values were read.
                        None => Phase::Read,
                    }
                }
            };
        }
    }

    /// Every shard finished layer `depth` of table `table` as `reports` say: the layer
    /// recorded in `progress` (with the expansion's `stats`), logged and saved.
    fn layer_finished(
        &mut self,
        table: u32,
        space: &StateSpace,
        depth: u32,
        reports: &[ShardReport],
        stats: ExpandStats,
        progress: &mut SearchProgress,
    ) -> Result<()> {
        let added = reports.iter().map(|r| r.added).sum();
        let entries = reports.iter().map(|r| r.entries).sum();
        progress.layer_finished(space, added, entries, stats)?;
        if self.status.progress_is_drawn() {
            tracing::debug!(table, depth, added, "layer finished on every shard");
        } else {
            tracing::info!(table, depth, added, "layer finished on every shard");
        }
        self.record.save(table, progress, false)
    }
}

impl TableBuilder for ShardedBuilder {
    type Error = Error;

    /// Searches the table on the shards, which keep it for [`TableBuilder::write`]: its
    /// figures, without values.
    fn build(&mut self, index: usize, space: &StateSpace) -> Result<BuiltTable> {
        let started = Instant::now();
        let table = u32::try_from(index).map_err(|_| Error::Shards("too many tables".into()))?;
        let code = depth_code(space, Some(self.encoding));
        let mut figures = ShardedTableFigures::default();
        let saved = self.record.load(table);
        let saved = match saved {
            Some(saved) if saved.written => {
                if let Some(header) = self.record.kept_table(space, self.encoding) {
                    tracing::info!(
                        table,
                        "taking up the table where the job's last run left it: its file was \
                         written; proving it again"
                    );
                    self.status
                        .searching(index, &saved.progress, Shown::WritingTable);
                    let built =
                        table_of_values(space, code, Vec::new(), &saved.progress, started, (0, 0));
                    self.searched = Some((saved.progress, figures));
                    self.resumed = Some((table, header));
                    return Ok(built);
                }
                // The shards closed the table: it is searched again from the goal.
                tracing::warn!(
                    table,
                    "the job's last run wrote the table, but its kept file is gone or damaged: \
                     searching the table again"
                );
                None
            }
            saved => saved.map(|s| s.progress),
        };
        let (mut progress, phase) = match saved {
            Some(progress) => {
                tracing::info!(
                    table,
                    depth = progress.next_depth,
                    "taking up the table where the job's last run left it"
                );
                // Every shard rebuilds the table from its checkpoints.
                let all: Vec<u32> = (0..self.control.shards()).collect();
                let restore = Step::Restore {
                    table,
                    depth: progress.next_depth,
                    shards: all,
                    peers: self.peers.clone(),
                };
                let mut recoveries = 0;
                let phase = if progress.search_done {
                    Phase::Read
                } else {
                    Phase::Expand(progress.next_depth)
                };
                // A restore that loses shards restores them too, to the same layer.
                let _ = self.step_or_recover(
                    table,
                    restore,
                    Phase::Finish(progress.next_depth.saturating_sub(1)),
                    &progress,
                    &mut recoveries,
                )?;
                (progress, phase)
            }
            None => (SearchProgress::start(), Phase::Open),
        };
        self.drive(table, space, code, phase, &mut progress, &mut figures, None)?;
        figures.generated = progress.generated;
        // The coordinator held no arrays, and holds no values: they are on the shards.
        let built = table_of_values(space, code, Vec::new(), &progress, started, (0, 0));
        self.searched = Some((progress, figures));
        Ok(built)
    }

    /// Writes the table the shards hold, read from them range by range, then closes it on
    /// the shards.
    fn write(
        &mut self,
        index: usize,
        space: &StateSpace,
        encoding: Encoding,
        built: &mut BuiltTable,
        dir: &Path,
    ) -> Result<Result<PathBuf>> {
        let table = u32::try_from(index).map_err(|_| Error::Shards("too many tables".into()))?;
        let (mut progress, mut figures) = self
            .searched
            .take()
            .ok_or_else(|| Error::Shards(format!("table {table} was not searched")))?;
        if encoding != self.encoding {
            return Err(Error::Shards(format!(
                "table {table} was searched for {}, not {encoding}",
                self.encoding
            )));
        }
        let code = depth_code(space, Some(encoding));
        let path = dir.join(table_file_name(space));
        let written = match self.resumed.take() {
            Some((resumed, header)) if resumed == table => {
                self.record.place_kept(space, &path)?;
                Ok(header)
            }
            _ => {
                let counts = (built.histogram.clone(), built.unreached);
                let written = self
                    .drive(
                        table,
                        space,
                        code,
                        Phase::Read,
                        &mut progress,
                        &mut figures,
                        Some((&path, (&counts.0, counts.1))),
                    )?
                    .ok_or_else(|| Error::Shards(format!("table {table} was not written")))?;
                match &written {
                    Ok(_) => self.record.keep_written(table, space, &path, &progress)?,
                    // The shards closed the table: a restarted coordinator searches it again.
                    Err(_) => self.record.forget(index),
                }
                written
            }
        };
        if self.figures.len() <= index {
            self.figures
                .resize(index + 1, ShardedTableFigures::default());
        }
        self.figures[index] = figures;
        Ok(written.map(|header| {
            // A byte table's counts are the file's, not the layers' states.
            built.histogram = header.histogram;
            built.unreached = header.unreached;
            path
        }))
    }

    fn proves(&self) -> bool {
        self.proves
    }

    fn prove(
        &mut self,
        index: usize,
        space: &StateSpace,
        staged: &Pdb,
    ) -> Result<std::result::Result<Proof, Error>> {
        let table = u32::try_from(index).map_err(|_| Error::Shards("too many tables".into()))?;
        self.prove_table(table, space, staged)
    }

    fn proven(&mut self, _index: usize, _space: &StateSpace, proof: Proof) -> Result<()> {
        self.proof = Some(proof);
        Ok(())
    }

    fn rejected(&mut self, index: usize, _space: &StateSpace, _error: &Error) -> Result<()> {
        self.record.forget(index);
        Ok(())
    }

    fn reused(&mut self, index: usize, space: &StateSpace, pdb: &Pdb) -> Result<()> {
        self.record.forget(index);
        self.status.written(index);
        self.reports.push(TableReport::cached(space, pdb));
        Ok(())
    }

    fn written(
        &mut self,
        index: usize,
        space: &StateSpace,
        table: &BuiltTable,
        pdb: &Pdb,
    ) -> Result<()> {
        self.record.forget(index);
        self.status.written(index);
        self.reports.push(
            TableReport::new(space, table, crate::report::peak_rss_bytes(), None)
                .with_table_file(pdb)
                .with_proof(self.proof.take()),
        );
        Ok(())
    }
}
