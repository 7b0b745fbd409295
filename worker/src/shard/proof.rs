//! The worker's side of the proof on the shards (`docs/DESIGN.md` §5): after the table's
//! file is written, every worker proves one proof shard of its team's cut of the index with
//! the proof crate's own prover ([`ShardProver`], never the build's kernel). Its file entries
//! are read from the coordinator, which wrote the file, a bounded part at a time, each answer
//! checked by CRC-32 and count, and kept (a zero-aware table's) in a file of the worker's
//! data directory, removed when the prover is let go, or in memory without one; its lists go
//! to the team's other provers over the data plane, tagged with the team's search, so a list
//! of one team is never merged by the other. A layer is expanded on the worker's threads, a
//! range of the prover's sets each, as the build expands its shard.
//!
//! A wrong entry (or a list no honest prover sends) is the prover's verdict, not a failed
//! step: it is kept and reported with every later step (`proof_failure`), and the coordinator
//! refuses the table.
//!
//! When a shard is lost during the proof, the coordinator gives `ProofOpen` again to every
//! worker (the lost shard's replacement among them): the prover of the void attempt is let go
//! before the new one is made, so a worker never holds two.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rayon::prelude::*;
use tilepdb_common::region_index::{RegionIndex, set_ranges};
use tilepdb_common::shard::{ShardLayout, list_states, lists_budget, lists_bytes};
use tilepdb_common::wire::proto::shard_control_client::ShardControlClient;
use tilepdb_common::wire::proto::{
    EntryRange, LayerStep, ProofOpen, PushRequest, ReadEntriesRequest, StepReport,
};
use tilepdb_common::wire::region_lists::{RegionListShape, encode_region_states};
use tilepdb_common::wire::zstd_frames;
use tilepdb_common::{StateSpace, human_bytes};
use tilepdb_proof::sharded::{EntriesPlace, ProofTeams, ShardEntries, ShardProver, prover_bytes};
use tonic::Status;

use super::Work;
use super::peer::{PeerState, decode_push, invalid};
use super::send::{Peers, push_in_parts, push_list};
use crate::error::{Error, Result};

/// A worker's prover of one table, shared with its data plane.
pub struct ProofSlot {
    table: u32,
    /// 1: team A's search, 2: team B's.
    search: u32,
    proof_shard: u32,
    team_shards: u32,
    /// The bytes its lists to push may take, from its arrays ([`lists_budget`]).
    lists_budget: u64,
    space: StateSpace,
    index: Arc<RegionIndex>,
    /// `None` once closed, or when the prover could not be made (the failure says why).
    prover: RwLock<Option<ShardProver>>,
    /// The layer whose states pushes may carry now.
    accept_depth: AtomicU32,
    failure: Mutex<Option<String>>,
}

impl ProofSlot {
    /// Keeps the first verdict against the table.
    fn fail(&self, why: String) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if failure.is_none() {
            tracing::warn!(table = self.table, "the proof refuses the table: {why}");
            *failure = Some(why);
        }
    }

    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn shape(&self, depth: u32) -> RegionListShape<'_> {
        RegionListShape::new(&self.index, false, self.space.goal_cells(), depth)
    }
}

/// A pushed list of a proof: checked in full for the open prover of its search, then met;
/// a list the prover refuses (a state it does not own, say) is a verdict against the table.
pub(super) async fn push(state: &Arc<PeerState>, r: PushRequest) -> Result<(), Status> {
    let slot = state
        .proof
        .read()
        .expect("proof lock")
        .clone()
        .ok_or_else(|| Status::unavailable("this shard has no proof open"))?;
    if r.table != slot.table || r.search != slot.search {
        return Err(Status::failed_precondition(format!(
            "a proof list of table {} search {}; this shard proves table {} in search {}",
            r.table, r.search, slot.table, slot.search
        )));
    }
    if r.to_shard != slot.proof_shard
        || r.from_shard >= slot.team_shards
        || r.from_shard == slot.proof_shard
    {
        return Err(invalid(format!(
            "a proof list from proof shard {} to {}, sent to proof shard {} of {}",
            r.from_shard, r.to_shard, slot.proof_shard, slot.team_shards
        )));
    }
    let accept = slot.accept_depth.load(Relaxed);
    if r.depth != accept {
        return Err(Status::failed_precondition(format!(
            "a proof list of layer {} where this prover takes layer {accept}",
            r.depth
        )));
    }
    tokio::task::spawn_blocking(move || {
        let states = decode_push(&r, &slot.shape(r.depth), 0..slot.index.states())?;
        if slot.failure().is_none() {
            let prover = slot.prover.read().expect("prover lock");
            if let Some(prover) = prover.as_ref()
                && let Err(e) = prover.merge(&states)
            {
                slot.fail(e.to_string());
            }
        }
        Ok(())
    })
    .await
    .unwrap_or_else(|e| Err(Status::internal(format!("the merge stopped: {e}"))))
}

