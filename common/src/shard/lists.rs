//! The lists of states a shard worker's threads gather for the other shards before they push
//! them. The lists of all a worker's threads share one budget, a sixteenth of the arrays they
//! serve (at least [`LEAST_LISTS_BYTES`]): the memory they take does not grow with the shards
//! or the threads, and a larger shard, whose layers send more, pushes longer lists (each push
//! costs about as much CPU as some ten thousand states merged, so short lists would cost the
//! build more than their memory saves).
//!
//! ```
//! use tilepdb_common::shard::{LEAST_LISTS_BYTES, list_states, lists_budget, lists_bytes};
//! // Two threads pushing to 3 other shards gather lists of twice the most states a push holds.
//! assert_eq!(list_states(2, 3, LEAST_LISTS_BYTES), 1 << 19);
//! // 16 threads pushing to 63 other shards, with 9.6 GiB of arrays, share 614 MiB.
//! let budget = lists_budget(10_307_921_510);
//! assert_eq!(list_states(16, 63, budget), 78_643);
//! assert!(lists_bytes(16, 63, budget) <= budget);
//! ```

/// Most states of one pushed list.
pub const MAX_PUSH_STATES: u64 = 1 << 18;
/// The least budget of a worker's lists, whatever its arrays.
pub const LEAST_LISTS_BYTES: u64 = 32 << 20;
/// Fewest states a list gathers before it is pushed, whatever the budget. A budget holds
/// while a worker's threads times (their lists plus one) are at most its bytes divided by 8
/// times this (16,384 for [`LEAST_LISTS_BYTES`]).
pub const LEAST_LIST_STATES: u64 = 1 << 8;

/// The budget of the lists of a worker whose arrays (a shard's, or a prover's) take
/// `arrays_bytes`: a sixteenth of them, at least [`LEAST_LISTS_BYTES`].
pub fn lists_budget(arrays_bytes: u64) -> u64 {
    (arrays_bytes / 16).max(LEAST_LISTS_BYTES)
}

/// The states each of `threads` threads gathers in each of its `lists` lists (one per other
/// shard it pushes to) before it pushes that list: an equal share of `budget` bytes, each
/// thread's sort buffer counted as one list more; at most twice [`MAX_PUSH_STATES`] (a full
/// list is deduplicated and pushed in parts of at most that many), at least
/// [`LEAST_LIST_STATES`].
pub fn list_states(threads: usize, lists: usize, budget: u64) -> usize {
    let shares = (threads.max(1) as u64).saturating_mul(lists as u64 + 1);
    let states = (budget / 8 / shares).clamp(LEAST_LIST_STATES, 2 * MAX_PUSH_STATES);
    usize::try_from(states).unwrap_or(usize::MAX)
}

/// The most bytes the lists of [`list_states`] take, with their sort buffers.
pub fn lists_bytes(threads: usize, lists: usize, budget: u64) -> u64 {
    let states = list_states(threads, lists, budget) as u64;
    8 * states * (threads.max(1) as u64).saturating_mul(lists as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_lists_stay_within_the_budget_until_the_least_list() {
        for budget in [LEAST_LISTS_BYTES, lists_budget(10 << 30)] {
            for threads in [1, 2, 3, 8, 16, 64] {
                for lists in [1, 2, 3, 7, 15, 63, 255] {
                    let states = list_states(threads, lists, budget) as u64;
                    assert!((LEAST_LIST_STATES..=2 * MAX_PUSH_STATES).contains(&states));
                    let shares = (threads * (lists + 1)) as u64;
                    if shares <= budget / 8 / LEAST_LIST_STATES {
                        assert!(lists_bytes(threads, lists, budget) <= budget);
                    } else {
                        assert_eq!(states, LEAST_LIST_STATES, "{threads} x {lists}");
                    }
                }
            }
        }
        // A few shards on a few threads keep the largest lists; no thread is a thread too few.
        let least = LEAST_LISTS_BYTES;
        assert_eq!(list_states(1, 1, least), 1 << 19);
        assert_eq!(list_states(0, 1, least), 1 << 19);
        assert_eq!(list_states(4, 7, least), 1 << 17);
        assert_eq!(list_states(16, 63, least), 4096);
    }

    #[test]
    fn the_budget_is_a_sixteenth_of_the_arrays_and_at_least_the_least() {
        assert_eq!(lists_budget(0), LEAST_LISTS_BYTES);
        assert_eq!(lists_budget(16 << 20), LEAST_LISTS_BYTES);
        assert_eq!(lists_budget(16 << 30), 1 << 30);
    }
}
