//! The arguments that define a job's tables, shared by `build` and `serve`.

use anyhow::bail;
use clap::Args;
use tilepdb_common::{BlankRule, Board, Goal, Partition};

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
    /// regions, one entry per placement), aware (one entry per placement and blank cell:
    /// larger, stronger, consistent) or ignored (weaker, consistent).
    #[arg(long, default_value = "minimized")]
    pub blank: Option<BlankRule>,
}

impl JobArgs {
    /// The partition that the arguments name.
    pub fn partition(&self) -> anyhow::Result<Partition> {
        let board: Option<Board> = self.puzzle.as_deref().map(str::parse).transpose()?;
        if !self.pattern.is_empty() {
            return Ok(Partition::custom(
                board.unwrap_or("15".parse()?),
                &self.pattern,
            )?);
        }
        if let Some(name) = &self.partition {
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

    pub fn goal(&self) -> Goal {
        self.goal.unwrap_or_default()
    }

    pub fn rule(&self) -> BlankRule {
        self.blank.unwrap_or_default()
    }
}
