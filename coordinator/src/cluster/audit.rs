//! Results re-executed by the coordinator ([`Audit`]): a worker's result is only believed
//! when the coordinator, running the shared kernel on the same input, could have said so.
//!
//! * **Which results.** Each worker's first [`PROBATION`] results (a new registration starts
//!   over), then a random share of the others (`JobConfig::audit_fraction`), and every result
//!   of a table that failed its proof once (its second search is re-executed in full, so it
//!   is correct whatever the workers deliver: the engine builds a table at most twice).
//! * **What is compared.** The task's input is read from the layer's arrays (current states
//!   keep their code for the whole layer, so it is the input the worker was sent), expanded
//!   in the coordinator's pool with [`run_region_task`], and the distinct states reached
//!   compared with the worker's list, state for state.
//! * **A difference** bans the worker ([`super::workers::Workers::ban`]): its leases go
//!   back, its further requests and a registration under its name from its address are
//!   refused, a warning names it, and the coordinator's own result is merged instead.
//! * **Finding the results of a table that failed its proof.** Each merged result is
//!   remembered by its task (depth and tile sets) with digests of its input and of its
//!   states. When the table fails its proof, those records are kept aside; in its second
//!   search, every task re-executed whose input has the same digest as in the first search
//!   (the layers before the first wrong result are the same) must give the same states: the
//!   worker whose result differed is banned. Digests use keys drawn at random at start, so a
//!   worker cannot aim at a collision; a digest only ever chooses whom to ban, never what is
//!   merged.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher, RandomState};
use std::net::IpAddr;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, MutexGuard, OnceLock};

use tilepdb_common::wire::region_lists::walk_region_states;
use tilepdb_common::{BlankRule, StateCodes};
use tilepdb_worker::region_task::{RegionTable, run_region_task};

use super::job::{Job, Stage};
use super::results::{AcceptedResult, CheckedReached};

/// The share of results (after each worker's first [`PROBATION`]) re-executed by default.
pub const DEFAULT_AUDIT_FRACTION: f64 = 1.0 / 16.0;

/// How many of each worker's first results are all re-executed (with a share above zero).
pub const PROBATION: u64 = 2;

/// A task of a table's search, as two searches of the table cut it alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct TaskKey {
    depth: u32,
    first: u64,
    end: u64,
}

impl TaskKey {
    fn new(depth: u32, ranks: &Range<u64>) -> TaskKey {
        TaskKey {
            depth,
            first: ranks.start,
            end: ranks.end,
        }
    }
}

/// Who a result came from: its worker's id, name and address (id 0: the coordinator).
#[derive(Clone, Debug, Default)]
pub struct Sender {
    /// The worker's id (0: the coordinator's own result).
    pub id: u64,
    /// The name it registered with (with its number).
    pub name: String,
    /// The name it gave.
    pub given_name: String,
    /// The address it registered from.
    pub peer: Option<IpAddr>,
}

/// A merged result, remembered until its table is written: the digests of its input and of
/// its states, and its worker's id (0: the coordinator's own).
#[derive(Clone, Copy, Debug)]
struct Merged {
    input: u64,
    output: u64,
    worker: u64,
}

/// The results re-executed by the coordinator and the records that find wrong ones (see the
/// module's documentation).
pub struct Audit {
    fraction: f64,
    keys: RandomState,
    regions: Vec<OnceLock<RegionTable>>,
    state: Mutex<AuditState>,
}

#[derive(Default)]
struct AuditState {
    /// Results of each worker re-executed so far.
    audited: HashMap<u64, u64>,
    /// Tables whose every result is re-executed (they failed their proof once).
    full: HashSet<usize>,
    /// The digest of each task's input, as leased in the current search of its table.
    inputs: HashMap<(usize, TaskKey), u64>,
    /// The results merged in the current search of each table.
    merged: HashMap<usize, HashMap<TaskKey, Merged>>,
    /// The results merged in the search of each table that failed its proof.
    failed: HashMap<usize, HashMap<TaskKey, Merged>>,
    /// Who the workers of the results remembered are.
    senders: HashMap<u64, Sender>,
}

/// What the re-execution of a result found.
pub enum Audited {
    /// It was not re-executed.
    Skipped,
    /// The coordinator reached the same states.
    Agrees,
    /// The coordinator reached other states: these (the result is wrong).
    Differs(Vec<u64>),
}

/// The digest of a list of states.
pub struct Digest(std::hash::DefaultHasher, u64);

impl Digest {
    /// Adds the next state of the list.
    pub fn push(&mut self, state: u64) {
        self.0.write_u64(state);
        self.1 += 1;
    }

    /// The digest of the states pushed.
    pub fn finish(mut self) -> u64 {
        self.0.write_u64(self.1);
        self.0.finish()
    }
}

