//! The in-process executor: a layer's tasks expanded by a rayon pool.
//!
//! Each task is a range of units ([`super::units`]); a [`Kernel`] expands the current
//! states of a task and merges what they reach into the arrays
//! ([`super::kernel::RegionSetKernel`]; tests plug in others).

use std::ops::Range;
use std::sync::Arc;

use rayon::ThreadPool;
use rayon::prelude::*;
use tilepdb_common::StateSpace;
use tilepdb_common::region_expand::ExpandStats;

use super::arrays::TableArrays;
use super::search::{BuildObserver, Executor, Layer};
use crate::error::Result;

/// Expands one task: the current states (code of `depth`) of the units `units`, their
/// unseen successors marked as the layer `depth + 1` with their depths recorded.
pub trait Kernel: Sync {
    /// Expands the task; what it measured.
    fn expand_task(
        &self,
        space: &StateSpace,
        units: Range<u64>,
        arrays: &TableArrays,
        depth: u32,
    ) -> ExpandStats;
}

/// Expands layers on the threads of a pool, tasks cut by size
/// ([`super::units::StateIndex::cut_units`]).
pub struct ThreadsExecutor<'p, K: Kernel> {
    pool: &'p ThreadPool,
    /// Most units per task; `None`: about 16 tasks per thread.
    task_units: Option<u64>,
    kernel: K,
    /// The tasks of the table being searched (the same for each of its layers).
    tasks: Option<(usize, Vec<Range<u64>>)>,
}

impl<'p, K: Kernel> ThreadsExecutor<'p, K> {
    /// An executor of `kernel` on `pool`.
    pub fn with_kernel(pool: &'p ThreadPool, task_units: Option<u64>, kernel: K) -> Self {
        ThreadsExecutor {
            pool,
            task_units,
            kernel,
            tasks: None,
        }
    }

    fn tasks(&mut self, layer: &Layer<'_>) -> &[Range<u64>] {
        if self.tasks.as_ref().is_none_or(|(t, _)| *t != layer.table) {
            let parts = self.pool.current_num_threads() as u64 * 16;
            let tasks = layer.index.cut_units(layer.space, self.task_units, parts);
            self.tasks = Some((layer.table, tasks));
        }
        &self.tasks.as_ref().expect("just cut").1
    }
}

impl<K: Kernel> Executor for ThreadsExecutor<'_, K> {
    fn expand_layer(
        &mut self,
        layer: &Layer<'_>,
        observer: &dyn BuildObserver,
    ) -> Result<ExpandStats> {
        let (pool, space) = (self.pool, layer.space);
        let tasks = self.tasks(layer).to_vec();
        observer.layer_started(layer.depth, layer.states, tasks.len());
        let arrays: &Arc<TableArrays> = layer.arrays;
        let kernel = &self.kernel;
        Ok(pool.install(|| {
            tasks
                .par_iter()
                .map(|units| {
                    let stats = kernel.expand_task(space, units.clone(), arrays, layer.depth);
                    observer.task_finished(units);
                    stats
                })
                .reduce(ExpandStats::default, |mut a, b| {
                    a += b;
                    a
                })
        }))
    }
}
