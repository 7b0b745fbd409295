//! Results of tasks: a header checked against the job ([`Job::check_result`]), its list of
//! region-index states checked in full ([`Job::check_reached`]), then merged ([`Job::commit`]):
//! each state not seen yet gets the next layer's code (the engine's `finish_layer` records the
//! depths of the next layer's states, as for in-process workers).
//!
//! A result refused as invalid for its worker's own lease gives that lease up
//! ([`Job::give_up_lease`]): the task goes to the next worker that asks, not one lease timeout
//! later (a worker that delivers garbage and goes silent would otherwise hold its task that
//! long, each time it leases one).

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use tilepdb_common::wire::TaskId;
use tilepdb_common::wire::region_lists::walk_region_states;

use super::audit::Sender;
use super::job::{Job, Refusal, Stage, banned};
use super::lease::Verdict;

/// What a result says of itself: its sender, its task and lease, and the sizes of what it
/// lists (the service layer makes it from the wire's header, [`super::wire::result_claim`],
/// which checks that the task id and the table and depth it names agree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultClaim {
    /// The worker that delivers it.
    pub worker: u64,
    /// The task it is the result of.
    pub task: TaskId,
    /// The attempt it was leased for.
    pub attempt: u64,
    /// The task's tile sets, as the result names them.
    pub ranks: Range<u64>,
    /// The states the result lists.
    pub reached_states: u64,
    /// The bytes that list them.
    pub reached_bytes: u64,
    /// States the result expanded.
    pub expanded: u64,
    /// Successors it generated.
    pub generated: u64,
}

/// What to do with a result whose header was checked.
pub enum ResultCheck {
    /// Needed: read its chunks and commit it.
    Accept(AcceptedResult),
    /// Valid but not needed (the task is done, or its layer is over).
    Drop(&'static str),
}

/// The lease a result was delivered for (its holder checked).
#[derive(Clone, Copy, Debug)]
pub struct ResultLease {
    /// The task's table.
    pub table: usize,
    /// The depth of the layer expanded.
    pub depth: u32,
    /// The task's index in its layer.
    pub index: usize,
    /// The attempt leased.
    pub attempt: u64,
    /// The worker it was leased to (who delivered the result).
    pub worker: u64,
}

/// A result to be read and merged.
pub struct AcceptedResult {
    /// The lease it was delivered for (the task, its layer, the attempt and its worker).
    pub lease: ResultLease,
    /// The task's tile sets.
    pub ranks: Range<u64>,
    /// All states of the table (on its index).
    pub states: u64,
    /// The states the result lists.
    pub reached_states: u64,
    /// The bytes that list them.
    pub reached_bytes: u64,
    /// States the result expanded.
    pub expanded: u64,
    /// Successors it generated.
    pub generated: u64,
}

impl Job {
    /// Checks that `worker` may deliver a result (known, not banned), and counts it as heard
    /// of: the first check of a result, before its header is read.
    pub fn check_sender(&self, worker: u64) -> Result<(), Refusal> {
        let mut st = self.lock();
        if st.workers.is_banned(worker) {
            return Err(banned());
        }
        st.workers.seen(worker, Instant::now())?;
        Ok(())
    }

