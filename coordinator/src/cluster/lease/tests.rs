use std::time::{Duration, Instant};

use super::*;
use crate::cluster::workers::Workers;

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
