//! The planner: the tasks of a layer, their current states, and each task's input.
//!
//! A task is a range of units of the table's index ([`StateIndex`]: tile-set ranks on the
//! region index), whose states are one contiguous range of the index. Its input is the list of
//! its current states ([`RegionListEncoder`]), encoded as the coordinator scans them.

use std::ops::Range;

use rayon::prelude::*;
use tilepdb_common::wire::region_lists::{RegionListEncoder, RegionListShape};
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use super::job::{Job, LeasedTask};
use crate::engine::TableArrays;
use crate::engine::units::StateIndex;
use crate::error::Result;

/// Ranges of units cut per task when a layer is planned along its states: the layer's tasks
/// are made of these.
const PIECES_PER_TASK: u64 = 16;

/// The tasks of the layer whose states carry `code`, and their current states. With
/// `task_units`, fixed ranges of at most that many units (as the single-machine build cuts
/// them); otherwise about `tasks_per_layer` tasks of about equal numbers of current states
/// ([`plan_tasks`]). Ranges without a current state are left out. The counting runs on `pool`.
pub fn plan_layer(
    space: &StateSpace,
    index: &StateIndex,
    arrays: &TableArrays,
    code: u8,
    task_units: Option<u64>,
    tasks_per_layer: u64,
    pool: &rayon::ThreadPool,
) -> (Vec<Range<u64>>, Vec<u64>) {
    let count = |ranges: &[Range<u64>]| -> Vec<u64> {
        pool.install(|| {
            ranges
                .par_iter()
                .map(|r| {
                    arrays
                        .codes
                        .count_with_code(index.unit_states(space, r), code)
                })
                .collect()
        })
    };
    if let Some(task_units) = task_units {
        let ranges = index.cut_units(space, Some(task_units), 1);
        let counts = count(&ranges);
        return ranges
            .into_iter()
            .zip(counts)
            .filter(|(_, c)| *c > 0)
            .unzip();
    }
    let pieces = index.cut_units(space, None, tasks_per_layer.max(1) * PIECES_PER_TASK);
    let counts = count(&pieces);
    plan_tasks(&pieces, &counts, tasks_per_layer)
}

/// Groups consecutive `pieces` (with `counts` current states each) into tasks of about
/// 1/`tasks_per_layer` of their states; a piece without a current state ends a task and is
/// left out. Returns the tasks and their current states.
pub fn plan_tasks(
    pieces: &[Range<u64>],
    counts: &[u64],
    tasks_per_layer: u64,
) -> (Vec<Range<u64>>, Vec<u64>) {
    let total: u64 = counts.iter().sum();
    let target = total.div_ceil(tasks_per_layer.max(1)).max(1);
    let mut tasks: Vec<(Range<u64>, u64)> = Vec::new();
    let mut open: Option<(Range<u64>, u64)> = None;
    for (piece, &c) in pieces.iter().zip(counts) {
        if c == 0 {
            tasks.extend(open.take());
            continue;
        }
        match &mut open {
            Some((r, n)) if *n + c <= target && r.end == piece.start => {
                r.end = piece.end;
                *n += c;
            }
            _ => {
                tasks.extend(open.take());
                open = Some((piece.clone(), c));
            }
        }
    }
    tasks.extend(open);
    tasks.into_iter().unzip()
}

/// The shape of the lists of states of `space`'s layer at `depth` on `index`.
pub fn list_shape<'a>(
    space: &StateSpace,
    index: &'a StateIndex,
    depth: u32,
) -> RegionListShape<'a> {
    RegionListShape::new(
        index.regions(),
        space.rule() == BlankRule::Ignored,
        space.goal_cells(),
        depth,
    )
}

impl Job {
    /// The shape of the lists of table `table`'s layer at `depth`.
    pub fn list_shape(&self, table: usize, depth: u32) -> RegionListShape<'_> {
        list_shape(&self.spaces[table], &self.indexes[table], depth)
    }

    /// The input of a leased task: its current states (as the scan of its states goes: the
    /// coordinator never holds them), their number and their list's bytes.
    pub fn task_input(&self, task: &LeasedTask) -> Result<(u64, Vec<u8>)> {
        let table = task.id.table as usize;
        let own = self.indexes[table].unit_states(&self.spaces[table], &task.ranks);
        let shape = self.list_shape(table, task.id.depth);
        let mut input = RegionListEncoder::new(&shape, own.clone());
        let code = StateCodes::code_of_depth(task.id.depth);
        let mut digest = self.audit.digest();
        task.arrays.codes.for_each_with_code(own, code, |s| {
            digest.push(s);
            input.push(s);
        });
        let states = input.count();
        let bytes = input.finish()?;
        self.audit
            .note_input(table, task.id.depth, &task.ranks, digest.finish());
        Ok((states, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::{Goal, Partition};

    /// The tasks of a layer hold every current state once, whatever the layer's shape.
    #[test]
    fn layer_plans_cover_every_current_state_once() {
        let pool = crate::build::thread_pool(1, "test").unwrap();
        let partition =
            Partition::custom("4x4".parse().unwrap(), &["1,2,3,4".to_string()]).unwrap();
        for rule in [BlankRule::Minimized, BlankRule::Ignored] {
            let space = StateSpace::new(
                partition.board(),
                Goal::BlankFirst,
                partition.patterns()[0].clone(),
                rule,
            )
            .unwrap();
            let index = StateIndex::region(&space).unwrap();
            let states = index.states(&space);
            for task_units in [None, Some(10), Some(500)] {
                for (step, offset) in [(1u64, 0u64), (7, 3), (1000, 11), (50_000, 5), (u64::MAX, 7)]
                {
                    let arrays = TableArrays::on_heap(&space, &index);
                    let code = StateCodes::code_of_depth(3);
                    let mut marked = 0;
                    let mut s = offset;
                    while s < states {
                        arrays.codes.try_mark(s, code);
                        marked += 1;
                        s = s.saturating_add(step);
                    }
                    let (ranges, counts) =
                        plan_layer(&space, &index, &arrays, code, task_units, 16, &pool);
                    assert_eq!(counts.iter().sum::<u64>(), marked);
                    assert!(counts.iter().all(|&c| c > 0));
                    for w in ranges.windows(2) {
                        assert!(w[0].end <= w[1].start, "overlapping tasks {ranges:?}");
                    }
                    for (r, &c) in ranges.iter().zip(&counts) {
                        let own = index.unit_states(&space, r);
                        assert_eq!(arrays.codes.count_with_code(own, code), c);
                        if let Some(most) = task_units {
                            assert!(r.end - r.start <= most);
                        }
                    }
                    if task_units.is_none() && step == 1 {
                        // A full layer: about 16 tasks.
                        assert!((8..=32).contains(&ranges.len()), "{} tasks", ranges.len());
                    }
                }
            }
        }
    }
}
