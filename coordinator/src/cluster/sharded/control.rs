//! The control plane of a sharded job: which worker owns which shard, the numbered steps
//! every shard takes, and the barrier between them. No per-state memory: a step's reports
//! are a few counters per shard.
//!
//! ```text
//!             join (all P shards)            every shard reported step s
//!  Joining ───────────────────────► Step 1 ───────────────────────────► Step s + 1 ──► …
//!     │                               │ │ a shard silent too long, or its process seen   │
//!     │                               │ │ to exit (a local launcher): its slot is freed  │
//!     │                               │ └──► Lost ──(a replacement joins)──► Restore ──┘
//!     │                               │ a report with an error, the driver giving up   │
//!     │                               ▼                                                ▼
//!     └──────────────────────────► Failed(reason)                           Done (told once)
//! ```
//!
//! The steps of one table, as the driver gives them ([`super::builder`]):
//!
//! ```text
//! Open ──► Expand d ──► Checkpoint d ──► Finish d ──┬──(states added)──► Expand d + 1 …
//!                                                    └──(none)──► (file written) ──► Close
//!   Close ──(P >= 2, a table proven on the shards)──► ProofOpen ──► ProofExpand d ──►
//!   ProofFinish d ──┬──(either team met states)──► ProofExpand d + 1 …
//!                   └──(neither)──► ProofClose ──► (the teams' counts against the header)
//!   any proof step ──(a shard lost; its replacement joined)──► ProofOpen (the proof again)
//! ```
//!
//! A proof step's report carries the prover's verdict against the table; the driver stops
//! the proof at the first one and the table is refused. A proof step that loses a shard is
//! discarded whole, with every report of it; the driver ([`super::proof`]) proves the table
//! again from `ProofOpen` once the shard's replacement has joined.
//!
//! A replacement joins a freed slot at any time; until it is given a step that admits it
//! ([`Step::admits_replacement`]: a `Restore` naming its shard, or a `ProofOpen`, which
//! makes every prover anew), it is only told to wait.
//!
//! The driver ([`super::builder`]) gives a step with [`Control::run_step`] and waits for every
//! shard's report; the service hands the step to each shard's `NextStep` call and stores the
//! reports ([`Control::next_step`]). All transitions are here.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tilepdb_common::wire::PROTOCOL_VERSION;

use super::step::{ShardReport, Step, StepFailure, StepOutcome};
use crate::error::{Error, Result};

/// What a shard is told when it asks for its next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Nothing new: ask again.
    Wait,
    /// Do step number `.0`.
    Do(u64, Step),
    /// The job is done.
    Done,
    /// The job failed.
    Failed(String),
}

/// Why a shard is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardRefusal {
    /// Another protocol version.
    #[error("protocol version {0}; this coordinator speaks {PROTOCOL_VERSION}")]
    Protocol(u32),
    /// Another job.
    #[error("this coordinator runs job {ours}, not {theirs:?}")]
    Job {
        /// The job here.
        ours: String,
        /// The job asked for.
        theirs: String,
    },
    /// Another shard count, or a shard number out of range.
    #[error("shard {shard} of {shards}: this job has {ours} shards")]
    Shards {
        /// The shard asked for.
        shard: u32,
        /// The shard count the worker expects.
        shards: u32,
        /// The job's.
        ours: u32,
    },
    /// The shard has a live owner, or the job has started (a shard is not replaced yet).
    #[error("shard {0} is taken: {1}")]
    Taken(u32, String),
    /// The job has ended: nothing is left to join.
    #[error("the job has ended")]
    Ended,
    /// An address the other shards cannot use.
    #[error("peer address {0:?}: expected http://HOST:PORT or https://HOST:PORT")]
    Address(String),
    /// A call of a membership that is not the shard's current one.
    #[error("shard {0} has another session now")]
    Session(u32),
}

/// A shard's member as the job's status shows it.
#[derive(Clone, Debug)]
pub struct MemberView {
    /// Its shard.
    pub shard: u32,
    /// The name its worker joined with.
    pub name: String,
    /// How long since it was last heard.
    pub silent: Duration,
    /// Heard within the silence time, and not yet told that the job ended.
    pub alive: bool,
}