/// Whether this worker is the test-only worker that dies in the proof
/// (`TILEPDB_TEST_EXIT_IN_PROOF`, for the distributed tests): it exits, without a word to
/// anyone, in its proof's layer 1: after its first list of that layer is merged by its owner,
/// or at the end of the layer's expansion when it sends none.
fn test_exit_in_proof(shard: u32) -> bool {
    std::env::var("TILEPDB_TEST_EXIT_IN_PROOF")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        == Some(shard)
}

/// Ends this process at once, as a worker killed mid-proof (see [`test_exit_in_proof`]).
fn die_in_proof() -> ! {
    tracing::warn!("TILEPDB_TEST_EXIT_IN_PROOF: this worker exits in the middle of the proof");
    std::process::exit(86)
}

/// Whether this worker is the test-only bad worker (`TILEPDB_TEST_LIAR_SHARD`, for the
/// distributed tests): it withholds its lists of layer 3 (to shard 0 in the build, to every
/// prover of its team in the proof) and reports no verdict against a table.
pub(super) fn test_liar(shard: u32) -> bool {
    std::env::var("TILEPDB_TEST_LIAR_SHARD")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        == Some(shard)
}

/// What one range of a prover's sets did in a layer's expansion: the states and bytes it
/// pushed, the push that failed (the layer is then redone), and the proof's verdict against
/// the table if it found an entry wrong.
#[derive(Default)]
struct ProofExpanded {
    states: u64,
    bytes: u64,
    transport: Option<Error>,
    verdict: Option<tilepdb_proof::Error>,
}

impl Work {
    /// Lets the open prover go, if any (a new proof, or a table opened, takes its place).
    pub(super) fn let_proof_go(&mut self) {
        *self.state.proof.write().expect("proof lock") = None;
        self.proof_peers = None;
    }

    fn proof_slot(&self, table: u32) -> Result<Arc<ProofSlot>> {
        match &*self.state.proof.read().expect("proof lock") {
            Some(slot) if slot.table == table => Ok(slot.clone()),
            _ => Err(Error::Refused(format!(
                "table {table} has no proof open on this shard"
            ))),
        }
    }

    /// The report of a proof step: the verdict against the table, if any.
    fn proof_report(&self, slot: &ProofSlot, mut report: StepReport) -> StepReport {
        if !test_liar(self.config.shard) {
            report.proof_failure = slot.failure().unwrap_or_default();
        }
        report
    }

