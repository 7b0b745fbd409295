//! The planner: the tasks of a layer and their current states.

use std::ops::Range;

use rayon::prelude::*;
use tilepdb_common::StateSpace;

use crate::engine::TableArrays;
use crate::engine::units::{cut_units, plan_tasks, unit_states};

/// The tasks of the layer whose states carry `code`, and their current states. With
/// `task_ranks`, fixed ranges (as the single-machine build cuts them); otherwise
/// [`plan_tasks`] into about `tasks_per_layer` tasks. Ranges without a current state are left
/// out. The counting runs on `pool`.
pub fn plan_layer(
    space: &StateSpace,
    arrays: &TableArrays,
    code: u8,
    task_ranks: Option<u64>,
    tasks_per_layer: u64,
    pool: &rayon::ThreadPool,
) -> (Vec<Range<u64>>, Vec<u64>) {
    let count = |ranges: &[Range<u64>]| -> Vec<u64> {
        pool.install(|| {
            ranges
                .par_iter()
                .map(|r| arrays.codes.count_with_code(unit_states(space, r), code))
                .collect()
        })
    };
    if let Some(task_ranks) = task_ranks {
        let ranges = cut_units(space, Some(task_ranks), 1);
        let counts = count(&ranges);
        return ranges
            .into_iter()
            .zip(counts)
            .filter(|(_, c)| *c > 0)
            .unzip();
    }
    plan_tasks(space, tasks_per_layer, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::units::StateIndex;
    use tilepdb_common::{BlankRule, Goal, Partition, StateCodes};

    /// The tasks of a layer hold every current state once, whatever the layer's shape.
    #[test]
    fn layer_plans_cover_every_current_state_once() {
        let pool = crate::build::thread_pool(1, "test").unwrap();
        let partition =
            Partition::custom("4x4".parse().unwrap(), &["1,2,3,4".to_string()]).unwrap();
        let space = StateSpace::new(
            partition.board(),
            Goal::BlankFirst,
            partition.patterns()[0].clone(),
            BlankRule::Minimized,
        )
        .unwrap();
        for task_ranks in [None, Some(100), Some(5000)] {
            for (step, offset) in [(1u64, 0u64), (7, 3), (1000, 11), (50_000, 5), (u64::MAX, 7)] {
                let arrays = TableArrays::on_heap(&space, &StateIndex::Cell);
                let code = StateCodes::code_of_depth(3);
                let mut marked = 0;
                let mut s = offset;
                while s < space.states() {
                    arrays.codes.try_mark(s, code);
                    marked += 1;
                    s = s.saturating_add(step);
                }
                let (ranges, counts) = plan_layer(&space, &arrays, code, task_ranks, 16, &pool);
                assert_eq!(counts.iter().sum::<u64>(), marked);
                assert!(counts.iter().all(|&c| c > 0));
                for w in ranges.windows(2) {
                    assert!(w[0].end <= w[1].start, "overlapping tasks {ranges:?}");
                }
                for (r, &c) in ranges.iter().zip(&counts) {
                    let own = unit_states(&space, r);
                    assert_eq!(arrays.codes.count_with_code(own, code), c);
                }
                if task_ranks.is_none() && step == 1 {
                    // A full layer: tasks of whole blocks.
                    let block = space.ranker().block_len();
                    assert!(
                        ranges
                            .iter()
                            .all(|r| r.start % block == 0 && r.end % block == 0)
                    );
                }
            }
        }
    }
}
