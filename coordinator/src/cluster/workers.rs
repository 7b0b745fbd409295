//! The workers a job has heard of: [`Workers`], with the time passed in by the caller.
//!
//! A worker's id is its credential: 64 random bits given at registration, sent back with
//! every request, and never shown (the status names workers by their registration number).
//! Together with the 64 random bits of each attempt, a result for a lease can only come
//! from the worker it was leased to.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::progress::WorkerProgress;

/// A worker the coordinator knows.
#[derive(Debug)]
pub struct WorkerInfo {
    /// Its registration number (1, 2, …), as the status shows it.
    pub number: u64,
    /// The name it gave.
    pub name: String,
    /// When it was last heard of.
    pub last_seen: Instant,
    /// The tasks (index, attempt) of the current layer leased to it and not yet done.
    pub holding: Vec<(usize, u64)>,
    /// Whether it has been told that the job is done.
    pub told_done: bool,
    /// Whether it ever leased a task.
    pub leased_any: bool,
    /// When it last asked for a task (its registration, until it asks).
    pub last_asked: Instant,
    /// The address it registered from, if known.
    pub peer: Option<IpAddr>,
}

/// A request from a worker the job does not know (say, after a coordinator restart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown worker {0} (the coordinator may have restarted): register again")]
pub struct UnknownWorker(pub u64);

/// A registration refused: the job knows as many workers as it keeps, every one of them
/// holding or having leased a task (registrations that never leased one make room).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TooManyWorkers {
    /// As many workers as the job keeps.
    #[error(
        "the coordinator already knows {0} workers, as many as it keeps, all of them working; try again later"
    )]
    Job(usize),
    /// As many workers from one address as the job keeps.
    #[error(
        "the coordinator already knows {0} workers from this address, as many as it keeps from one, all of them working; try again later"
    )]
    Peer(usize),
}

/// Most workers a job keeps at once (live ones, and silent ones not yet forgotten).
pub const MAX_WORKERS: usize = 4096;
/// Most workers a job keeps from one address.
pub const MAX_WORKERS_PER_PEER: usize = 1024;

/// The workers of a job. A worker silent for longer than the lease timeout is lost: its
/// leases may go to others.
#[derive(Debug)]
pub struct Workers {
    #[expect(clippy::struct_field_names, reason = "the registry's workers, by id")]
    workers: HashMap<u64, WorkerInfo>,
    registered: u64,
    timeout: Duration,
    /// The ids of the workers banned ([`Workers::ban`]).
    banned: HashSet<u64>,
    /// The names and addresses of the workers banned.
    banned_names: HashSet<(String, Option<IpAddr>)>,
}

impl Workers {
    /// No worker yet; `timeout`: the lease timeout.
    pub fn new(timeout: Duration) -> Workers {
        Workers {
            workers: HashMap::new(),
            registered: 0,
            timeout,
            banned: HashSet::new(),
            banned_names: HashSet::new(),
        }
    }

    /// Adds a worker seen at `now` under a new random id; its id.
    pub fn register(&mut self, name: &str, now: Instant) -> Result<u64, TooManyWorkers> {
        self.register_from(name, None, now)
    }

    /// Adds a worker from `peer` seen at `now` under a new random id; its id.
    pub fn register_from(
        &mut self,
        name: &str,
        peer: Option<IpAddr>,
        now: Instant,
    ) -> Result<u64, TooManyWorkers> {
        let id = loop {
            let id = rand::random::<u64>();
            if id != 0 && !self.workers.contains_key(&id) {
                break id;
            }
        };
        self.register_as_from(id, name, peer, now)
    }

    /// The registration to forget to make room for one more (among those from `peer` if
    /// given): one that never leased a task and holds none, the one that asked for a task
    /// least recently (a registration kept alive by heartbeats alone goes before a worker
    /// that waits for tasks).
    fn evictable(&self, peer: Option<IpAddr>) -> Option<u64> {
        self.workers
            .iter()
            .filter(|(_, w)| !w.leased_any && w.holding.is_empty())
            .filter(|(_, w)| peer.is_none() || w.peer == peer)
            .min_by_key(|(_, w)| w.last_asked)
            .map(|(&id, _)| id)
    }

    /// Records that worker `id` asked for a task at `now`.
    pub fn asked(&mut self, id: u64, now: Instant) {
        if let Some(w) = self.workers.get_mut(&id) {
            w.last_asked = w.last_asked.max(now);
        }
    }

