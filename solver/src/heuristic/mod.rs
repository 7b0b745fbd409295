//! Heuristics, each evaluated incrementally: after a move only what the moved tile changes is
//! looked up again.
//!
//! A state is given as the cell of each tile, `cells[tile]`, `cells[0]` being the blank.
//!
//! ```
//! use tilepdb_common::{Board, Goal, PuzzleState};
//! use tilepdb_solver::heuristic::{Heuristic, Manhattan};
//! let board: Board = "3x3".parse().unwrap();
//! let h = Manhattan::new(board, Goal::BlankFirst);
//! let state = PuzzleState::parse(board, "1 0 2 3 4 5 6 7 8").unwrap();
//! let (value, memo) = h.evaluate(&state.cells()).unwrap();
//! assert_eq!(value, 1);
//! // Slide tile 1 back onto the goal cell 1 -> 0? No: tile 1 moves from cell 0 to cell 1.
//! let mut cells = state.cells();
//! cells[1] = 1;
//! cells[0] = 0;
//! assert_eq!(h.after_move(&cells, 1, 0, &memo).0, 0);
//! ```

//!
//! The modules, one job each: `simple` (misplaced tiles, Manhattan distance),
//! `linear_conflict`, and the pattern databases: `pdb` (the additive sum over a set, with
//! reflection), `table` (one table's entry for a state), `zero_aware` (the entry of a
//! zero-aware table: tile set, the blank's region, order), `catalogue` (the maximum over
//! additive sets, tables read through the board's symmetries) and `catalogue_tables` (the
//! tables that serve a catalogue, found in a directory of sets).

mod catalogue;
mod catalogue_tables;
mod linear_conflict;
mod pdb;
mod simple;
mod table;
mod zero_aware;

pub use catalogue::{
    CatalogueHeuristic, CatalogueMemo, CatalogueSlot, CatalogueStarted, MAX_LOOKUPS, MAX_SETS,
};
pub use catalogue_tables::{Candidate, CatalogueTables, FoundSet, Served, find_sets, resolve};
pub use linear_conflict::{ConflictMemo, LinearConflict, TABLED_LINE};
pub use pdb::{LOOK_AHEAD_BYTES, MAX_TABLES, PdbHeuristic, PdbMemo, PdbStarted};
pub use simple::{Manhattan, Misplaced};

use crate::error::Result;

/// An admissible estimate of the moves left, evaluated incrementally.
///
/// A child is evaluated in two halves, [`Heuristic::start_move`] then
/// [`Heuristic::finish_move`], so that a search can start the children of several nodes
/// before it needs their values: a table heuristic computes the entries' indices in the first
/// half and asks the processor to fetch them, and their memory reads then overlap with other
/// work instead of following one another ([`Heuristic::looks_ahead`] says whether that is worth
/// it). [`Heuristic::after_move`] does both at once. The halves write their results in place,
/// into memory the search keeps for the node, which spares copies in the innermost loop.
pub trait Heuristic: Sync {
    /// What a node keeps so that its children are evaluated from it.
    type Memo: Copy + Send;

    /// What the first half of a child's evaluation hands to the second.
    type Started: Copy + Default;

    /// The value of a state from scratch.
    fn evaluate(&self, cells: &[u8]) -> Result<(u32, Self::Memo)>;

    /// Starts evaluating the state after `tile` moved from `from` (`cells` already updated), a
    /// child of the node of memo `parent`, into `started`. By default nothing: heuristics that
    /// compute the whole value in [`Heuristic::finish_move`] leave it.
    #[inline]
    fn start_move(
        &self,
        _cells: &[u8],
        _tile: usize,
        _from: usize,
        _parent: &Self::Memo,
        _started: &mut Self::Started,
    ) {
    }

    /// Finishes evaluating the child from what [`Heuristic::start_move`] wrote for it: writes
    /// its memo into `memo` and returns its value. `cells`, `tile`, `from` and `parent` are the
    /// same as there (the search may have evaluated other states in between and put `cells`
    /// back).
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &Self::Started,
        parent: &Self::Memo,
        memo: &mut Self::Memo,
    ) -> u32;

    /// [`Heuristic::finish_move`] for a child that the search prunes when its value is above
    /// `limit`: it may stop as soon as it knows that the value is above `limit` and return a
    /// lower bound of the value that is above `limit` (what it wrote into `memo` is then not
    /// the child's memo). A value at most `limit` is the exact value, with its memo. By
    /// default the exact value.
    #[expect(
        clippy::too_many_arguments,
        reason = "finish_move's arguments and the limit, in the innermost loop"
    )]
    #[inline]
    fn finish_move_within(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &Self::Started,
        parent: &Self::Memo,
        memo: &mut Self::Memo,
        limit: u32,
    ) -> u32 {
        let _ = limit;
        self.finish_move(cells, tile, from, started, parent, memo)
    }

    /// [`Heuristic::start_move`] for a child whose value will be compared with `limit`
    /// ([`Heuristic::finish_move_within`]): a heuristic may start only what is likeliest to
    /// show that the value is above `limit`, and leave the rest to
    /// [`Heuristic::probe_move`]. `limit` may be larger than the one the child is finished
    /// with (the search's limits only decrease). By default [`Heuristic::start_move`].
    #[inline]
    fn start_move_within(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        parent: &Self::Memo,
        started: &mut Self::Started,
        limit: u32,
    ) {
        let _ = limit;
        self.start_move(cells, tile, from, parent, started);
    }

    /// The first half of [`Heuristic::finish_move_within`] for a child started by
    /// [`Heuristic::start_move_within`]: the value as [`Heuristic::finish_move_within`]
    /// returns it when what was started settles it, else `None` after starting the rest of
    /// the evaluation into `started` (`memo` then holds what was read so far), which
    /// [`Heuristic::resume_move`] finishes. Between the two halves a search may work on other
    /// children while the rest is fetched. By default the whole of
    /// [`Heuristic::finish_move_within`].
    #[expect(
        clippy::too_many_arguments,
        reason = "finish_move_within's arguments, in the innermost loop"
    )]
    #[inline]
    fn probe_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &mut Self::Started,
        parent: &Self::Memo,
        memo: &mut Self::Memo,
        limit: u32,
    ) -> Option<u32> {
        Some(self.finish_move_within(cells, tile, from, started, parent, memo, limit))
    }

    /// Finishes a child for which [`Heuristic::probe_move`] returned `None`, with the same
    /// arguments and `memo` as it left it; returns what [`Heuristic::finish_move_within`]
    /// would. By default [`Heuristic::finish_move_within`] (which starts over from `parent`).
    #[expect(
        clippy::too_many_arguments,
        reason = "finish_move_within's arguments, in the innermost loop"
    )]
    #[inline]
    fn resume_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &Self::Started,
        parent: &Self::Memo,
        memo: &mut Self::Memo,
        limit: u32,
    ) -> u32 {
        self.finish_move_within(cells, tile, from, started, parent, memo, limit)
    }

    /// Whether a search should start children ahead of time: worth it for lookups that miss
    /// the cache (tables), a cost for the heuristics computed on the spot. False unless
    /// overridden.
    fn looks_ahead(&self) -> bool {
        false
    }

    /// The value and memo after `tile` moved from `from` (`cells` already updated), given the
    /// parent's memo: both halves at once.
    #[inline]
    fn after_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        parent: &Self::Memo,
    ) -> (u32, Self::Memo) {
        let mut started = Self::Started::default();
        self.start_move(cells, tile, from, parent, &mut started);
        let mut memo = *parent;
        let h = self.finish_move(cells, tile, from, &started, parent, &mut memo);
        (h, memo)
    }
}