    /// `ProofOpen`: this worker's team and proof shard found in the teams given (which
    /// must be the teams of the job's shards); its file entries read from the coordinator;
    /// its prover made and shared with the data plane.
    pub(super) async fn proof_open(&mut self, open: ProofOpen) -> Result<StepReport> {
        // A proof given again (a shard was lost): the void attempt's prover goes first.
        self.let_proof_go();
        let space = self
            .spaces
            .get(open.table as usize)
            .ok_or_else(|| Error::Refused(format!("the job has no table {}", open.table)))?
            .clone();
        let (shard, shards) = (self.config.shard, self.config.shards);
        if open.peers.len() != shards as usize {
            return Err(Error::Refused(format!(
                "{} peer addresses for {shards} shards",
                open.peers.len()
            )));
        }
        let index = {
            let space = space.clone();
            tokio::task::spawn_blocking(move || space.region_index())
                .await
                .map_err(|e| Error::Start(e.to_string()))??
        };
        let build = ShardLayout::new(index.orders(), shards)?;
        let teams = ProofTeams::new(build)
            .map_err(|e| Error::Refused(e.to_string()))?
            .ok_or_else(|| Error::Refused("a proof on one shard".into()))?;
        let [a, b] = &teams.teams;
        if a.provers != open.team_a || b.provers != open.team_b {
            return Err(Error::Refused(format!(
                "teams {:?} and {:?} given; the job's {shards} shards make {:?} and {:?}",
                open.team_a, open.team_b, a.provers, b.provers
            )));
        }
        let (search, team) = if a.provers.contains(&shard) {
            (1, a)
        } else {
            (2, b)
        };
        let proof_shard = team
            .provers
            .iter()
            .position(|&w| w == shard)
            .and_then(|j| u32::try_from(j).ok())
            .ok_or_else(|| Error::Refused(format!("shard {shard} is in no team")))?;
        let limit = self.config.memory_limit.or_else(super::cgroup_limit);
        let entries_file = match &self.checkpoints {
            Some(c) => Some(new_entries_file(c.dir(), open.table)?),
            None => None,
        };
        let prover = prover_bytes(
            &space,
            &index,
            team.layout,
            proof_shard,
            self.encoding,
            entries_file.is_some(),
        )
        .map_err(|e| Error::Refused(e.to_string()))?;
        if let Some(limit) = limit {
            let threads = self.pool.current_num_threads();
            let lists = lists_bytes(
                threads,
                team.provers.len().saturating_sub(1),
                lists_budget(prover.memory),
            );
            let need = prover.memory + index.memory_bytes() + lists;
            if need > limit {
                return Err(Error::Refused(format!(
                    "proof shard {proof_shard} of {} of {} needs {} ({} of prover, {} of index, {} of lists to push) but this worker may use {}",
                    team.layout.shards(),
                    space.pattern(),
                    human_bytes(need),
                    human_bytes(prover.memory),
                    human_bytes(index.memory_bytes()),
                    human_bytes(lists),
                    human_bytes(limit)
                )));
            }
        }
        let addresses: Vec<String> = team
            .provers
            .iter()
            .map(|&w| open.peers[w as usize].clone())
            .collect();
        let peers = Peers::connect(&addresses, proof_shard, &self.config.worker.coordinator)?;
        let coordinator = &self.config.worker.coordinator;
        let mut control =
            ShardControlClient::with_interceptor(coordinator.channel()?, coordinator.auth()?)
                .max_decoding_message_size(super::peer::MAX_MESSAGE_BYTES);
        let (handle, job_id, encoding) = (
            tokio::runtime::Handle::current(),
            self.job_id.clone(),
            self.encoding,
        );
        let (layout, table) = (team.layout, open.table);
        let entries_kept = entries_file
            .as_ref()
            .map_or_else(|| "in memory".to_string(), |p| p.display().to_string());
        let made_index = index.clone();
        let made_space = space.clone();
        let made = tokio::task::spawn_blocking(move || -> Result<_> {
            let mut transport: Option<Error> = None;
            let read = |ranges: &[std::ops::Range<u64>]| -> tilepdb_proof::Result<Vec<u8>> {
                read_entries(&handle, &mut control, &job_id, table, ranges).map_err(|e| {
                    let why = e.to_string();
                    transport = Some(e);
                    tilepdb_proof::Error::Domain(tilepdb_common::Error::Shard(why))
                })
            };
            let place = match &entries_file {
                Some(path) => EntriesPlace::file(path),
                None => EntriesPlace::memory(),
            };
            let made = ShardEntries::read(
                &made_space,
                &made_index,
                layout,
                proof_shard,
                encoding,
                place,
                read,
            )
            .and_then(|entries| {
                ShardProver::new(
                    &made_space,
                    made_index.clone(),
                    layout,
                    proof_shard,
                    encoding,
                    entries,
                )
            });
            match (made, transport) {
                (_, Some(e)) => Err(e),
                (Ok(prover), None) => Ok(Ok(prover)),
                (Err(e), None) => Ok(Err(e.to_string())),
            }
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))??;
        let slot = Arc::new(ProofSlot {
            table,
            search,
            proof_shard,
            team_shards: layout.shards(),
            lists_budget: lists_budget(prover.memory),
            space,
            index,
            prover: RwLock::new(None),
            accept_depth: AtomicU32::new(1),
            failure: Mutex::new(None),
        });
        match made {
            Ok(prover) => *slot.prover.write().expect("prover lock") = Some(prover),
            Err(why) => slot.fail(why),
        }
        tracing::info!(
            table,
            team = if search == 1 { "A" } else { "B" },
            proof_shard,
            entries = %entries_kept,
            "proving a shard of the table's file"
        );
        self.proof_peers = Some(Arc::new(peers));
        *self.state.proof.write().expect("proof lock") = Some(slot.clone());
        Ok(self.proof_report(&slot, StepReport::default()))
    }

