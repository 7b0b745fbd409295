//! The tasks of the layer being expanded and their leases: [`LayerTasks`].
//!
//! A plain data structure: no lock (the job keeps it under its own) and no clock (whether a
//! holder is lost is asked of the caller, who knows the time, and the time is passed in), so
//! its rules are unit-tested in microseconds.
//!
//! A lease also has a deadline, set by the caller from the task's size: past it the task is
//! handed out again even if its holders are alive and heartbeating (a worker that leases
//! and never delivers cannot stall the layer).
//!
//! ```text
//!             lease                  check → Accept, begin_merge        complete
//!   Pending ─────────▶ Leased ────────────────────────────▶ Merging ──────────▶ Done
//!      ▲                 │ │
//!      └─────────────────┘ └─ lease of an expired task (every holder lost): a new attempt
//!   release of the last live lease                            joins the task, still Leased
//! ```
//!
//! Every attempt issued for a task stays valid for the whole layer: a late result of an
//! expired or released attempt is still accepted if the task is not merged yet, and dropped
//! (not rejected) once it is. A result naming an attempt never issued is rejected
//! ([`Rejection::Invalid`]); one naming an attempt issued to another worker is refused
//! ([`Rejection::NotYours`]) and changes nothing: the attempt's holder may still deliver.
//!
//! This module leases, releases and expires; `results` checks a delivered result against
//! the attempts issued and records its merge.

mod results;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Instant;

pub use results::{Rejection, Verdict};

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Waiting for a worker.
    Pending,
    /// Leased to one or more workers.
    Leased,
    /// A result is being merged.
    Merging,
    /// Its result is merged.
    Done,
}

/// One live lease: an attempt of a task and the worker that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The attempt's number.
    pub attempt: u64,
    /// The worker's id.
    pub worker: u64,
}

#[derive(Debug)]
struct Task {
    units: Range<u64>,
    /// Current-layer states of the task.
    states: u64,
    state: TaskState,
    /// Live leases.
    holders: Vec<LeaseHolder>,
    /// Every attempt issued for this task in this layer, with the worker it went to.
    issued: Vec<LeaseHolder>,
    /// When the last lease lapses even if its holder is alive.
    deadline: Option<Instant>,
}

/// A task just leased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leased {
    /// The task's index in its layer.
    pub index: usize,
    /// The units it covers.
    pub units: Range<u64>,
    /// Its current states.
    pub states: u64,
    /// If the task was taken from lost holders: those holders (their leases expired).
    pub expired: Vec<LeaseHolder>,
    /// Whether it was taken past its deadline from holders still alive.
    pub overdue: bool,
}

/// The tasks of one layer, their states and leases.
#[derive(Debug)]
pub struct LayerTasks {
    tasks: Vec<Task>,
    /// Pending tasks, the next to lease first.
    pending: VecDeque<usize>,
    done: usize,
}

impl LayerTasks {
    /// The tasks of a layer: their units and current states (a task of 0 states is done).
    pub fn new(units: Vec<Range<u64>>, states: &[u64]) -> LayerTasks {
        let tasks: Vec<Task> = units
            .into_iter()
            .zip(states)
            .map(|(units, &states)| Task {
                units,
                states,
                state: if states == 0 {
                    TaskState::Done
                } else {
                    TaskState::Pending
                },
                holders: Vec::new(),
                issued: Vec::new(),
                deadline: None,
            })
            .collect();
        let pending: VecDeque<usize> = (0..tasks.len())
            .filter(|&i| tasks[i].state == TaskState::Pending)
            .collect();
        let done = tasks.len() - pending.len();
        LayerTasks {
            tasks,
            pending,
            done,
        }
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the layer has no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Number of tasks done.
    pub fn done(&self) -> usize {
        self.done
    }

    /// Whether every task is done.
    pub fn is_complete(&self) -> bool {
        self.done == self.tasks.len()
    }

    /// Where task `index` is.
    pub fn state(&self, index: usize) -> Option<TaskState> {
        self.tasks.get(index).map(|t| t.state)
    }

    /// Leases a task to `worker` as `attempt` at `now`: the first pending one, else the
    /// first leased one whose every holder is `lost` or whose deadline is past (expired: its
    /// holders lose it). `deadline` gives the new lease's deadline from the task's states.
    /// `None` if every task is leased to live workers within their deadlines, merging or done.
    pub fn lease(
        &mut self,
        worker: u64,
        attempt: u64,
        now: Instant,
        deadline: impl Fn(u64) -> Instant,
        lost: impl Fn(u64) -> bool,
    ) -> Option<Leased> {
        let (index, expired, overdue) = if let Some(i) = self.pending.pop_front() {
            (i, Vec::new(), false)
        } else {
            let i = self.tasks.iter().position(|t| {
                t.state == TaskState::Leased
                    && (t.holders.iter().all(|h| lost(h.worker))
                        || t.deadline.is_some_and(|d| now > d))
            })?;
            let task = &mut self.tasks[i];
            let overdue = !task.holders.iter().all(|h| lost(h.worker));
            (i, std::mem::take(&mut task.holders), overdue)
        };
        let task = &mut self.tasks[index];
        task.state = TaskState::Leased;
        task.holders.push(LeaseHolder { attempt, worker });
        task.issued.push(LeaseHolder { attempt, worker });
        task.deadline = Some(deadline(task.states));
        Some(Leased {
            index,
            units: task.units.clone(),
            states: task.states,
            expired,
            overdue,
        })
    }

    /// The earliest deadline of a leased task (when a task may next be handed out again
    /// though its holders are alive).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.tasks
            .iter()
            .filter(|t| t.state == TaskState::Leased)
            .filter_map(|t| t.deadline)
            .min()
    }

    /// Gives up `attempt`'s lease of task `index`; a task left without live leases is the
    /// next to lease (its attempts stay valid: a late result is still welcome).
    pub fn release(&mut self, index: usize, attempt: u64) {
        let Some(task) = self.tasks.get_mut(index) else {
            return;
        };
        if task.state != TaskState::Leased {
            return;
        }
        task.holders.retain(|h| h.attempt != attempt);
        if task.holders.is_empty() {
            task.state = TaskState::Pending;
            self.pending.push_front(index);
        }
    }

    /// The holders of the live leases of each leased task.
    pub fn leased(&self) -> impl Iterator<Item = &[LeaseHolder]> {
        self.tasks
            .iter()
            .filter(|t| t.state == TaskState::Leased)
            .map(|t| t.holders.as_slice())
    }

    /// The holders of task `index`'s live leases.
    pub fn holders(&self, index: usize) -> &[LeaseHolder] {
        self.tasks.get(index).map_or(&[], |t| &t.holders)
    }
}
