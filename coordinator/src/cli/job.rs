//! The arguments that define a job's tables, shared by `build` and `serve`.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::time::Duration;

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
    /// How the values are stored: byte, nibble, mod3, 1-bit or min-nibble:C (--help tells what
    /// each is; measured sizes and lookup rates are in docs/benchmarks.md).
    ///
    /// byte: 8 bits/entry, lossless, all tables. Lookup: one load.
    ///
    /// nibble: 4 bits/entry, all tables; lossless up to 30 moves over the Manhattan distance,
    /// a lower bound above. Lookup: one load plus the pattern's Manhattan distance.
    ///
    /// mod3: 1.6 bits/entry, lossless, aware and ignored tables only. Lookup: a search takes a
    /// child's value from its parent's with one load; a lone state needs a descent of h steps
    /// to the goal.
    ///
    /// 1-bit: 1 bit/entry (bit 1 of the value), lossless, zero-aware, aware and ignored tables
    /// only. Lookup: like mod3, from the parent's value along a search path, or a descent.
    ///
    /// min-nibble:C: 4 bits per group of C consecutive entries (C a power of two), lossy but
    /// admissible. Lookup: one load plus the Manhattan distance.
    #[arg(long, default_value = "byte", value_name = "ENCODING")]
    pub encoding: Encoding,
    /// Write each table without proving it first. By default every table built, of every
    /// kind in every encoding, is proven before its file appears, and built again if it
    /// fails: each entry must be its exact distance, or that distance's encoding (the Bellman
    /// check, which reads every entry's neighbours once, or one search from the goal that
    /// meets every state at its distance). The summary says which proof ran.
    #[arg(long)]
    pub no_proof: bool,
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
        let partition = Partition::named_on(name, board)?;
        if let Some(b) = board.filter(|&b| b != partition.board()) {
            bail!(
                "partition {name} is for the {} board, not {b}",
                partition.board()
            );
        }
        return Ok(partition);
    }
    Partition::default_for(board.unwrap_or("15".parse()?))
        .map_err(|e| anyhow::anyhow!("{e}; give one or more --pattern"))
}

pub(super) use tilepdb_common::units::parse_bytes;

/// A size above zero (see [`parse_bytes`]), for rates and limits where 0 would mean nothing.
pub(super) fn parse_positive_bytes(s: &str) -> Result<u64, String> {
    match parse_bytes(s)? {
        0 => Err(format!(
            "{s:?} is zero: give a positive size such as 50M (leave the option out for no limit)"
        )),
        n => Ok(n),
    }
}

/// A positive number of seconds, for the option `what`.
pub(super) fn seconds(s: f64, what: &str) -> anyhow::Result<Duration> {
    if !(s > 0.0 && s < 1e7) {
        bail!("{what} must be a positive number of seconds, not {s}");
    }
    Ok(Duration::from_secs_f64(s))
}

/// A share from 0 to 1 (`--audit-fraction`).
pub(super) fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("{s:?} is not a share from 0 to 1 (such as 0.0625)")),
    }
}

/// `--task-ranks`: a whole number of ranks above zero.
pub(super) fn parse_task_ranks(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("0 ranks per task: give at least 1 (or leave the option out)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{s:?} is not a number of ranks (a whole number from 1 to {})",
            u64::MAX
        )),
    }
}
