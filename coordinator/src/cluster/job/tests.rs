use super::*;
use tilepdb_common::table::Encoding;
use tilepdb_common::wire::proto::ResultHeader;
use tilepdb_common::{BlankRule, Goal, Partition};

use crate::cluster::results::ResultCheck;
use crate::cluster::wire::result_claim;

/// A job of one small table (3x3, tiles 1 and 2) whose workers are lost after
/// `lease_timeout`, expanding a layer of one task (its input: the goal).
fn job_of_one_task(lease_timeout: Duration) -> Job {
    let partition = Partition::custom("3x3".parse().unwrap(), &["1,2".to_string()]).unwrap();
    let spec = SetSpec::new(
        partition,
        Goal::BlankFirst,
        BlankRule::Aware,
        Encoding::Byte,
    )
    .unwrap();
    let nowhere = std::env::temp_dir().join("tilepdb-job-unit-test-never-written");
    let mut config = JobConfig::new(spec, nowhere.clone(), nowhere);
    config.lease_timeout = lease_timeout;
    config.threads = 1;
    let job = Job::new(config).unwrap();
    let arrays = TableArrays::on_heap(&job.spaces[0], &job.indexes[0]);
    arrays.mark_goal(&job.spaces[0], &job.indexes[0]);
    let units = job.indexes[0].unit_count(&job.spaces[0]);
    let tasks = LayerTasks::new(std::iter::once(0..units).collect(), &[1]);
    job.set_stage(Stage::Expanding(ExpandingLayer {
        arrays: Arc::new(arrays),
        tasks,
    }));
    job
}

/// A worker that leased the only task and stopped, its last request a `TakeTask` made
/// right after (a long poll that looks again whenever something changes), is lost one
/// lease timeout after it *asked*: the request's looks do not count as hearing from it,
/// so another worker gets the task then (by the lease's expiry, before the task's
/// deadline of two lease timeouts).
#[test]
fn a_long_poll_that_looks_again_does_not_keep_a_stopped_worker_alive() {
    let timeout = Duration::from_millis(300);
    let job = job_of_one_task(timeout);
    let stopped = job.register("stopped").unwrap();
    let other = job.register("other").unwrap();
    let asked_at = Instant::now();
    let Lease::Task(task) = job.take_task(stopped, &[], asked_at).unwrap() else {
        panic!("the only task is leased to the first worker that asks");
    };
    // Its parked request (asked at the same time, holding the task) looks again half a
    // lease timeout later. (Had it looked after the timeout, it would have got the task
    // again itself, under a new attempt, and lost it the same way.)
    std::thread::sleep(timeout / 2);
    let _ = job.take_task(stopped, &[task.attempt], asked_at).unwrap();
    // The other worker, heard of all along, asks once the lease timeout has passed since
    // the stopped worker asked (and well before the task's deadline).
    std::thread::sleep(timeout / 2 + timeout / 3);
    job.heartbeat(other).unwrap();
    assert!(
        job.lock().workers.is_lost(stopped, Instant::now()),
        "the stopped worker's parked request kept it alive"
    );
    let Lease::Task(again) = job.take_task(other, &[], Instant::now()).unwrap() else {
        panic!("the task was not handed out again");
    };
    assert_eq!((again.id, &again.ranks), (task.id, &task.ranks));
    assert_ne!(again.attempt, task.attempt);
    assert!(job.counters.releases.load(Relaxed) >= 1);
}

/// A result refused as invalid for its worker's own lease gives the lease up: another
/// worker gets the task at once, not one lease timeout later; a result refused for a
/// lease that is not its sender's gives nothing up.
#[test]
fn a_result_refused_for_its_own_lease_gives_the_lease_up() {
    let job = job_of_one_task(Duration::from_secs(3600));
    let (a, b) = (job.register("a").unwrap(), job.register("b").unwrap());
    let Lease::Task(task) = job.take_task(a, &[], Instant::now()).unwrap() else {
        panic!("a task");
    };
    let header = |worker: u64, reached_states: u64| ResultHeader {
        job_id: job.id.clone(),
        worker_id: worker,
        task_id: task.id.to_u64(),
        attempt: task.attempt,
        table: task.id.table,
        depth: task.id.depth,
        first_rank: task.ranks.start,
        end_rank: task.ranks.end,
        reached_states,
        reached_bytes: reached_states,
        expanded: task.states,
        generated: reached_states,
    };
    let claim =
        |worker: u64, reached_states: u64| result_claim(&header(worker, reached_states)).unwrap();
    // b delivers for a's lease: refused, and a keeps its lease.
    assert!(matches!(
        job.check_result(&claim(b, 1)),
        Err(Refusal::NotYours(_))
    ));
    assert!(matches!(
        job.take_task(b, &[], Instant::now()).unwrap(),
        Lease::Wait(_)
    ));
    // a delivers far more states than its task can reach: refused, and its lease given up.
    assert!(matches!(
        job.check_result(&claim(a, 1 << 40)),
        Err(Refusal::Invalid(_))
    ));
    let Lease::Task(again) = job.take_task(b, &[], Instant::now()).unwrap() else {
        panic!("the task was not handed out again");
    };
    assert_eq!(again.id, task.id);
    // a's late valid result would still be welcome (its attempt stays valid).
    assert!(matches!(
        job.check_result(&claim(a, 1)),
        Ok(ResultCheck::Accept(_))
    ));
}

#[test]
fn task_ids_round_trip() {
    let id = TaskId {
        table: 3,
        depth: 77,
        index: 123_456,
    };
    assert_eq!(TaskId::from_u64(id.to_u64()), Some(id));
}
