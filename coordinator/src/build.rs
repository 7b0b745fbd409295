//! The single-machine build: the engine's layer loop ([`crate::engine::search_table`]) with
//! the in-process executor ([`crate::engine::ThreadsExecutor`]) on heap arrays.
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! // Every tile of the 2x2 board: the exact distances of its 12 reachable states.
//! let board: Board = "2x2".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let table = build_table(&space, &BuildOptions::default(), &()).unwrap();
//! assert_eq!(table.histogram, vec![1, 2, 2, 2, 2, 2, 1]);
//! assert_eq!(table.unreached, 12);
//! ```

use std::sync::Arc;
use std::time::Instant;
pub use tilepdb_common::human_bytes;

use tilepdb_common::table::{DepthCode, Encoding};
use tilepdb_common::{BlankRule, StateSpace};

pub use crate::engine::search::{BuildObserver, BuiltTable, histogram, spread_region_values};
use crate::engine::units::StateIndex;
use crate::engine::{
    Executor, SearchProgress, TableArrays, TableBuilder, ThreadsExecutor, finish_table,
    search_table,
};
use crate::error::{Error, Result};
use crate::region_build::RegionSetKernel;

/// How to run a build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Worker threads; 0 means every core.
    pub threads: usize,
    /// Most ranks per task; `None` picks a size that gives each thread many tasks.
    pub task_ranks: Option<u64>,
    /// Most bytes the build may hold; `None` means no limit.
    pub memory_limit: Option<u64>,
    /// The state index of the search (zero-aware tables are always built on the region index).
    pub index: SearchIndex,
    /// The encoding the table will be written in, when known: a region-indexed search then
    /// keeps only what that encoding stores of each depth (bit 1 for `1-bit`, `d mod 3` for
    /// `mod3`, see [`tilepdb_common::table::DepthCode::for_encoding`]) and the built table's
    /// values are those codes. `None`: a byte per entry, every value readable.
    pub encoding: Option<Encoding>,
}

impl BuildOptions {
    /// What the depth store of a build of `space` keeps of each depth under these options.
    pub fn depth_code(&self, space: &StateSpace) -> DepthCode {
        if self.index.is_region_for(space) {
            crate::region_build::depth_code(space, self.encoding)
        } else {
            DepthCode::Byte
        }
    }
}

/// Which state index a single-machine build searches on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchIndex {
    /// (set, region, order), dense: [`StateIndex::Region`], [`crate::region_build`].
    #[default]
    Region,
    /// `rank * (n - k) + free-cell slot`, a region represented by its least cell: the first
    /// index, kept to compare the two (and the one the distributed mode uses).
    Cell,
}

impl SearchIndex {
    /// Whether `space` is built on the region index under this choice.
    pub fn is_region_for(self, space: &StateSpace) -> bool {
        self == SearchIndex::Region || space.rule() == BlankRule::ZeroAware
    }
}

/// Bytes a single-machine build of `space` under `options` holds, and what they are, in
/// words (the memory limit of `options` is not looked at).
pub fn build_memory(space: &StateSpace, options: &BuildOptions) -> Result<(u64, String)> {
    if options.index.is_region_for(space) {
        return crate::region_build::region_build_memory(space, options.encoding);
    }
    Ok((
        space.build_memory_bytes(),
        format!(
            "two-bit array of {} states {} + {} depth bytes",
            space.states(),
            human_bytes(space.states().div_ceil(4)),
            human_bytes(space.entries())
        ),
    ))
}

/// Refuses, with the figure, a build of `space` under `options` that would not fit in their
/// memory limit.
pub fn check_build_memory(space: &StateSpace, options: &BuildOptions) -> Result<()> {
    if options.index.is_region_for(space) {
        return crate::region_build::check_region_memory(
            space,
            options.encoding,
            options.memory_limit,
        );
    }
    check_memory(space, options.memory_limit)
}

/// Refuses, with the figure, a cell-indexed build that would not fit in `limit` bytes.
pub fn check_memory(space: &StateSpace, limit: Option<u64>) -> Result<()> {
    let needed = space.build_memory_bytes();
    if let Some(limit) = limit.filter(|&l| needed > l) {
        return Err(Error::TooLarge {
            pattern: space.pattern().to_string(),
            needed: human_bytes(needed),
            detail: format!(
                "two-bit array of {} states {} + {} depth bytes",
                space.states(),
                human_bytes(space.states().div_ceil(4)),
                human_bytes(space.entries())
            ),
            limit: human_bytes(limit),
        });
    }
    Ok(())
}

/// A pool of `threads` worker threads (0: one per core).
pub fn thread_pool(threads: usize, name: &'static str) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| Error::ThreadPool(e.to_string()))
}

/// The index a single-machine build of `space` searches on under `choice`.
pub fn state_index(space: &StateSpace, choice: SearchIndex) -> Result<StateIndex> {
    if choice.is_region_for(space) {
        StateIndex::region(space)
    } else {
        Ok(StateIndex::Cell)
    }
}

/// Builds the table of `space` on this machine.
pub fn build_table(
    space: &StateSpace,
    options: &BuildOptions,
    observer: &impl BuildObserver,
) -> Result<BuiltTable> {
    check_build_memory(space, options)?;
    let pool = thread_pool(options.threads, "tilepdb-worker")?;
    let started = Instant::now();
    let index = state_index(space, options.index)?;
    let arrays = Arc::new(TableArrays::on_heap_keeping(
        space,
        &index,
        options.depth_code(space),
    ));
    arrays.mark_goal(space, &index);
    let mut progress = SearchProgress::start();
    let mut rank_executor;
    let mut region_executor;
    let executor: &mut dyn Executor = match &index {
        StateIndex::Cell => {
            rank_executor = ThreadsExecutor::new(&pool, options.task_ranks);
            &mut rank_executor
        }
        StateIndex::Region(region) => {
            let kernel = RegionSetKernel::new(region.clone());
            region_executor = ThreadsExecutor::with_kernel(&pool, options.task_ranks, kernel);
            &mut region_executor
        }
    };
    search_table(
        0,
        space,
        &index,
        &arrays,
        &mut progress,
        executor,
        &pool,
        observer,
        |_| Ok(()),
    )?;
    Ok(finish_table(
        space, &index, arrays, &progress, &pool, started,
    ))
}

/// Builds the tables of a set on this machine, with `options` ([`crate::engine::build_set`]).
pub struct LocalBuilder<'a> {
    /// How to build each table.
    pub options: &'a BuildOptions,
}

impl TableBuilder for LocalBuilder<'_> {
    type Error = Error;

    fn build(&mut self, _index: usize, space: &StateSpace) -> Result<BuiltTable> {
        build_table(space, self.options, &())
    }
}
