//! The lists of states a shard worker's threads gather for the other shards before they push
//! them: the lists of all a worker's threads share one budget, so that the memory they take
//! does not grow with the shards or the threads.
//!
//! ```
//! use tilepdb_common::shard::{LISTS_BYTES, list_states, lists_bytes};
//! // Two threads pushing to 3 other shards gather lists of the most states a push holds, twice.
//! assert_eq!(list_states(2, 3), 1 << 19);
//! // 16 threads pushing to 63 other shards share the budget.
//! assert_eq!(list_states(16, 63), 4096);
//! assert!(lists_bytes(16, 63) <= LISTS_BYTES);
//! ```

/// Most states of one pushed list.
pub const MAX_PUSH_STATES: u64 = 1 << 18;
/// Bytes a worker's threads hold at once in the lists they gather, their sort buffers
/// included, while the threads times their lists stay within [`LEAST_LIST_STATES`]'s bound.
pub const LISTS_BYTES: u64 = 32 << 20;
/// Fewest states a list gathers before it is pushed, whatever the budget: below it a list
/// would cost more in messages than in memory. [`LISTS_BYTES`] holds while a worker's
/// threads times (their lists plus one) are at most `LISTS_BYTES / 8 / LEAST_LIST_STATES`
/// (16,384).
pub const LEAST_LIST_STATES: u64 = 1 << 8;

/// The states each of `threads` threads gathers in each of its `lists` lists (one per other
/// shard it pushes to) before it pushes that list: an equal share of [`LISTS_BYTES`], each
/// thread's sort buffer counted as one list more; at most twice [`MAX_PUSH_STATES`] (a full
/// list is deduplicated and pushed in parts of at most that many), at least
/// [`LEAST_LIST_STATES`].
pub fn list_states(threads: usize, lists: usize) -> usize {
    let shares = (threads.max(1) as u64).saturating_mul(lists as u64 + 1);
    let states = (LISTS_BYTES / 8 / shares).clamp(LEAST_LIST_STATES, 2 * MAX_PUSH_STATES);
    usize::try_from(states).unwrap_or(usize::MAX)
}

/// The most bytes the lists of [`list_states`] take, with their sort buffers.
pub fn lists_bytes(threads: usize, lists: usize) -> u64 {
    let states = list_states(threads, lists) as u64;
    8 * states * (threads.max(1) as u64).saturating_mul(lists as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_lists_stay_within_the_budget_until_the_least_list() {
        for threads in [1, 2, 3, 8, 16, 64] {
            for lists in [1, 2, 3, 7, 15, 63, 255] {
                let states = list_states(threads, lists) as u64;
                assert!((LEAST_LIST_STATES..=2 * MAX_PUSH_STATES).contains(&states));
                let shares = (threads * (lists + 1)) as u64;
                if shares <= LISTS_BYTES / 8 / LEAST_LIST_STATES {
                    assert!(
                        lists_bytes(threads, lists) <= LISTS_BYTES,
                        "{threads} x {lists}"
                    );
                } else {
                    assert_eq!(states, LEAST_LIST_STATES, "{threads} x {lists}");
                }
            }
        }
        // A few shards on a few threads keep the largest lists; no thread is a thread too few.
        assert_eq!(list_states(1, 1), 1 << 19);
        assert_eq!(list_states(0, 1), 1 << 19);
        assert_eq!(list_states(4, 7), 1 << 17);
    }
}