    /// `ProofExpand`: the prover's layer expanded, the other proof shards' successors pushed
    /// to their provers.
    pub(super) async fn proof_expand(&mut self, layer: LayerStep) -> Result<StepReport> {
        let slot = self.proof_slot(layer.table)?;
        let peers = self
            .proof_peers
            .clone()
            .ok_or_else(|| Error::Refused("no proof peers".into()))?;
        let handle = tokio::runtime::Handle::current();
        let (job_id, level) = (self.job_id.clone(), self.config.worker.zstd_level);
        let liar = test_liar(self.config.shard);
        let dies = test_exit_in_proof(self.config.shard) && layer.depth == 1;
        let (expanding, pool) = (slot.clone(), self.pool.clone());
        let (sent_states, sent_bytes) = tokio::task::spawn_blocking(move || -> Result<_> {
            let slot = expanding;
            if slot.failure().is_some() {
                return Ok((0, 0));
            }
            let shape = slot.shape(layer.depth + 1);
            let gone: Vec<AtomicBool> = (0..slot.team_shards)
                .map(|_| AtomicBool::new(false))
                .collect();
            // A part of a list pushed to proof shard `to`: the bytes sent.
            let push_part = |to: u32, list: &[u64]| -> Result<u64> {
                let encoded = encode_region_states(&shape, 0..slot.index.states(), list)?;
                let packed = zstd_frames::compress(&encoded, level)
                    .map_err(|e| Error::Start(format!("cannot compress a list: {e}")))?;
                let request = PushRequest {
                    job_id: job_id.clone(),
                    table: layer.table,
                    depth: layer.depth + 1,
                    from_shard: slot.proof_shard,
                    to_shard: to,
                    count: list.len() as u64,
                    list_bytes: encoded.len() as u64,
                    crc32: crc32fast::hash(&packed),
                    list: packed,
                    search: slot.search,
                };
                push_list(&peers, &handle, &request, &gone)
            };
            // The list pushed to proof shard `to`, in parts a peer takes: the bytes sent.
            let push = |to: u32, list: &[u64]| push_in_parts(list, |part| push_part(to, part));
            let prover = slot.prover.read().expect("prover lock");
            let Some(prover) = prover.as_ref() else {
                return Ok((0, 0));
            };
            // The prover's sets expanded on the worker's threads, a range each at a time.
            let threads = pool.current_num_threads();
            let ranges = set_ranges(&slot.index, false, threads as u64 * 4);
            let list_states = list_states(
                threads,
                (slot.team_shards as usize).saturating_sub(1),
                slot.lists_budget,
            );
            let expanded: Vec<ProofExpanded> = pool.install(|| {
                ranges
                    .par_iter()
                    .map(|sets| {
                        let mut done = ProofExpanded::default();
                        let mut send = |to: u32, list: Vec<u64>| -> tilepdb_proof::Result<()> {
                            if liar && layer.depth + 1 == 3 {
                                return Ok(());
                            }
                            match push(to, &list) {
                                Ok(_) if dies => die_in_proof(),
                                Ok(sent) => {
                                    done.states += list.len() as u64;
                                    done.bytes += sent;
                                    Ok(())
                                }
                                Err(e) => {
                                    let why = e.to_string();
                                    done.transport = Some(e);
                                    Err(tilepdb_proof::Error::Domain(tilepdb_common::Error::Shard(
                                        why,
                                    )))
                                }
                            }
                        };
                        let verdict = prover.expand(sets.clone(), list_states, &mut send);
                        done.verdict = verdict.err();
                        done
                    })
                    .collect()
            });
            let (mut states, mut bytes) = (0, 0);
            for done in expanded {
                if let Some(e) = done.transport {
                    return Err(e);
                }
                if let Some(e) = done.verdict {
                    slot.fail(e.to_string());
                }
                states += done.states;
                bytes += done.bytes;
            }
            if dies {
                die_in_proof();
            }
            Ok((states, bytes))
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))??;
        let report = StepReport {
            sent_states,
            sent_bytes,
            ..StepReport::default()
        };
        Ok(self.proof_report(&slot, report))
    }