impl Audit {
    /// The audit of a job of `tables` tables, re-executing `fraction` of the results (0:
    /// only the tables that failed their proof; at least 0, at most 1).
    pub fn new(fraction: f64, tables: usize) -> Audit {
        Audit {
            fraction: if fraction.is_finite() {
                fraction.clamp(0.0, 1.0)
            } else {
                0.0
            },
            keys: RandomState::new(),
            regions: (0..tables).map(|_| OnceLock::new()).collect(),
            state: Mutex::new(AuditState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, AuditState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A digest to push a list of states into (keys of this process).
    pub fn digest(&self) -> Digest {
        Digest(self.keys.build_hasher(), 0)
    }

    /// The digest of `states`.
    fn digest_of(&self, states: &[u64]) -> u64 {
        let mut d = self.digest();
        for &s in states {
            d.push(s);
        }
        d.finish()
    }

    /// Records the digest of the input of the task of `ranks` at `depth` of `table`, as it
    /// was leased.
    pub fn note_input(&self, table: usize, depth: u32, ranks: &Range<u64>, input: u64) {
        self.lock()
            .inputs
            .insert((table, TaskKey::new(depth, ranks)), input);
    }

    /// Whether to re-execute the next result of `worker` for `table` (counts it).
    fn should_audit(&self, table: usize, worker: u64) -> bool {
        let mut st = self.lock();
        if st.full.contains(&table) {
            return true;
        }
        if self.fraction <= 0.0 {
            return false;
        }
        let audited = st.audited.entry(worker).or_default();
        if *audited < PROBATION || rand::random::<f64>() < self.fraction {
            *audited += 1;
            return true;
        }
        false
    }

    /// Records a merged result of the task of `ranks` at `depth` of `table`: its states'
    /// digest `output` and its sender.
    pub fn merged(
        &self,
        table: usize,
        depth: u32,
        ranks: &Range<u64>,
        output: u64,
        sender: Sender,
    ) {
        let key = TaskKey::new(depth, ranks);
        let mut st = self.lock();
        let Some(&input) = st.inputs.get(&(table, key)) else {
            return;
        };
        let worker = sender.id;
        if worker != 0 && !st.senders.contains_key(&worker) {
            st.senders.insert(worker, sender);
        }
        st.merged.entry(table).or_default().insert(
            key,
            Merged {
                input,
                output,
                worker,
            },
        );
    }

    /// Table `table` failed its proof: its records are kept aside to be compared with its
    /// second search, every result of which is re-executed.
    pub fn table_rejected(&self, table: usize) {
        let mut st = self.lock();
        st.full.insert(table);
        let merged = st.merged.remove(&table).unwrap_or_default();
        st.failed.insert(table, merged);
        st.inputs.retain(|(t, _), _| *t != table);
    }

    /// Table `table` is written: its records go.
    pub fn table_written(&self, table: usize) {
        let mut st = self.lock();
        st.full.remove(&table);
        st.merged.remove(&table);
        st.failed.remove(&table);
        st.inputs.retain(|(t, _), _| *t != table);
        if st.merged.is_empty() && st.failed.is_empty() {
            st.senders.clear();
        }
    }

    /// Whether table `table` is searched again with every result re-executed.
    pub fn is_full(&self, table: usize) -> bool {
        self.lock().full.contains(&table)
    }

    /// The sender of a result merged in the search of `table` that failed its proof, for the
    /// same task on the same input, whose states differ from `output` (taken out: each is
    /// found once).
    fn earlier_liar(&self, table: usize, key: TaskKey, input: u64, output: u64) -> Option<Sender> {
        let mut st = self.lock();
        let failed = st.failed.get_mut(&table)?;
        let m = *failed.get(&key)?;
        if m.input != input || m.output == output {
            return None;
        }
        failed.remove(&key);
        let sender = st.senders.get(&m.worker).cloned();
        Some(sender.unwrap_or(Sender {
            id: m.worker,
            ..Sender::default()
        }))
    }
}

impl Job {
    /// The region tables the coordinator re-executes tasks of `table` with.
    fn region_table(&self, table: usize) -> &RegionTable {
        self.audit.regions[table].get_or_init(|| {
            RegionTable::shared(
                self.indexes[table].regions().clone(),
                self.spaces[table].rule() == BlankRule::Ignored,
            )
        })
    }

    /// Re-executes the result `r` (its states checked: `reached`) if the audit says so and
    /// compares (blocking: call off the async threads). A worker found wrong in the search of
    /// the table that failed its proof, for the same task on the same input, is banned here.
    pub fn audit_result(&self, r: &AcceptedResult, reached: &CheckedReached) -> Audited {
        let (table, depth) = (r.lease.table, r.lease.depth);
        if !self.audit.should_audit(table, r.lease.worker) {
            return Audited::Skipped;
        }
        let arrays = {
            let st = self.lock();
            match &st.stage {
                Stage::Expanding(layer) if (st.table, st.depth) == (table, depth) => {
                    layer.arrays.clone()
                }
                // The layer is over: the result will not be merged.
                _ => return Audited::Skipped,
            }
        };
        let own = self.indexes[table].unit_states(&self.spaces[table], &r.ranks);
        let mut input = Vec::new();
        arrays
            .codes
            .for_each_with_code(own, StateCodes::code_of_depth(depth), |s| input.push(s));
        drop(arrays);
        let region = self.region_table(table);
        let local = self
            .pool
            .install(|| run_region_task(region, r.ranks.clone(), &input));
        self.counters.results_audited.fetch_add(1, Relaxed);
        let key = TaskKey::new(depth, &r.ranks);
        let (input_digest, output_digest) = (
            self.audit.digest_of(&input),
            self.audit.digest_of(&local.reached),
        );
        if let Some(liar) = self
            .audit
            .earlier_liar(table, key, input_digest, output_digest)
        {
            self.ban(
                &liar,
                &format!(
                    "its result for table {table} depth {depth} tile sets {}..{} in the search \
                     that failed its proof differs from the coordinator's re-execution",
                    r.ranks.start, r.ranks.end
                ),
            );
        }
        let mut delivered = Vec::with_capacity(local.reached.len());
        let shape = self.list_shape(table, depth + 1);
        // Checked by `check_reached`: the walk cannot fail.
        let _ = walk_region_states(
            reached.bytes(),
            r.reached_states,
            &shape,
            0..r.states,
            |s| delivered.push(s),
        );
        if delivered == local.reached {
            Audited::Agrees
        } else {
            Audited::Differs(local.reached)
        }
    }

    /// Bans the worker `sender` (`why`: what it did): its leases go back to the layer, its
    /// further requests are refused, and so is a registration under its name from its
    /// address. A warning names it.
    pub fn ban(&self, sender: &Sender, why: &str) {
        if sender.id == 0 {
            return;
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.workers.is_banned(sender.id) {
            return;
        }
        let name = match st.workers.identity(sender.id) {
            Some(_) => st.workers.name(sender.id),
            None => sender.name.clone(),
        };
        let holding = st.workers.ban(sender.id, &sender.given_name, sender.peer);
        if let Stage::Expanding(layer) = &mut st.stage {
            for (index, attempt) in holding {
                layer.tasks.release(index, attempt);
            }
        }
        drop(guard);
        self.counters.workers_banned.fetch_add(1, Relaxed);
        tracing::warn!(
            worker = %name,
            peer = ?sender.peer,
            "worker banned: {why}; its further results and registrations are refused"
        );
        self.raise();
    }

    /// Who worker `worker` is (its name and address), for the records of the audit.
    pub fn sender(&self, worker: u64) -> Sender {
        let st = self.lock();
        let (given_name, peer) = st.workers.identity(worker).unwrap_or_default();
        Sender {
            id: worker,
            name: st.workers.name(worker),
            given_name,
            peer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of a search that failed its proof name the worker whose result differs on
    /// the same input, once; a different input names nobody.
    #[test]
    fn a_failed_search_names_the_result_that_differs_on_the_same_input() {
        let audit = Audit::new(0.0, 2);
        let ranks = 3..9;
        let liar = Sender {
            id: 7,
            name: "liar (#1)".into(),
            given_name: "liar".into(),
            peer: None,
        };
        audit.note_input(1, 4, &ranks, 11);
        audit.merged(1, 4, &ranks, 22, liar);
        audit.note_input(1, 5, &(0..3), 12);
        audit.merged(1, 5, &(0..3), 23, Sender::default());
        assert!(!audit.is_full(1));
        assert!(
            !audit.should_audit(1, 7),
            "a share of 0 re-executes nothing"
        );
        audit.table_rejected(1);
        assert!(audit.is_full(1) && audit.should_audit(1, 7));
        let key = |d| TaskKey::new(d, &ranks);
        assert!(
            audit.earlier_liar(1, key(4), 99, 33).is_none(),
            "another input"
        );
        assert!(
            audit.earlier_liar(1, key(4), 11, 22).is_none(),
            "the same states"
        );
        assert_eq!(audit.earlier_liar(1, key(4), 11, 33).map(|s| s.id), Some(7));
        assert!(
            audit.earlier_liar(1, key(4), 11, 33).is_none(),
            "found once"
        );
        audit.table_written(1);
        assert!(!audit.is_full(1));
    }

    /// Each worker's first results are re-executed, then about the share asked.
    #[test]
    fn probation_then_a_share() {
        let audit = Audit::new(1.0, 1);
        assert!((0..10).all(|_| audit.should_audit(0, 1)));
        let audit = Audit::new(1e-300, 1);
        assert!((0..PROBATION).all(|_| audit.should_audit(0, 1)));
        assert!((0..100).all(|_| !audit.should_audit(0, 1)));
        assert!(audit.should_audit(0, 2), "another worker is on probation");
        let audit = Audit::new(f64::NAN, 1);
        assert!(!audit.should_audit(0, 1));
    }
}