#[derive(Clone, Debug)]
struct Member {
    session: u64,
    name: String,
    peer: String,
    last_seen: Instant,
    /// It joined a slot freed by a lost shard: it must restore before any other step.
    replacement: bool,
    /// Its process was seen to exit ([`Control::exited`]): gone without waiting for silence.
    exited: bool,
}

#[derive(Debug, Default)]
struct State {
    members: Vec<Option<Member>>,
    step: u64,
    current: Option<Step>,
    reports: Vec<Option<ShardReport>>,
    sessions: u64,
    ended: Option<std::result::Result<(), String>>,
    /// Shards that heard how the job ended.
    told: Vec<bool>,
}

/// The control plane of one sharded job.
#[derive(Debug)]
pub struct Control {
    /// The job's id.
    pub job_id: String,
    shards: u32,
    silence: Duration,
    state: Mutex<State>,
    changed: Condvar,
    /// Wakes the shards' waiting `NextStep` calls when a step is given or the job ends.
    pub step_given: tokio::sync::watch::Sender<u64>,
}

impl Control {
    /// The control of job `job_id` on `shards` shards; a shard silent for `silence` fails the
    /// job.
    pub fn new(job_id: String, shards: u32, silence: Duration) -> Control {
        let n = shards as usize;
        Control {
            job_id,
            shards,
            silence,
            state: Mutex::new(State {
                members: vec![None; n],
                reports: vec![None; n],
                told: vec![false; n],
                ..State::default()
            }),
            changed: Condvar::new(),
            step_given: tokio::sync::watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the member `m` is gone: silent for the silence time, or its process exited.
    fn gone(&self, m: &Member) -> bool {
        m.exited || m.last_seen.elapsed() > self.silence
    }

    /// The worker process that holds shard `shard` is known to have exited (a local launcher
    /// saw it, before it starts another): its slot is freed at once, as a silent shard's is
    /// after the silence time, so that the replacement joins without waiting.
    pub fn exited(&self, shard: u32) {
        let mut state = self.lock();
        if let Some(Some(m)) = state.members.get_mut(shard as usize) {
            m.exited = true;
            drop(state);
            self.changed.notify_all();
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Takes shard `shard` for a worker; its session number.
    pub fn join(
        &self,
        protocol: u32,
        job_id: &str,
        shard: u32,
        shards: u32,
        peer: &str,
        name: &str,
    ) -> std::result::Result<u64, ShardRefusal> {
        if protocol != PROTOCOL_VERSION {
            return Err(ShardRefusal::Protocol(protocol));
        }
        if !job_id.is_empty() && job_id != self.job_id {
            return Err(ShardRefusal::Job {
                ours: self.job_id.clone(),
                theirs: job_id.to_string(),
            });
        }
        if shards != self.shards || shard >= self.shards {
            return Err(ShardRefusal::Shards {
                shard,
                shards,
                ours: self.shards,
            });
        }
        if !(peer.starts_with("http://") || peer.starts_with("https://")) || peer.len() > 512 {
            return Err(ShardRefusal::Address(peer.chars().take(512).collect()));
        }
        let mut state = self.lock();
        if state.ended.is_some() {
            return Err(ShardRefusal::Ended);
        }
        if let Some(m) = &state.members[shard as usize] {
            if !self.gone(m) {
                return Err(ShardRefusal::Taken(
                    shard,
                    format!("worker {} owns it", m.name),
                ));
            }
            tracing::warn!(shard, worker = %m.name, exited = m.exited, "shard {shard}'s worker is gone: another worker takes it");
        }
        state.sessions += 1;
        let session = state.sessions;
        let replacement = state.step > 0;
        tracing::info!(shard, worker = name, peer, replacement, "a shard joined");
        state.members[shard as usize] = Some(Member {
            session,
            name: name.to_string(),
            peer: peer.to_string(),
            last_seen: Instant::now(),
            replacement,
            exited: false,
        });
        drop(state);
        self.changed.notify_all();
        Ok(session)
    }

    fn member_seen(
        state: &mut State,
        shard: u32,
        session: u64,
    ) -> std::result::Result<(), ShardRefusal> {
        match state.members.get_mut(shard as usize) {
            Some(Some(m)) if m.session == session => {
                m.last_seen = Instant::now();
                Ok(())
            }
            _ => Err(ShardRefusal::Session(shard)),
        }
    }

    /// A shard says it is alive.
    pub fn heartbeat(&self, shard: u32, session: u64) -> std::result::Result<(), ShardRefusal> {
        Self::member_seen(&mut self.lock(), shard, session)
    }

    /// A shard reports step `done` (0: none) and asks for its next step.
    pub fn next_step(
        &self,
        shard: u32,
        session: u64,
        done: u64,
        report: Option<ShardReport>,
    ) -> std::result::Result<Answer, ShardRefusal> {
        let mut state = self.lock();
        Self::member_seen(&mut state, shard, session)?;
        if let Some(ended) = &state.ended {
            let answer = match ended {
                Ok(()) => Answer::Done,
                Err(reason) => Answer::Failed(reason.clone()),
            };
            state.told[shard as usize] = true;
            drop(state);
            self.changed.notify_all();
            return Ok(answer);
        }
        if done != 0 && done == state.step && state.reports[shard as usize].is_none() {
            state.reports[shard as usize] = Some(report.unwrap_or_default());
            drop(state);
            self.changed.notify_all();
            return Ok(Answer::Wait);
        }
        let replacement = state.members[shard as usize]
            .as_ref()
            .is_some_and(|m| m.replacement);
        Ok(match &state.current {
            Some(step) if replacement && state.step > done && step.admits_replacement(shard) => {
                let step = step.clone();
                if let Some(m) = state.members[shard as usize].as_mut() {
                    m.replacement = false;
                }
                Answer::Do(state.step, step)
            }
            _ if replacement => Answer::Wait,
            Some(step) if state.step > done => Answer::Do(state.step, step.clone()),
            _ => Answer::Wait,
        })
    }

    /// Waits until every shard has joined (or `timeout` passed); their peer addresses.
    pub fn wait_members(&self, timeout: Duration) -> Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if let Some(Err(reason)) = &state.ended {
                return Err(Error::Shards(reason.clone()));
            }
            if state.members.iter().all(Option::is_some) {
                return Ok(state
                    .members
                    .iter()
                    .map(|m| m.as_ref().expect("all joined").peer.clone())
                    .collect());
            }
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<usize> = (0..state.members.len())
                    .filter(|&p| state.members[p].is_none())
                    .collect();
                return Err(Error::Shards(format!(
                    "shards {missing:?} did not join within {} s",
                    timeout.as_secs()
                )));
            }
            state = self
                .changed
                .wait_timeout(state, (deadline - now).min(Duration::from_millis(500)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Gives `step` to every shard and waits for all their reports; a shard silent for the
    /// silence time is lost (its slot freed for a replacement). A report with an error fails
    /// the job, unless it says another shard could not be reached.
    pub fn run_step(&self, step: Step) -> Result<StepOutcome> {
        let mut state = self.lock();
        state.step += 1;
        state.current = Some(step);
        state.reports.iter_mut().for_each(|r| *r = None);
        let number = state.step;
        self.step_given.send_replace(number);
        loop {
            if let Some(Err(reason)) = &state.ended {
                return Err(Error::Shards(reason.clone()));
            }
            let failed = state.reports.iter().enumerate().find_map(|(p, r)| {
                match r.as_ref().and_then(|r| r.failure.as_ref()) {
                    Some(StepFailure::Failed(why)) => Some(format!("shard {p} failed: {why}")),
                    _ => None,
                }
            });
            if let Some(reason) = failed {
                drop(state);
                self.fail(&reason);
                return Err(Error::Shards(reason));
            }
            // Lost: a shard whose slot is free, a shard gone (silent too long, or its process
            // exited: its slot is freed), or a replacement that took a freed slot and that this
            // step does not admit (it must restore first).
            let lost: Vec<u32> = {
                let state = &mut *state;
                let mut lost = Vec::new();
                for (p, slot) in (0..self.shards).zip(state.members.iter_mut()) {
                    let admitted = |m: &Member| {
                        !m.replacement
                            || state
                                .current
                                .as_ref()
                                .is_some_and(|s| s.admits_replacement(p))
                    };
                    match slot {
                        None => lost.push(p),
                        Some(m) if self.gone(m) => {
                            lost.push(p);
                            self.log_freed_slot(p, m);
                            *slot = None;
                        }
                        Some(m) if !admitted(m) => lost.push(p),
                        Some(_) => {}
                    }
                }
                lost
            };
            if !lost.is_empty() {
                return Ok(StepOutcome::Lost(lost));
            }
            if state.reports.iter().all(Option::is_some) {
                let reports: Vec<ShardReport> = state
                    .reports
                    .iter_mut()
                    .map(|r| r.take().expect("all"))
                    .collect();
                if let Some(why) = reports.iter().find_map(|r| match &r.failure {
                    Some(StepFailure::PeerUnreachable(why)) => Some(why),
                    _ => None,
                }) {
                    tracing::warn!("a step is done again: {why}");
                    return Ok(StepOutcome::Lost(Vec::new()));
                }
                return Ok(StepOutcome::Done(reports));
            }
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(500))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Logs why shard `p`'s worker `m`, gone, loses its slot.
    fn log_freed_slot(&self, p: u32, m: &Member) {
        if m.exited {
            tracing::warn!(
                shard = p,
                worker = %m.name,
                "shard {p}'s worker process exited: waiting for a replacement"
            );
        } else {
            tracing::warn!(
                shard = p,
                worker = %m.name,
                "shard {p} was silent for {} s: waiting for a replacement",
                self.silence.as_secs()
            );
        }
    }

    /// Whether a shard that joined has been silent for the silence time or exited (or its
    /// slot is free).
    pub fn any_gone(&self) -> bool {
        self.lock()
            .members
            .iter()
            .any(|m| m.as_ref().is_none_or(|m| self.gone(m)))
    }

    /// Whether the job has ended.
    pub fn ended(&self) -> bool {
        self.lock().ended.is_some()
    }

    /// How the job ended: `None` while it runs, else done (`Ok`) or failed with the reason.
    pub fn outcome(&self) -> Option<std::result::Result<(), String>> {
        self.lock().ended.clone()
    }

    /// How many shards have reported the step under way, of all the shards (none under
    /// way: every shard).
    pub fn step_reports(&self) -> (u32, u32) {
        let state = self.lock();
        if state.current.is_none() {
            return (self.shards, self.shards);
        }
        let reported = state.reports.iter().filter(|r| r.is_some()).count();
        (u32::try_from(reported).unwrap_or(u32::MAX), self.shards)
    }

    /// Each shard's member now, in shard order (free slots left out).
    pub fn members(&self) -> Vec<MemberView> {
        let state = self.lock();
        state
            .members
            .iter()
            .zip(0u32..)
            .filter_map(|(m, shard)| {
                let m = m.as_ref()?;
                let silent = m.last_seen.elapsed();
                Some(MemberView {
                    shard,
                    name: m.name.clone(),
                    silent,
                    alive: !self.gone(m)
                        && !state.told.get(shard as usize).copied().unwrap_or(false),
                })
            })
            .collect()
    }

    /// Ends the job as done.
    pub fn finish(&self) {
        self.end(Ok(()));
    }

    /// Ends the job as failed (the first reason stays).
    pub fn fail(&self, reason: &str) {
        self.end(Err(reason.to_string()));
    }

    fn end(&self, how: std::result::Result<(), String>) {
        let mut state = self.lock();
        if state.ended.is_none() {
            state.ended = Some(how);
        }
        state.step += 1;
        self.step_given.send_replace(state.step);
        drop(state);
        self.changed.notify_all();
    }

    /// Waits up to `timeout` for every shard that joined to hear how the job ended.
    pub fn wait_told(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            let all = (0..state.members.len()).all(|p| state.members[p].is_none() || state.told[p]);
            let now = Instant::now();
            if all || now >= deadline {
                return all;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Long enough that a shard which just joined is not found silent before the test's
    /// loop first asks for it, even on a machine whose threads wait a second for a core (at
    /// 300 ms a loaded CI run lost the replacement before it asked).
    const SILENCE: Duration = Duration::from_secs(2);

    fn join(control: &Control, shard: u32) -> u64 {
        control
            .join(PROTOCOL_VERSION, "", shard, 2, "http://127.0.0.1:1", "test")
            .unwrap()
    }

    /// Gives `step` on a thread; meanwhile shard 0 (session `s0`) heartbeats and reports
    /// every step it is given, and so does shard 1 (session `s1`) if it is there, without
    /// heartbeats; the outcome, and shard 1's answer (the step it was given, else `Wait`).
    fn run(
        control: &Arc<Control>,
        step: Step,
        s0: u64,
        s1: Option<u64>,
    ) -> (StepOutcome, Option<Answer>) {
        let driver = {
            let control = control.clone();
            std::thread::spawn(move || control.run_step(step).unwrap())
        };
        let (mut done0, mut done1, mut answer1) = (0, 0, None);
        while !driver.is_finished() {
            control.heartbeat(0, s0).unwrap();
            if let Answer::Do(n, _) = control.next_step(0, s0, done0, None).unwrap() {
                control
                    .next_step(0, s0, n, Some(ShardReport::default()))
                    .unwrap();
                done0 = n;
            }
            if let Some(s1) = s1 {
                let answer = control.next_step(1, s1, done1, None).unwrap();
                if let Answer::Do(n, _) = &answer {
                    control
                        .next_step(1, s1, *n, Some(ShardReport::default()))
                        .unwrap();
                    done1 = *n;
                }
                // The step it was given, if any; else that it was told to wait.
                if answer1.is_none() || matches!(answer, Answer::Do(..)) {
                    answer1 = Some(answer);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        (driver.join().unwrap(), answer1)
    }

    /// A shard whose process was seen to exit is lost at once, not after the silence time,
    /// and its slot is free for a replacement at once; a live shard's is not.
    #[test]
    fn a_shard_seen_to_exit_is_replaced_without_waiting_for_its_silence() {
        let long = Duration::from_secs(30);
        let control = Arc::new(Control::new("job".into(), 2, long));
        let s0 = join(&control, 0);
        join(&control, 1);
        assert!(matches!(
            control.join(PROTOCOL_VERSION, "", 1, 2, "http://127.0.0.1:1", "again"),
            Err(ShardRefusal::Taken(1, _))
        ));
        assert!(!control.any_gone());
        control.exited(1);
        assert!(control.any_gone());
        let started = Instant::now();
        let (outcome, _) = run(&control, Step::ProofExpand { table: 0, depth: 0 }, s0, None);
        assert_eq!(outcome, StepOutcome::Lost(vec![1]));
        assert!(
            started.elapsed() < long / 3,
            "lost without waiting for its silence"
        );
        let s1 = join(&control, 1);
        assert!(!control.any_gone());
        assert!(control.members().iter().all(|m| m.alive));
        let open = Step::ProofOpen {
            table: 0,
            team_a: vec![0],
            team_b: vec![1],
            peers: vec!["http://127.0.0.1:1".into(); 2],
        };
        let (outcome, _) = run(&control, open, s0, Some(s1));
        assert!(matches!(outcome, StepOutcome::Done(r) if r.len() == 2));
    }

    /// A shard lost during the proof is replaced; the replacement is told to wait, and a
    /// step given with it there is lost, until a `ProofOpen` admits it.
    #[test]
    fn a_replacement_is_admitted_by_a_proof_open_and_by_no_other_proof_step() {
        let control = Arc::new(Control::new("job".into(), 2, SILENCE));
        let s0 = join(&control, 0);
        join(&control, 1);
        let expand = Step::ProofExpand { table: 0, depth: 0 };
        // Shard 1 says nothing more: it is lost, its slot freed.
        let (outcome, _) = run(&control, expand.clone(), s0, None);
        assert_eq!(outcome, StepOutcome::Lost(vec![1]));
        let s1 = join(&control, 1);
        let (outcome, answer) = run(
            &control,
            Step::ProofFinish { table: 0, depth: 0 },
            s0,
            Some(s1),
        );
        assert_eq!(outcome, StepOutcome::Lost(vec![1]));
        assert_eq!(answer, Some(Answer::Wait));
        let open = Step::ProofOpen {
            table: 0,
            team_a: vec![0],
            team_b: vec![1],
            peers: vec!["http://127.0.0.1:1".into(); 2],
        };
        let (outcome, answer) = run(&control, open.clone(), s0, Some(s1));
        assert!(matches!(outcome, StepOutcome::Done(r) if r.len() == 2));
        assert!(matches!(answer, Some(Answer::Do(_, step)) if step == open));
        // Admitted once, it takes every later step.
        let (outcome, answer) = run(&control, expand.clone(), s0, Some(s1));
        assert!(matches!(outcome, StepOutcome::Done(r) if r.len() == 2));
        assert!(matches!(answer, Some(Answer::Do(_, step)) if step == expand));
    }
}