    /// `ProofFinish`: the prover's layer ended; the states it met in the next one.
    pub(super) async fn proof_finish(&mut self, layer: LayerStep) -> Result<StepReport> {
        let slot = self.proof_slot(layer.table)?;
        let finishing = slot.clone();
        let added = tokio::task::spawn_blocking(move || {
            let slot = finishing;
            let mut prover = slot.prover.write().expect("prover lock");
            let added = match prover.as_mut().map(ShardProver::finish_layer) {
                Some(Ok(added)) => added,
                Some(Err(e)) => {
                    slot.fail(e.to_string());
                    0
                }
                None => 0,
            };
            slot.accept_depth.store(layer.depth + 2, Relaxed);
            added
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))?;
        let report = StepReport {
            added,
            ..StepReport::default()
        };
        Ok(self.proof_report(&slot, report))
    }

    /// `ProofClose`: the entries never met checked; the prover's counts; the prover let go.
    pub(super) async fn proof_close(&mut self, table: u32) -> Result<StepReport> {
        let slot = self.proof_slot(table)?;
        *self.state.proof.write().expect("proof lock") = None;
        self.proof_peers = None;
        let closing = slot.clone();
        let report = tokio::task::spawn_blocking(move || {
            let slot = closing;
            let prover = slot.prover.write().expect("prover lock").take();
            let mut report = StepReport::default();
            match prover.map(ShardProver::finish) {
                Some(Ok(tally)) => {
                    report.proof_histogram = tally.histogram;
                    report.proof_unreached = tally.unreached;
                }
                Some(Err(e)) => slot.fail(e.to_string()),
                None => {}
            }
            report
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))?;
        Ok(self.proof_report(&slot, report))
    }
}

/// Files of a prover's entries are named with this prefix in the shard's data directory.
const ENTRIES_FILE_PREFIX: &str = "proof-entries-";

/// The path of a new file of a prover's entries of table `table` in `dir` (made if missing),
/// a name no other prover of this process took; the files an earlier prover left (a worker
/// killed in a proof, on the same data directory) removed first. A prover still reading its
/// file when its name is removed keeps reading it; the file goes when the prover does.
fn new_entries_file(dir: &Path, table: u32) -> Result<PathBuf> {
    static MADE: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Checkpoint(format!("{}: {e}", dir.display())))?;
    let listed =
        std::fs::read_dir(dir).map_err(|e| Error::Checkpoint(format!("{}: {e}", dir.display())))?;
    for entry in listed.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(ENTRIES_FILE_PREFIX)
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(dir.join(format!(
        "{ENTRIES_FILE_PREFIX}table-{table}-{}-{}",
        std::process::id(),
        MADE.fetch_add(1, Relaxed)
    )))
}

/// The codes the coordinator's file stores for `ranges` of its entries of table `table`,
/// checked by count and CRC-32.
fn read_entries(
    handle: &tokio::runtime::Handle,
    control: &mut super::Control,
    job_id: &str,
    table: u32,
    ranges: &[std::ops::Range<u64>],
) -> Result<Vec<u8>> {
    let count: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let request = ReadEntriesRequest {
        job_id: job_id.to_string(),
        table,
        ranges: ranges
            .iter()
            .map(|r| EntryRange {
                start: r.start,
                end: r.end,
            })
            .collect(),
    };
    let answer = handle
        .block_on(control.read_entries(request))
        .map_err(|s| Error::Refused(format!("reading the file's entries: {}", s.message())))?
        .into_inner();
    if crc32fast::hash(&answer.codes) != answer.crc32 || answer.count != count {
        return Err(Error::Refused(format!(
            "the file's entries came with a wrong CRC-32 or count ({} for {count})",
            answer.count
        )));
    }
    let codes = zstd_frames::decompress(
        &answer.codes,
        usize::try_from(count).map_err(|_| Error::Refused("too many entries".into()))?,
    )
    .map_err(|e| Error::Refused(format!("the file's entries do not decompress: {e}")))?;
    if codes.len() as u64 != count {
        return Err(Error::Refused(format!(
            "{} codes of the file's entries where {count} were asked for",
            codes.len()
        )));
    }
    Ok(codes)
}