    /// Checks a result's claim against the job; says whether to read and merge it.
    pub fn check_result(&self, h: &ResultClaim) -> Result<ResultCheck, Refusal> {
        let mut st = self.lock();
        if st.workers.is_banned(h.worker) {
            return Err(banned());
        }
        st.workers.seen(h.worker, Instant::now())?;
        let bad = |m: String| Err(Refusal::Invalid(m));
        let id = h.task;
        let table = id.table as usize;
        let (Some(space), Some(search_index)) = (self.spaces.get(table), self.indexes.get(table))
        else {
            return bad(format!(
                "table {table} of a job of {} tables",
                self.spaces.len()
            ));
        };
        let units = search_index.unit_count(space);
        if h.ranks.start >= h.ranks.end || h.ranks.end > units {
            return bad(format!(
                "tile sets {}..{} are outside the table's 0..{units}",
                h.ranks.start, h.ranks.end,
            ));
        }
        let table_states = search_index.states(space);
        let current = (st.table, st.depth);
        if (table, id.depth) < current || matches!(st.stage, Stage::Done) {
            return Ok(ResultCheck::Drop("its layer is over"));
        }
        let layer = match &st.stage {
            Stage::Expanding(layer) if (table, id.depth) == current => layer,
            _ if (table, id.depth) == current => {
                return Ok(ResultCheck::Drop("its layer is being finished"));
            }
            _ => {
                return bad(format!(
                    "task of table {table} depth {} while the job is at table {} depth {}",
                    id.depth, current.0, current.1
                ));
            }
        };
        let index = id.index as usize;
        let states = match layer.tasks.check(index, &h.ranks, h.attempt, h.worker)? {
            Verdict::Drop(reason) => return Ok(ResultCheck::Drop(reason)),
            Verdict::Accept { states } => states,
        };
        drop(st);
        let lease = ResultLease {
            table,
            depth: id.depth,
            index,
            attempt: h.attempt,
            worker: h.worker,
        };
        // From here on the result is its holder's, for its own lease: a refusal gives the
        // lease up.
        if let Err(why) = self.check_sizes(h, table, states, table_states) {
            self.give_up_lease(lease, &why);
            return bad(why);
        }
        Ok(ResultCheck::Accept(AcceptedResult {
            lease,
            ranks: h.ranks.clone(),
            states: table_states,
            reached_states: h.reached_states,
            reached_bytes: h.reached_bytes,
            expanded: h.expanded,
            generated: h.generated,
        }))
    }

    /// Checks the sizes a result's header declares against what its task can produce: the
    /// states it reached, the bytes that list them, the states it expanded.
    ///
    /// Each state has at most `4k` moves (a pattern tile to a neighbouring cell), and at
    /// least one (a board with a free cell and a tile has a tile next to every region of
    /// free cells); moves are reversible, so a state reached has at most `4k` predecessors.
    /// So `n` states expanded reach from `ceil(n / 4k)` to `4kn` distinct states: a task
    /// with current states that reaches none, or too few, is refused.
    fn check_sizes(
        &self,
        h: &ResultClaim,
        table: usize,
        states: u64,
        table_states: u64,
    ) -> Result<(), String> {
        let moves = 4 * self.spaces[table].k() as u64;
        let most = states.saturating_mul(moves).min(table_states);
        if h.reached_states > most {
            return Err(format!(
                "{} states reached from {states} states expanded (at most {most})",
                h.reached_states
            ));
        }
        let least = states.div_ceil(moves.max(1));
        if h.reached_states < least {
            return Err(format!(
                "{} states reached from {states} states expanded (at least {least}: every \
                 state has a move, and a state has at most {moves} predecessors)",
                h.reached_states
            ));
        }
        // The result lists states of the next layer.
        let shape = self.list_shape(table, h.task.depth + 1);
        if h.reached_bytes > shape.max_bytes(h.reached_states) {
            return Err(format!(
                "{} bytes cannot list {} states",
                h.reached_bytes, h.reached_states
            ));
        }
        if h.expanded > states {
            return Err(format!(
                "{} states expanded of a task of {states}",
                h.expanded
            ));
        }
        Ok(())
    }

