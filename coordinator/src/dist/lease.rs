//! The tasks of the layer being expanded and their leases: [`LayerTasks`].
//!
//! A plain data structure: no lock (the job keeps it under its own) and no clock (whether a
//! holder is lost is asked of the caller, who knows the time), so its rules are unit-tested
//! in microseconds.
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
//! (not rejected) once it is. A result naming an attempt never issued is rejected.

use std::collections::VecDeque;
use std::ops::Range;

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
    /// Every attempt issued for this task in this layer.
    issued: Vec<u64>,
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
}

/// What to do with a result of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Needed: read it and merge it. The task's current states.
    Accept {
        /// The task's current states.
        states: u64,
    },
    /// Valid, not needed.
    Drop(&'static str),
}

/// A result that names a task or an attempt the layer never had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejection(pub String);

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

    /// Leases a task to `worker` as `attempt`: the first pending one, else the first leased
    /// one whose every holder is `lost` (expired: its holders lose it). `None` if every task
    /// is leased to live workers, merging or done.
    pub fn lease(
        &mut self,
        worker: u64,
        attempt: u64,
        lost: impl Fn(u64) -> bool,
    ) -> Option<Leased> {
        let (index, expired) = if let Some(i) = self.pending.pop_front() {
            (i, Vec::new())
        } else {
            let i = self.tasks.iter().position(|t| {
                t.state == TaskState::Leased && t.holders.iter().all(|h| lost(h.worker))
            })?;
            (i, std::mem::take(&mut self.tasks[i].holders))
        };
        let task = &mut self.tasks[index];
        task.state = TaskState::Leased;
        task.holders.push(LeaseHolder { attempt, worker });
        task.issued.push(attempt);
        Some(Leased {
            index,
            units: task.units.clone(),
            states: task.states,
            expired,
        })
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

    /// Checks a result of attempt `attempt` of task `index` that says it covers `units`.
    pub fn check(
        &self,
        index: usize,
        units: &Range<u64>,
        attempt: u64,
    ) -> Result<Verdict, Rejection> {
        let Some(task) = self.tasks.get(index) else {
            return Err(Rejection(format!(
                "task {index} of a layer of {} tasks",
                self.tasks.len()
            )));
        };
        if task.units != *units {
            return Err(Rejection(format!(
                "ranks {}..{} are not task {index}'s {:?}",
                units.start, units.end, task.units
            )));
        }
        if !task.issued.contains(&attempt) {
            return Err(Rejection(format!(
                "attempt {attempt} of task {index} was never issued"
            )));
        }
        if matches!(task.state, TaskState::Done | TaskState::Merging) {
            return Ok(Verdict::Drop("the task is done already"));
        }
        Ok(Verdict::Accept {
            states: task.states,
        })
    }

    /// Starts merging a result of task `index`; false if another result got there first.
    pub fn begin_merge(&mut self, index: usize) -> bool {
        match self.tasks.get_mut(index) {
            Some(t) if matches!(t.state, TaskState::Pending | TaskState::Leased) => {
                t.state = TaskState::Merging;
                true
            }
            _ => false,
        }
    }

    /// Marks the merge of task `index` done; whether the layer is complete.
    pub fn complete(&mut self, index: usize) -> bool {
        if let Some(t) = self.tasks.get_mut(index)
            && t.state == TaskState::Merging
        {
            t.state = TaskState::Done;
            t.holders.clear();
            self.done += 1;
            self.pending.retain(|&i| i != index);
        }
        self.is_complete()
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::dist::workers::Workers;

    const TIMEOUT: Duration = Duration::from_millis(100);

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    fn lost(workers: &Workers, now: Instant) -> impl Fn(u64) -> bool + '_ {
        move |id| workers.is_lost(id, now)
    }

    fn three_tasks() -> LayerTasks {
        LayerTasks::new(vec![0..10, 10..20, 20..30], &[5, 6, 7])
    }

    #[test]
    fn a_silent_workers_lease_expires_and_goes_to_another() {
        let t0 = Instant::now();
        let mut workers = Workers::new(1, TIMEOUT);
        let a = workers.register("a", t0);
        let b = workers.register("b", t0);
        let mut tasks = LayerTasks::new(std::iter::once(0..10).collect(), &[5]);
        let first = tasks
            .lease(a, 100, |w| workers.is_lost(w, ms(t0, 10)))
            .unwrap();
        assert_eq!(first.index, 0);
        // b asks while a is still alive: nothing to lease.
        workers.seen(b, ms(t0, 50)).unwrap();
        assert_eq!(
            tasks.lease(b, 101, |w| workers.is_lost(w, ms(t0, 50))),
            None
        );
        // a silent for longer than the timeout: its lease expires and b gets the task.
        let now = ms(t0, 150);
        workers.seen(b, now).unwrap();
        let again = tasks.lease(b, 102, |w| workers.is_lost(w, now)).unwrap();
        assert_eq!(again.index, 0);
        assert_eq!(
            again.expired,
            vec![LeaseHolder {
                attempt: 100,
                worker: a
            }]
        );
        assert_eq!(
            tasks.holders(0),
            &[LeaseHolder {
                attempt: 102,
                worker: b
            }]
        );
        assert_eq!(tasks.state(0), Some(TaskState::Leased));
    }

    #[test]
    fn a_late_result_of_an_expired_attempt_is_accepted_once() {
        let t0 = Instant::now();
        let mut workers = Workers::new(1, TIMEOUT);
        let a = workers.register("a", t0);
        let b = workers.register("b", t0);
        let mut tasks = LayerTasks::new(std::iter::once(0..10).collect(), &[5]);
        tasks.lease(a, 100, |w| workers.is_lost(w, t0)).unwrap();
        let now = ms(t0, 200);
        workers.seen(b, now).unwrap();
        tasks.lease(b, 101, |w| workers.is_lost(w, now)).unwrap();
        // a comes back with its result: still welcome, the task is not merged yet.
        assert_eq!(
            tasks.check(0, &(0..10), 100),
            Ok(Verdict::Accept { states: 5 })
        );
        assert!(tasks.begin_merge(0));
        assert!(tasks.complete(0));
        // b's result of the same task is then dropped, not rejected.
        assert_eq!(
            tasks.check(0, &(0..10), 101),
            Ok(Verdict::Drop("the task is done already"))
        );
        assert!(!tasks.begin_merge(0));
    }

    #[test]
    fn a_duplicate_after_done_is_dropped_and_forgeries_are_rejected() {
        let mut tasks = three_tasks();
        let leased = tasks.lease(9, 100, |_| false).unwrap();
        assert_eq!(
            (leased.index, leased.units.clone(), leased.states),
            (0, 0..10, 5)
        );
        assert_eq!(
            tasks.check(0, &(0..10), 100),
            Ok(Verdict::Accept { states: 5 })
        );
        assert!(tasks.begin_merge(0));
        // A second copy of the result while the first merges: dropped, not merged twice.
        assert_eq!(
            tasks.check(0, &(0..10), 100),
            Ok(Verdict::Drop("the task is done already"))
        );
        assert!(!tasks.begin_merge(0));
        assert!(!tasks.complete(0));
        assert_eq!(tasks.done(), 1);
        assert!(!tasks.complete(0), "completing twice counts once");
        assert_eq!(tasks.done(), 1);
        assert!(
            tasks.check(0, &(0..10), 99).is_err(),
            "an attempt never issued"
        );
        assert!(
            tasks.check(0, &(0..11), 100).is_err(),
            "not the task's units"
        );
        assert!(tasks.check(7, &(0..10), 100).is_err(), "no such task");
        assert!(
            tasks.check(1, &(10..20), 100).is_err(),
            "attempt of another task"
        );
    }

    #[test]
    fn a_released_task_is_the_next_to_lease() {
        let mut tasks = three_tasks();
        assert_eq!(tasks.lease(1, 100, |_| false).unwrap().index, 0);
        assert_eq!(tasks.lease(1, 101, |_| false).unwrap().index, 1);
        tasks.release(1, 101);
        assert_eq!(tasks.state(1), Some(TaskState::Pending));
        // Task 1 goes before task 2, which was never leased.
        assert_eq!(tasks.lease(2, 102, |_| false).unwrap().index, 1);
        assert_eq!(tasks.lease(2, 103, |_| false).unwrap().index, 2);
        assert_eq!(tasks.lease(2, 104, |_| false), None);
        // The released attempt stays valid.
        assert_eq!(
            tasks.check(1, &(10..20), 101),
            Ok(Verdict::Accept { states: 6 })
        );
    }

    #[test]
    fn a_task_with_another_live_lease_stays_leased_on_release() {
        let mut tasks = LayerTasks::new(std::iter::once(0..10).collect(), &[5]);
        tasks.lease(1, 100, |_| false).unwrap();
        tasks.lease(2, 101, |w| w == 1).unwrap();
        assert_eq!(
            tasks.holders(0),
            &[LeaseHolder {
                attempt: 101,
                worker: 2
            }]
        );
        tasks.lease(3, 102, |w| w == 2).unwrap();
        tasks.release(0, 102);
        assert_eq!(tasks.state(0), Some(TaskState::Pending));
    }

    #[test]
    fn a_worker_lost_mid_layer_loses_only_its_tasks() {
        let t0 = Instant::now();
        let mut workers = Workers::new(1, TIMEOUT);
        let a = workers.register("a", t0);
        let b = workers.register("b", t0);
        let mut tasks = three_tasks();
        assert_eq!(tasks.lease(a, 100, lost(&workers, t0)).unwrap().index, 0);
        assert_eq!(tasks.lease(b, 101, lost(&workers, t0)).unwrap().index, 1);
        assert_eq!(tasks.lease(b, 102, lost(&workers, t0)).unwrap().index, 2);
        // b finishes task 1; a goes silent.
        assert!(tasks.begin_merge(1));
        assert!(!tasks.complete(1));
        let now = ms(t0, 300);
        workers.seen(b, now).unwrap();
        // b takes a's task 0 (expired), not its own task 2 (b is alive).
        let taken = tasks.lease(b, 103, lost(&workers, now)).unwrap();
        assert_eq!(taken.index, 0);
        assert_eq!(
            taken.expired,
            vec![LeaseHolder {
                attempt: 100,
                worker: a
            }]
        );
        assert_eq!(tasks.lease(b, 104, lost(&workers, now)), None);
        for i in [0, 2] {
            assert!(tasks.begin_merge(i));
        }
        assert!(!tasks.complete(0));
        assert!(tasks.complete(2));
        assert!(tasks.is_complete());
        assert_eq!(workers.alive(now), 1);
    }

    #[test]
    fn empty_tasks_start_done() {
        let tasks = LayerTasks::new(vec![0..10, 10..20], &[0, 3]);
        assert_eq!((tasks.len(), tasks.done()), (2, 1));
        assert_eq!(tasks.state(0), Some(TaskState::Done));
    }
}
