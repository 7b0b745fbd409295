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

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Instant;

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

/// A result that the layer refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// It names a task or an attempt the layer never had.
    #[error("{0}")]
    Invalid(String),
    /// It names an attempt leased to another worker.
    #[error("{0}")]
    NotYours(String),
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

    /// Checks a result of attempt `attempt` of task `index`, delivered by `worker`, that says
    /// it covers `units`.
    pub fn check(
        &self,
        index: usize,
        units: &Range<u64>,
        attempt: u64,
        worker: u64,
    ) -> Result<Verdict, Rejection> {
        let Some(task) = self.tasks.get(index) else {
            return Err(Rejection::Invalid(format!(
                "task {index} of a layer of {} tasks",
                self.tasks.len()
            )));
        };
        if task.units != *units {
            return Err(Rejection::Invalid(format!(
                "ranks {}..{} are not task {index}'s {:?}",
                units.start, units.end, task.units
            )));
        }
        let Some(issued) = task.issued.iter().find(|h| h.attempt == attempt) else {
            return Err(Rejection::Invalid(format!(
                "attempt {attempt:#x} of task {index} was never issued"
            )));
        };
        if issued.worker != worker {
            return Err(Rejection::NotYours(format!(
                "attempt {attempt:#x} of task {index} was leased to another worker"
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

    fn now0() -> Instant {
        Instant::now()
    }

    /// A deadline that never comes within a test.
    fn far(_states: u64) -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[test]
    fn a_task_past_its_deadline_goes_to_another_though_its_holder_is_alive() {
        let t0 = Instant::now();
        let mut tasks = LayerTasks::new(vec![0..10, 10..20], &[5, 50]);
        // A deadline of 10 ms per state.
        let deadline = |states: u64| t0 + Duration::from_millis(10 * states);
        let alive = |_: u64| false;
        assert_eq!(tasks.lease(1, 100, t0, deadline, alive).unwrap().index, 0);
        assert_eq!(tasks.lease(1, 101, t0, deadline, alive).unwrap().index, 1);
        assert_eq!(tasks.next_deadline(), Some(ms(t0, 50)));
        // Within the deadline of task 0: nothing to lease.
        assert_eq!(tasks.lease(2, 102, ms(t0, 50), deadline, alive), None);
        // Past it: task 0 (the small one) goes to worker 2; task 1 keeps its lease.
        let later = |states: u64| ms(t0, 51) + Duration::from_millis(10 * states);
        let again = tasks.lease(2, 103, ms(t0, 51), later, alive).unwrap();
        assert_eq!((again.index, again.overdue), (0, true));
        assert_eq!(
            again.expired,
            vec![LeaseHolder {
                attempt: 100,
                worker: 1
            }]
        );
        assert_eq!(tasks.lease(2, 104, ms(t0, 51), later, alive), None);
        // The first holder's late result is still welcome, once.
        assert_eq!(
            tasks.check(0, &(0..10), 100, 1),
            Ok(Verdict::Accept { states: 5 })
        );
    }

    fn three_tasks() -> LayerTasks {
        LayerTasks::new(vec![0..10, 10..20, 20..30], &[5, 6, 7])
    }

    #[test]
    fn a_silent_workers_lease_expires_and_goes_to_another() {
        let t0 = Instant::now();
        let mut workers = Workers::new(TIMEOUT);
        let a = workers.register("a", t0).unwrap();
        let b = workers.register("b", t0).unwrap();
        let mut tasks = LayerTasks::new(std::iter::once(0..10).collect(), &[5]);
        let first = tasks
            .lease(a, 100, now0(), far, |w| workers.is_lost(w, ms(t0, 10)))
            .unwrap();
        assert_eq!(first.index, 0);
        // b asks while a is still alive: nothing to lease.
        workers.seen(b, ms(t0, 50)).unwrap();
        assert_eq!(
            tasks.lease(b, 101, now0(), far, |w| workers.is_lost(w, ms(t0, 50))),
            None
        );
        // a silent for longer than the timeout: its lease expires and b gets the task.
        let now = ms(t0, 150);
        workers.seen(b, now).unwrap();
        let again = tasks
            .lease(b, 102, now0(), far, |w| workers.is_lost(w, now))
            .unwrap();
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
        let mut workers = Workers::new(TIMEOUT);
        let a = workers.register("a", t0).unwrap();
        let b = workers.register("b", t0).unwrap();
        let mut tasks = LayerTasks::new(std::iter::once(0..10).collect(), &[5]);
        tasks
            .lease(a, 100, now0(), far, |w| workers.is_lost(w, t0))
            .unwrap();
        let now = ms(t0, 200);
        workers.seen(b, now).unwrap();
        tasks
            .lease(b, 101, now0(), far, |w| workers.is_lost(w, now))
            .unwrap();
        // a comes back with its result: still welcome, the task is not merged yet.
        assert_eq!(
            tasks.check(0, &(0..10), 100, a),
            Ok(Verdict::Accept { states: 5 })
        );
        assert!(tasks.begin_merge(0));
        assert!(tasks.complete(0));
        // b's result of the same task is then dropped, not rejected.
        assert_eq!(
            tasks.check(0, &(0..10), 101, b),
            Ok(Verdict::Drop("the task is done already"))
        );
        assert!(!tasks.begin_merge(0));
    }

    #[test]
    fn a_duplicate_after_done_is_dropped_and_forgeries_are_rejected() {
        let a = 9;
        let mut tasks = three_tasks();
        let leased = tasks.lease(a, 100, now0(), far, |_| false).unwrap();
        assert_eq!(
            (leased.index, leased.units.clone(), leased.states),
            (0, 0..10, 5)
        );
        assert_eq!(
            tasks.check(0, &(0..10), 100, a),
            Ok(Verdict::Accept { states: 5 })
        );
        assert!(tasks.begin_merge(0));
        // A second copy of the result while the first merges: dropped, not merged twice.
        assert_eq!(
            tasks.check(0, &(0..10), 100, a),
            Ok(Verdict::Drop("the task is done already"))
        );
        assert!(!tasks.begin_merge(0));
        assert!(!tasks.complete(0));
        assert_eq!(tasks.done(), 1);
        assert!(!tasks.complete(0), "completing twice counts once");
        assert_eq!(tasks.done(), 1);
        let invalid = |r| matches!(r, Err(Rejection::Invalid(_)));
        assert!(
            invalid(tasks.check(0, &(0..10), 99, a)),
            "an attempt never issued"
        );
        assert!(
            invalid(tasks.check(0, &(0..11), 100, a)),
            "not the task's units"
        );
        assert!(invalid(tasks.check(7, &(0..10), 100, a)), "no such task");
        assert!(
            invalid(tasks.check(1, &(10..20), 100, a)),
            "attempt of another task"
        );
    }

    #[test]
    fn a_result_for_another_workers_lease_is_refused_and_changes_nothing() {
        let (a, b) = (7, 8);
        let mut tasks = three_tasks();
        tasks.lease(a, 100, now0(), far, |_| false).unwrap();
        tasks.lease(b, 101, now0(), far, |_| false).unwrap();
        // b delivers for a's attempt (it knows it: say it saw the task): refused.
        assert!(matches!(
            tasks.check(0, &(0..10), 100, b),
            Err(Rejection::NotYours(_))
        ));
        // Nothing changed: a's lease is still live, and a's result is still welcome.
        assert_eq!(
            tasks.holders(0),
            &[LeaseHolder {
                attempt: 100,
                worker: a
            }]
        );
        assert_eq!(tasks.state(0), Some(TaskState::Leased));
        assert_eq!(
            tasks.check(0, &(0..10), 100, a),
            Ok(Verdict::Accept { states: 5 })
        );
        // A released attempt stays bound to its worker too.
        tasks.release(1, 101);
        assert!(matches!(
            tasks.check(1, &(10..20), 101, a),
            Err(Rejection::NotYours(_))
        ));
    }

    #[test]
    fn a_released_task_is_the_next_to_lease() {
        let mut tasks = three_tasks();
        assert_eq!(
            tasks.lease(1, 100, now0(), far, |_| false).unwrap().index,
            0
        );
        assert_eq!(
            tasks.lease(1, 101, now0(), far, |_| false).unwrap().index,
            1
        );
        tasks.release(1, 101);
        assert_eq!(tasks.state(1), Some(TaskState::Pending));
        // Task 1 goes before task 2, which was never leased.
        assert_eq!(
            tasks.lease(2, 102, now0(), far, |_| false).unwrap().index,
            1
        );
        assert_eq!(
            tasks.lease(2, 103, now0(), far, |_| false).unwrap().index,
            2
        );
        assert_eq!(tasks.lease(2, 104, now0(), far, |_| false), None);
        // The released attempt stays valid.
        assert_eq!(
            tasks.check(1, &(10..20), 101, 1),
            Ok(Verdict::Accept { states: 6 })
        );
    }

    #[test]
    fn a_task_with_another_live_lease_stays_leased_on_release() {
        let mut tasks = LayerTasks::new(std::iter::once(0..10).collect(), &[5]);
        tasks.lease(1, 100, now0(), far, |_| false).unwrap();
        tasks.lease(2, 101, now0(), far, |w| w == 1).unwrap();
        assert_eq!(
            tasks.holders(0),
            &[LeaseHolder {
                attempt: 101,
                worker: 2
            }]
        );
        tasks.lease(3, 102, now0(), far, |w| w == 2).unwrap();
        tasks.release(0, 102);
        assert_eq!(tasks.state(0), Some(TaskState::Pending));
    }

    #[test]
    fn a_worker_lost_mid_layer_loses_only_its_tasks() {
        let t0 = Instant::now();
        let mut workers = Workers::new(TIMEOUT);
        let a = workers.register("a", t0).unwrap();
        let b = workers.register("b", t0).unwrap();
        let mut tasks = three_tasks();
        assert_eq!(
            tasks
                .lease(a, 100, now0(), far, lost(&workers, t0))
                .unwrap()
                .index,
            0
        );
        assert_eq!(
            tasks
                .lease(b, 101, now0(), far, lost(&workers, t0))
                .unwrap()
                .index,
            1
        );
        assert_eq!(
            tasks
                .lease(b, 102, now0(), far, lost(&workers, t0))
                .unwrap()
                .index,
            2
        );
        // b finishes task 1; a goes silent.
        assert!(tasks.begin_merge(1));
        assert!(!tasks.complete(1));
        let now = ms(t0, 300);
        workers.seen(b, now).unwrap();
        // b takes a's task 0 (expired), not its own task 2 (b is alive).
        let taken = tasks
            .lease(b, 103, now0(), far, lost(&workers, now))
            .unwrap();
        assert_eq!(taken.index, 0);
        assert_eq!(
            taken.expired,
            vec![LeaseHolder {
                attempt: 100,
                worker: a
            }]
        );
        assert_eq!(tasks.lease(b, 104, now0(), far, lost(&workers, now)), None);
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
