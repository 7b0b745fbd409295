//! The arguments that define a job's tables, shared by `build` and `serve`.

use anyhow::bail;
use clap::Args;
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Board, Goal, Partition};
use tilepdb_coordinator::engine::SetSpec;

#[derive(Args, Clone, Debug, Default)]
pub struct JobArgs {
    /// Board: 8, 15 or 24 (3x3, 4x4, 5x5), or WxH (W columns, H rows, at most 25 cells).
    /// Defaults to the partition's board, else 15.
    #[arg(long)]
    pub puzzle: Option<String>,
    /// A known partition (see `partitions`), e.g. 15:7-8 or 24:6-6-6-6.
    /// Default: 15:6-6-3 on the 15-puzzle, 8:8 on the 8-puzzle, 24:6-6-6-6 on the 24-puzzle.
    #[arg(long, conflicts_with = "pattern")]
    pub partition: Option<String>,
    /// A pattern of your own, as tiles `1,2,3`; repeat for each pattern (they must be disjoint).
    #[arg(long, value_name = "TILES")]
    pub pattern: Vec<String>,
    /// The goal: blank-first (blank on cell 0, tile t on cell t; Korf's) or blank-last
    /// (tiles 1..n-1 then the blank; the textbooks').
    #[arg(long, default_value = "blank-first")]
    pub goal: Option<Goal>,
    /// What the abstraction does with the blank: minimized (least value over the blank's
    /// regions, one entry per placement), zero-aware (one entry per placement and region of
    /// the blank: stronger, consistent), aware (the same values, one entry per placement and
    /// blank cell: larger) or ignored (weaker, consistent).
    #[arg(long, default_value = "minimized")]
    pub blank: Option<BlankRule>,
    /// How the values are stored: byte, nibble, mod3, 1-bit or min-nibble:C (--help tells what each
    /// costs).
    ///
    /// Sizes are for one 6-tile 24-puzzle pattern (127.5 M placements); lookup rates are of
    /// random states on 2 cores (`cargo bench -p tilepdb-coordinator --bench lookup`).
    ///
    /// byte: 8 bits/entry, lossless, all tables (127.5 MB minimized). Lookup: one load (3.2 M
    /// lookups/s from the 495 MiB 15-puzzle 8-tile table, 20 M/s from a 5.5 MiB one).
    ///
    /// nibble: 4 bits/entry (63.8 MB), all tables; lossless up to 30 moves over the Manhattan
    /// distance, a lower bound above. Lookup: one load plus the pattern's Manhattan distance, as
    /// fast as byte.
    ///
    /// mod3: 1.6 bits/entry, lossless, aware and ignored tables only (aware: 484.5 MB for
    /// 2.42 G entries). Lookup: a search takes a child's value from its parent's with one load
    /// (7.4 M/s on a 15-puzzle 6-tile aware table); a lone state needs a descent of h steps to
    /// the goal (0.16 M/s).
    ///
    /// 1-bit: 1 bit/entry (bit 1 of the value), lossless, zero-aware, aware and ignored tables
    /// only. Lookup: like mod3, from the parent's value along a search path, or a descent.
    ///
    /// min-nibble:C: 4 bits per group of C consecutive entries (C a power of two; min-nibble:2
    /// of a minimized table: 31.9 MB), lossy but admissible. Lookup: one load plus the Manhattan
    /// distance, 1.0 to 2.7 times the rate of byte (smaller tables stay in cache).
    #[arg(long, default_value = "byte", value_name = "ENCODING")]
    pub encoding: Encoding,
}

impl JobArgs {
    /// The partition that the arguments name.
    pub fn partition(&self) -> anyhow::Result<Partition> {
        resolve_partition(
            self.puzzle.as_deref(),
            self.partition.as_deref(),
            &self.pattern,
        )
    }

    /// The set that the arguments define (checked: an encoding must fit the blank rule).
    pub fn spec(&self) -> anyhow::Result<SetSpec> {
        Ok(SetSpec::new(
            self.partition()?,
            self.goal(),
            self.rule(),
            self.encoding,
        )?)
    }

    pub fn goal(&self) -> Goal {
        self.goal.unwrap_or_default()
    }

    pub fn rule(&self) -> BlankRule {
        self.blank.unwrap_or_default()
    }
}

/// The partition that a board, a partition name and patterns of one's own name.
pub(super) fn resolve_partition(
    puzzle: Option<&str>,
    partition: Option<&str>,
    patterns: &[String],
) -> anyhow::Result<Partition> {
    let board: Option<Board> = puzzle.map(str::parse).transpose()?;
    if !patterns.is_empty() {
        return Ok(Partition::custom(board.unwrap_or("15".parse()?), patterns)?);
    }
    if let Some(name) = partition {
        let partition = Partition::named(name)?;
        if let Some(b) = board.filter(|&b| b != partition.board()) {
            bail!(
                "partition {name} is for the {} board, not {b}",
                partition.board()
            );
        }
        return Ok(partition);
    }
    Ok(Partition::default_for(board.unwrap_or("15".parse()?))?)
}
