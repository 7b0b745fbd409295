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

use tilepdb_common::StateSpace;
use tilepdb_common::table::{DepthCode, Encoding};

pub use crate::engine::build_memory::MemoryPlan;
use crate::engine::kernel::RegionSetKernel;
pub use crate::engine::search::{BuildObserver, BuiltTable};
use crate::engine::{
    SearchProgress, StateIndex, TableArrays, TableBuilder, ThreadsExecutor, build_memory,
    finish_search, finish_table, search_table,
};
use crate::error::{Error, Result};

/// How to run a build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Worker threads; 0 means every core.
    pub threads: usize,
    /// Most tile sets per task; `None` picks a size that gives each thread many tasks.
    pub task_ranks: Option<u64>,
    /// Most bytes the build may hold; `None` means no limit.
    pub memory_limit: Option<u64>,
    /// The encoding the table will be written in, when known: the search then keeps only what
    /// that encoding stores of each depth (bit 1 for `1-bit`, `d mod 3` for `mod3`, see
    /// [`tilepdb_common::table::DepthCode::for_encoding`]) and the built table's values are
    /// those codes. `None`: a byte per entry, every value readable.
    pub encoding: Option<Encoding>,
    /// The encoding the table's file is written in after the build, when it is (as
    /// [`crate::engine::build_set`] does): the memory plan counts the file, mapped and read
    /// through. `None`: the build alone.
    pub written_as: Option<Encoding>,
    /// Whether the written file is proven before it is published: the memory plan counts the
    /// proof's arrays.
    pub proves: bool,
}

impl BuildOptions {
    /// What the depth store of a build of `space` keeps of each depth under these options.
    pub fn depth_code(&self, space: &StateSpace) -> DepthCode {
        build_memory::depth_code(space, self.encoding)
    }
}

/// The memory a single-machine build of `space` under `options` holds: the build, and the
/// file written and proven as they say (the memory limit of `options` is not looked at).
pub fn memory_plan(space: &StateSpace, options: &BuildOptions) -> Result<MemoryPlan> {
    build_memory::memory_plan(space, options.encoding, options.written_as, options.proves)
}

/// Bytes a single-machine build of `space` under `options` holds at most ([`memory_plan`]),
/// and what they are, in words.
pub fn build_memory(space: &StateSpace, options: &BuildOptions) -> Result<(u64, String)> {
    let plan = memory_plan(space, options)?;
    Ok((plan.bytes, plan.detail))
}

/// Refuses, with the figure and its parts, a build of `space` under `options` that would not
/// fit in their memory limit.
pub fn check_build_memory(space: &StateSpace, options: &BuildOptions) -> Result<()> {
    build_memory::check_memory_plan(space, &memory_plan(space, options)?, options.memory_limit)
}

/// A pool of `threads` worker threads (0: one per core).
pub fn thread_pool(threads: usize, name: &'static str) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| Error::ThreadPool(e.to_string()))
}

/// Builds the table of `space` on this machine, its values in the file's order.
pub fn build_table(
    space: &StateSpace,
    options: &BuildOptions,
    observer: &impl BuildObserver,
) -> Result<BuiltTable> {
    let searched = search(space, options, observer)?;
    Ok(finish_table(
        space,
        &searched.index,
        searched.arrays,
        &searched.progress,
        &searched.pool,
        searched.started,
    ))
}

/// Builds the table of `space` on this machine, its values left in the search's depth store
/// ([`BuiltTable::store`]) to be streamed to its file in file order
/// ([`BuiltTable::write_file`]): no second copy of the values is made. A byte store's
/// histogram is known once the file is written.
pub fn build_table_store(
    space: &StateSpace,
    options: &BuildOptions,
    observer: &impl BuildObserver,
) -> Result<BuiltTable> {
    let searched = search(space, options, observer)?;
    Ok(finish_search(
        space,
        &searched.index,
        searched.arrays,
        &searched.progress,
        Arc::new(searched.pool),
        searched.started,
    ))
}

/// A finished search of one table on this machine.
struct Searched {
    index: StateIndex,
    arrays: Arc<TableArrays>,
    progress: SearchProgress,
    pool: rayon::ThreadPool,
    started: Instant,
}

/// Searches the table of `space` on heap arrays with the in-process executor.
fn search(
    space: &StateSpace,
    options: &BuildOptions,
    observer: &impl BuildObserver,
) -> Result<Searched> {
    check_build_memory(space, options)?;
    let pool = thread_pool(options.threads, "tilepdb-worker")?;
    let started = Instant::now();
    let index = StateIndex::region(space)?;
    let arrays = Arc::new(TableArrays::leanest_on_heap(
        space,
        &index,
        options.depth_code(space),
    ));
    arrays.mark_goal(space, &index);
    let mut progress = SearchProgress::start();
    let kernel = RegionSetKernel::new(index.regions().clone());
    let mut executor = ThreadsExecutor::with_kernel(&pool, options.task_ranks, kernel);
    search_table(
        0,
        space,
        &index,
        &arrays,
        &mut progress,
        &mut executor,
        &pool,
        observer,
        |_| Ok(()),
    )?;
    drop(executor);
    Ok(Searched {
        index,
        arrays,
        progress,
        pool,
        started,
    })
}

/// Builds the tables of a set on this machine, with `options` ([`crate::engine::build_set`]).
pub struct LocalBuilder<'a> {
    /// How to build each table.
    pub options: &'a BuildOptions,
}

impl TableBuilder for LocalBuilder<'_> {
    type Error = Error;

    fn build(&mut self, _index: usize, space: &StateSpace) -> Result<BuiltTable> {
        build_table_store(space, self.options, &())
    }
}
