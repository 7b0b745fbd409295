//! The workers a job has heard of: [`Workers`], with the time passed in by the caller.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tilepdb_common::wire::proto::WorkerStatus;
use tilepdb_common::wire::saturating_u32;

/// A worker the coordinator knows.
#[derive(Debug)]
pub struct WorkerInfo {
    /// The name it gave.
    pub name: String,
    /// When it was last heard of.
    pub last_seen: Instant,
    /// The tasks (index, attempt) of the current layer leased to it and not yet done.
    pub holding: Vec<(usize, u64)>,
    /// Whether it has been told that the job is done.
    pub told_done: bool,
}

/// A request from a worker the job does not know (say, after a coordinator restart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown worker {0} (the coordinator may have restarted): register again")]
pub struct UnknownWorker(pub u64);

/// The workers of a job. A worker silent for longer than the lease timeout is lost: its
/// leases may go to others.
#[derive(Debug)]
pub struct Workers {
    #[expect(clippy::struct_field_names, reason = "the registry's workers, by id")]
    workers: HashMap<u64, WorkerInfo>,
    next_id: u64,
    timeout: Duration,
}

impl Workers {
    /// No worker yet; ids start at `first_id`; `timeout`: the lease timeout.
    pub fn new(first_id: u64, timeout: Duration) -> Workers {
        Workers {
            workers: HashMap::new(),
            next_id: first_id,
            timeout,
        }
    }

    /// Adds a worker seen at `now`; its id. Workers silent for ten lease timeouts and
    /// holding nothing are forgotten (they would register again anyway).
    pub fn register(&mut self, name: &str, now: Instant) -> u64 {
        let forget = 10 * self.timeout;
        self.workers.retain(|_, w| {
            now.saturating_duration_since(w.last_seen) < forget || !w.holding.is_empty()
        });
        let id = self.next_id;
        self.next_id += 1;
        self.workers.insert(
            id,
            WorkerInfo {
                name: name.to_string(),
                last_seen: now,
                holding: Vec::new(),
                told_done: false,
            },
        );
        id
    }

    /// Records that worker `id` was heard of at `now`; the worker.
    pub fn seen(&mut self, id: u64, now: Instant) -> Result<&mut WorkerInfo, UnknownWorker> {
        let w = self.workers.get_mut(&id).ok_or(UnknownWorker(id))?;
        w.last_seen = w.last_seen.max(now);
        Ok(w)
    }

    /// Whether worker `id` is unknown or silent at `now` for longer than the lease timeout.
    pub fn is_lost(&self, id: u64, now: Instant) -> bool {
        self.workers
            .get(&id)
            .is_none_or(|w| now.saturating_duration_since(w.last_seen) > self.timeout)
    }

    /// When worker `id` will be lost if it stays silent (`None`: it is unknown).
    pub fn lost_at(&self, id: u64) -> Option<Instant> {
        self.workers
            .get(&id)
            .map(|w| w.last_seen + self.timeout + Duration::from_millis(1))
    }

    /// Workers heard of within the lease timeout and not yet told that the job is done.
    pub fn alive(&self, now: Instant) -> usize {
        self.workers
            .values()
            .filter(|w| now.saturating_duration_since(w.last_seen) <= self.timeout && !w.told_done)
            .count()
    }

    /// Every worker, by id, as the job's status reports them.
    pub fn statuses(&self, now: Instant) -> Vec<WorkerStatus> {
        let mut workers: Vec<WorkerStatus> = self
            .workers
            .iter()
            .map(|(&id, w)| {
                let silent = now.saturating_duration_since(w.last_seen);
                WorkerStatus {
                    id,
                    name: w.name.clone(),
                    seconds_since_heartbeat: silent.as_secs_f64(),
                    tasks_held: saturating_u32(w.holding.len()),
                    alive: silent <= self.timeout && !w.told_done,
                }
            })
            .collect();
        workers.sort_by_key(|w| w.id);
        workers
    }

    /// Whether every worker heard of recently has been told that the job is done.
    pub fn all_told(&self, now: Instant) -> bool {
        self.workers
            .values()
            .all(|w| w.told_done || now.saturating_duration_since(w.last_seen) > self.timeout)
    }

    /// The name of worker `id` (`#id` if unknown).
    pub fn name(&self, id: u64) -> String {
        self.workers
            .get(&id)
            .map_or(format!("#{id}"), |w| w.name.clone())
    }

    /// Forgets every lease of every worker (a new layer starts).
    pub fn clear_holdings(&mut self) {
        for w in self.workers.values_mut() {
            w.holding.clear();
        }
    }

    /// Forgets the leases of task `index` (it is done).
    pub fn task_done(&mut self, index: usize) {
        for w in self.workers.values_mut() {
            w.holding.retain(|&(i, _)| i != index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_lost_after_the_timeout_and_forgotten_later() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut w = Workers::new(7, Duration::from_millis(10));
        let a = w.register("a", t0);
        assert_eq!(a, 7);
        assert!(!w.is_lost(a, ms(10)));
        assert!(w.is_lost(a, ms(11)));
        assert!(w.is_lost(99, t0), "unknown");
        assert_eq!(w.seen(99, t0).unwrap_err(), UnknownWorker(99));
        w.seen(a, ms(20)).unwrap();
        assert_eq!(w.alive(ms(25)), 1);
        // Silent for ten timeouts and holding nothing: forgotten when another registers.
        let b = w.register("b", ms(200));
        assert!(w.seen(a, ms(200)).is_err());
        assert_eq!(w.name(b), "b");
        w.seen(b, ms(200)).unwrap().told_done = true;
        assert!(w.all_told(ms(200)));
        assert_eq!(w.alive(ms(200)), 0);
    }
}