    /// Adds a worker seen at `now` with id `id` (unused: [`Workers::register`] draws it);
    /// `id`. Workers holding nothing are forgotten first if they never leased a task and are
    /// silent past the lease timeout, or silent for ten lease timeouts (they would register
    /// again anyway); refused if [`MAX_WORKERS`] remain.
    pub fn register_as(
        &mut self,
        id: u64,
        name: &str,
        now: Instant,
    ) -> Result<u64, TooManyWorkers> {
        self.register_as_from(id, name, None, now)
    }

    /// [`Workers::register_as`] from `peer`: when [`MAX_WORKERS_PER_PEER`] remain from `peer`
    /// or [`MAX_WORKERS`] in all, the registration that never leased a task and asked for
    /// one least recently is forgotten to make room (it registers again if it is still
    /// there); refused only if every one is working.
    pub fn register_as_from(
        &mut self,
        id: u64,
        name: &str,
        peer: Option<IpAddr>,
        now: Instant,
    ) -> Result<u64, TooManyWorkers> {
        let (timeout, forget) = (self.timeout, 10 * self.timeout);
        self.workers.retain(|_, w| {
            let silent = now.saturating_duration_since(w.last_seen);
            !w.holding.is_empty() || silent < forget && (w.leased_any || silent <= timeout)
        });
        if let Some(p) = peer {
            let from_peer = self.workers.values().filter(|w| w.peer == Some(p)).count();
            if from_peer >= MAX_WORKERS_PER_PEER {
                let Some(old) = self.evictable(Some(p)) else {
                    return Err(TooManyWorkers::Peer(from_peer));
                };
                self.workers.remove(&old);
            }
        }
        if self.workers.len() >= MAX_WORKERS {
            let Some(old) = self.evictable(None) else {
                return Err(TooManyWorkers::Job(self.workers.len()));
            };
            self.workers.remove(&old);
        }
        self.registered += 1;
        self.workers.insert(
            id,
            WorkerInfo {
                number: self.registered,
                name: name.to_string(),
                last_seen: now,
                holding: Vec::new(),
                told_done: false,
                leased_any: false,
                last_asked: now,
                peer,
            },
        );
        Ok(id)
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
    /// (Registrations that never lease a task count until they expire, one lease timeout
    /// after their last call.)
    pub fn alive(&self, now: Instant) -> usize {
        self.workers
            .values()
            .filter(|w| now.saturating_duration_since(w.last_seen) <= self.timeout && !w.told_done)
            .count()
    }

    /// Every worker, by id, as the job's status reports them.
    pub fn statuses(&self, now: Instant) -> Vec<WorkerProgress> {
        let mut workers: Vec<WorkerProgress> = self
            .workers
            .values()
            .map(|w| {
                let silent = now.saturating_duration_since(w.last_seen);
                WorkerProgress {
                    id: w.number,
                    name: w.name.clone(),
                    silent,
                    tasks_held: w.holding.len(),
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

    /// How many workers have been told that the job is done.
    pub fn told(&self) -> usize {
        self.workers.values().filter(|w| w.told_done).count()
    }

    /// The name of worker `id` (with its number), `?` if unknown.
    pub fn name(&self, id: u64) -> String {
        self.workers
            .get(&id)
            .map_or("?".into(), |w| format!("{} (#{})", w.name, w.number))
    }

    /// The name worker `id` gave and the address it registered from (`None`: unknown).
    pub fn identity(&self, id: u64) -> Option<(String, Option<IpAddr>)> {
        self.workers.get(&id).map(|w| (w.name.clone(), w.peer))
    }

    /// Bans worker `id` (its results were wrong): it is forgotten, its id refused from now
    /// on ([`Workers::is_banned`]), and so is a registration named `name` from `peer`
    /// ([`Workers::is_banned_name`]). Returns the leases (task, attempt) it held.
    pub fn ban(&mut self, id: u64, name: &str, peer: Option<IpAddr>) -> Vec<(usize, u64)> {
        self.banned.insert(id);
        self.banned_names.insert((name.to_string(), peer));
        self.workers
            .remove(&id)
            .map(|w| w.holding)
            .unwrap_or_default()
    }

    /// Whether worker `id` is banned.
    pub fn is_banned(&self, id: u64) -> bool {
        self.banned.contains(&id)
    }

    /// Whether a worker named `name` from `peer` was banned.
    pub fn is_banned_name(&self, name: &str, peer: Option<IpAddr>) -> bool {
        self.banned_names.contains(&(name.to_string(), peer))
    }

    /// How many workers are banned.
    pub fn banned(&self) -> usize {
        self.banned.len()
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
    fn a_full_registry_forgets_idle_registrations_and_bounds_each_peer() {
        let t0 = Instant::now();
        let mut w = Workers::new(Duration::from_secs(10));
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let first: Vec<u64> = (0..MAX_WORKERS_PER_PEER)
            .map(|_| w.register_from("idle", Some(a), t0).unwrap())
            .collect();
        // The peer's oldest idle registration makes room for its next one.
        w.register_from("next", Some(a), t0).unwrap();
        assert_eq!(
            first.iter().filter(|&&id| w.seen(id, t0).is_ok()).count(),
            MAX_WORKERS_PER_PEER - 1
        );
        // Every one of a peer's workers leasing: its next registration is refused, with
        // the true reason; another peer still gets in.
        for id in w.workers.keys().copied().collect::<Vec<_>>() {
            w.seen(id, t0).unwrap().leased_any = true;
        }
        assert_eq!(
            w.register_from("refused", Some(a), t0),
            Err(TooManyWorkers::Peer(MAX_WORKERS_PER_PEER))
        );
        assert!(w.register_from("other", Some(b), t0).is_ok());
    }

    #[test]
    fn workers_are_lost_after_the_timeout_and_forgotten_later() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut w = Workers::new(Duration::from_millis(10));
        let a = w.register_as(7, "a", t0).unwrap();
        assert_eq!(a, 7);
        w.seen(a, t0).unwrap().leased_any = true;
        assert!(!w.is_lost(a, ms(10)));
        assert!(w.is_lost(a, ms(11)));
        assert!(w.is_lost(99, t0), "unknown");
        assert_eq!(w.seen(99, t0).unwrap_err(), UnknownWorker(99));
        w.seen(a, ms(20)).unwrap();
        assert_eq!(w.alive(ms(25)), 1);
        // Silent for ten timeouts and holding nothing: forgotten when another registers.
        let b = w.register("b", ms(200)).unwrap();
        assert!(w.seen(a, ms(200)).is_err());
        assert_eq!(w.name(b), "b (#2)");
        assert_eq!(
            w.statuses(ms(200))[0].id,
            2,
            "the status shows numbers, not ids"
        );
        w.seen(b, ms(200)).unwrap().told_done = true;
        assert!(w.all_told(ms(200)));
        assert_eq!(w.alive(ms(200)), 0);
    }

    #[test]
    fn ids_are_random_and_idle_registrations_expire() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut w = Workers::new(Duration::from_millis(10));
        let ids: Vec<u64> = (0..MAX_WORKERS)
            .map(|_| w.register("idle", t0).unwrap())
            .collect();
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ids.len());
        assert!(
            ids.windows(2).all(|p| p[1] != p[0].wrapping_add(1)),
            "not sequential"
        );
        // Full: the registration that asked for a task least recently makes room; one that
        // leased a task stays, and the idle ones expire one lease timeout later.
        w.seen(ids[0], ms(5)).unwrap().leased_any = true;
        for &id in &ids[2..] {
            w.asked(id, ms(1));
        }
        let more = w.register("one more", ms(5)).unwrap();
        assert!(
            w.seen(ids[1], ms(5)).is_err(),
            "never asked: forgotten first"
        );
        assert!(w.seen(ids[0], ms(5)).is_ok());
        let late = w.register("late", ms(12)).unwrap();
        assert!(w.seen(ids[0], ms(12)).is_ok());
        assert!(w.seen(ids[2], ms(12)).is_err());
        assert!(w.seen(more, ms(12)).is_ok());
        assert_eq!(w.alive(ms(12)), 3);
        assert_eq!(w.name(late), format!("late (#{})", MAX_WORKERS + 2));
    }

    #[test]
    fn a_banned_worker_is_forgotten_and_its_name_refused_from_its_address() {
        let t0 = Instant::now();
        let mut w = Workers::new(Duration::from_secs(10));
        let peer: Option<IpAddr> = Some("10.0.0.9".parse().unwrap());
        let a = w.register_from("liar", peer, t0).unwrap();
        w.seen(a, t0).unwrap().holding.push((3, 44));
        assert_eq!(w.identity(a), Some(("liar".into(), peer)));
        assert_eq!(w.ban(a, "liar", peer), vec![(3, 44)]);
        assert!(w.is_banned(a) && w.seen(a, t0).is_err());
        assert!(w.is_banned_name("liar", peer));
        assert!(!w.is_banned_name("liar", None));
        assert_eq!(w.banned(), 1);
    }
}
