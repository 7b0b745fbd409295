//! Results of tasks: a header checked against the job ([`Job::check_result`]), then the
//! result merged ([`Job::commit`]) with the same [`LayerMerge`] as in-process workers.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use tilepdb_common::wire::TaskId;
use tilepdb_common::wire::proto::ResultHeader;
use tilepdb_common::wire::states::{CheckedStates, ListShape};

use super::job::{Job, Refusal, Stage};
use super::lease::Verdict;
use crate::merge::LayerMerge;

/// What to do with a result whose header was checked.
pub enum ResultCheck {
    /// Needed: read its chunks and commit it.
    Accept(AcceptedResult),
    /// Valid but not needed (the task is done, or its layer is over).
    Drop(&'static str),
}

/// A result to be read and merged.
pub struct AcceptedResult {
    /// The task's index in its layer.
    pub index: usize,
    /// Its table and layer.
    pub table: usize,
    /// The depth of the layer expanded.
    pub depth: u32,
    /// All states of the table.
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
    /// Checks a result's header against the job; says whether to read and merge it.
    pub fn check_result(&self, h: &ResultHeader) -> Result<ResultCheck, Refusal> {
        let mut st = self.lock();
        st.workers.seen(h.worker_id, Instant::now())?;
        let bad = |m: String| Err(Refusal::Invalid(m));
        let Some(id) = TaskId::from_u64(h.task_id) else {
            return bad(format!("task id {:#x} was never issued", h.task_id));
        };
        if id.table != h.table || id.depth != h.depth {
            return bad(format!(
                "task id {:#x} names table {} depth {}, the header table {} depth {}",
                h.task_id, id.table, id.depth, h.table, h.depth
            ));
        }
        let table = id.table as usize;
        let Some(space) = self.spaces.get(table) else {
            return bad(format!(
                "table {table} of a job of {} tables",
                self.spaces.len()
            ));
        };
        if h.first_rank >= h.end_rank || h.end_rank > space.placements() {
            return bad(format!(
                "ranks {}..{} are outside the table's 0..{}",
                h.first_rank,
                h.end_rank,
                space.placements()
            ));
        }
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
        let states =
            match layer
                .tasks
                .check(index, &(h.first_rank..h.end_rank), h.attempt, h.worker_id)?
            {
                Verdict::Drop(reason) => return Ok(ResultCheck::Drop(reason)),
                Verdict::Accept { states } => states,
            };
        // Each state has at most 4 moves per pattern tile.
        let most = (states * 4 * space.k() as u64).min(space.states());
        if h.reached_states > most {
            return bad(format!(
                "{} states reached from {states} states expanded (at most {most})",
                h.reached_states
            ));
        }
        // The result lists states of the next layer.
        if h.reached_bytes > ListShape::new(space, id.depth + 1).max_bytes(h.reached_states) {
            return bad(format!(
                "{} bytes cannot list {} states",
                h.reached_bytes, h.reached_states
            ));
        }
        if h.expanded > states {
            return bad(format!(
                "{} states expanded of a task of {states}",
                h.expanded
            ));
        }
        Ok(ResultCheck::Accept(AcceptedResult {
            index,
            table,
            depth: id.depth,
            states: space.states(),
            reached_states: h.reached_states,
            reached_bytes: h.reached_bytes,
            expanded: h.expanded,
            generated: h.generated,
        }))
    }

    /// Merges a result, its states checked (blocking: call off the async threads). Returns
    /// whether it was merged (false: another attempt of the task got there first).
    pub fn commit(&self, r: &AcceptedResult, reached: &CheckedStates) -> bool {
        let arrays = {
            let mut st = self.lock();
            if (st.table, st.depth) != (r.table, r.depth) {
                return false;
            }
            let Stage::Expanding(layer) = &mut st.stage else {
                return false;
            };
            if !layer.tasks.begin_merge(r.index) {
                return false;
            }
            layer.arrays.clone()
        };
        let space = &self.spaces[r.table];
        let mut merge = LayerMerge::new(
            &arrays.codes,
            &arrays.depths,
            space.rule(),
            space.slots(),
            r.depth + 1,
        );
        reached.for_each(|s| tilepdb_worker::ReachedSink::reached(&mut merge, s));
        let added = merge.added;
        drop(arrays);
        self.counters.expanded.fetch_add(r.expanded, Relaxed);
        self.counters.generated.fetch_add(r.generated, Relaxed);
        self.counters.results_accepted.fetch_add(1, Relaxed);
        let mut guard = self.lock();
        let st = &mut *guard;
        st.states_found += added;
        st.workers.task_done(r.index);
        let complete = match &mut st.stage {
            Stage::Expanding(layer) => {
                let complete = layer.tasks.complete(r.index);
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