    /// Gives up `lease` (its result was refused as invalid: `why`): the task goes to the next
    /// worker that asks, and the waiting ones look again. Nothing happens if the lease is over
    /// (its layer finished, the task done or leased to another since).
    pub fn give_up_lease(&self, lease: ResultLease, why: &str) {
        let mut guard = self.lock();
        let st = &mut *guard;
        if (st.table, st.depth) != (lease.table, lease.depth) {
            return;
        }
        let Stage::Expanding(layer) = &mut st.stage else {
            return;
        };
        layer.tasks.release(lease.index, lease.attempt);
        if let Ok(w) = st.workers.seen(lease.worker, Instant::now()) {
            w.holding.retain(|&(_, a)| a != lease.attempt);
        }
        let name = st.workers.name(lease.worker);
        drop(guard);
        tracing::debug!(
            task = lease.index,
            worker = %name,
            "a result refused ({why}): its lease given up"
        );
        self.raise();
    }

    /// Checks in full that `bytes` list exactly the result's states, of the next layer, in the
    /// table (blocking: call off the async threads); nothing is merged from a bad list.
    pub fn check_reached(
        &self,
        r: &AcceptedResult,
        bytes: Vec<u8>,
    ) -> tilepdb_common::Result<CheckedReached> {
        let shape = self.list_shape(r.lease.table, r.lease.depth + 1);
        walk_region_states(&bytes, r.reached_states, &shape, 0..r.states, |_| {})?;
        Ok(CheckedReached { bytes })
    }

    /// Merges a result, its states checked (blocking: call off the async threads). Returns
    /// whether it was merged (false: another attempt of the task got there first).
    pub fn commit(&self, r: &AcceptedResult, reached: &CheckedReached) -> bool {
        let shape = self.list_shape(r.lease.table, r.lease.depth + 1);
        let sender = self.sender(r.lease.worker);
        self.merge(r, sender, |mark| {
            // Checked by `check_reached`: the walk cannot fail.
            let _ = walk_region_states(&reached.bytes, r.reached_states, &shape, 0..r.states, mark);
        })
    }

    /// Merges `states`, the coordinator's own result of the task of `r` (its worker's result
    /// differed: [`super::audit`]), in its place (blocking). Returns whether it was merged.
    pub fn commit_own(&self, r: &AcceptedResult, states: &[u64]) -> bool {
        self.merge(r, Sender::default(), |mark| {
            for &s in states {
                mark(s);
            }
        })
    }

    /// Merges the states `walk` gives for the task of `r` from `sender`, and records them for
    /// the audit.
    fn merge(
        &self,
        r: &AcceptedResult,
        sender: Sender,
        walk: impl FnOnce(&mut dyn FnMut(u64)),
    ) -> bool {
        let arrays = {
            let mut st = self.lock();
            if (st.table, st.depth) != (r.lease.table, r.lease.depth) {
                return false;
            }
            let Stage::Expanding(layer) = &mut st.stage else {
                return false;
            };
            if !layer.tasks.begin_merge(r.lease.index) {
                return false;
            }
            layer.arrays.clone()
        };
        let next = r.lease.depth + 1;
        let mut added = 0;
        let mut digest = self.audit.digest();
        walk(&mut |s| {
            digest.push(s);
            added += u64::from(arrays.mark_next(s, next));
        });
        drop(arrays);
        self.audit.merged(
            r.lease.table,
            r.lease.depth,
            &r.ranks,
            digest.finish(),
            sender,
        );
        self.counters.expanded.fetch_add(r.expanded, Relaxed);
        self.counters.generated.fetch_add(r.generated, Relaxed);
        self.counters.results_accepted.fetch_add(1, Relaxed);
        let mut guard = self.lock();
        let st = &mut *guard;
        st.states_found += added;
        st.workers.task_done(r.lease.index);
        let complete = match &mut st.stage {
            Stage::Expanding(layer) => {
                let complete = layer.tasks.complete(r.lease.index);
                st.tasks_done = layer.tasks.done();
                complete
            }
            _ => false,
        };
        drop(guard);
        if complete {
            self.raise();
        }
        true
    }
}

/// The list of a result's states, checked in full ([`Job::check_reached`]).
pub struct CheckedReached {
    bytes: Vec<u8>,
}

impl CheckedReached {
    /// The list's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
