//! The summary of a build, for people (text) and scripts (JSON), and the peak memory.

use std::path::PathBuf;

use serde::Serialize;
use tilepdb_common::StateSpace;
use tilepdb_common::table::Pdb;
use tilepdb_common::table::header::histogram_mean;

use crate::build::{BuiltTable, human_bytes};
use tilepdb_proof::Proof;

/// Arrays below this size are compared with the peak memory in bytes only: the process's own
/// memory (program, thread stacks, buffers) dwarfs them, and a ratio would say nothing.
const RATIO_MIN_ARRAYS: u64 = 64 << 20;

/// What a build of one table produced and measured.
#[derive(Clone, Debug, Serialize)]
pub struct TableReport {
    /// The board.
    pub board: String,
    /// The goal.
    pub goal: String,
    /// The blank rule.
    pub blank_rule: String,
    /// The pattern's tiles.
    pub tiles: Vec<u8>,
    /// Placements of the pattern.
    pub placements: u64,
    /// Entries of the table.
    pub entries: u64,
    /// Layers of the search.
    pub layers: u32,
    /// Largest value.
    pub max_value: u8,
    /// Mean value over reached entries.
    pub mean_value: f64,
    /// Entries never reached.
    pub unreached: u64,
    /// Seconds the build took.
    pub wall_seconds: f64,
    /// States expanded.
    pub states_expanded: u64,
    /// States expanded per second.
    pub expanded_per_second: f64,
    /// Bytes of the two-bit state array.
    pub state_array_bytes: u64,
    /// Bytes of the depth array (minimized builds).
    pub depth_bytes: u64,
    /// Peak resident memory of the process while this table was built, written and proven,
    /// as the kernel counts it, if the OS tells.
    pub peak_rss_bytes: Option<u64>,
    /// The memory plan of the same (the build, the file and its proof, the program), in
    /// bytes; `null` where no plan was made (tables found already built, distributed builds).
    pub build_memory_bytes: Option<u64>,
    /// The table file, once written.
    pub file: Option<PathBuf>,
    /// The table file's encoding, size and checksum, once written.
    pub encoding: Option<String>,
    /// The file's size in bytes.
    pub file_bytes: Option<u64>,
    /// The file's CRC-32.
    pub checksum: Option<String>,
    /// Whether the table was found already built (in the set's directory) instead of built.
    pub cached: bool,
    /// What the check of the table before it was written proved (`null`: not checked, as
    /// with `--no-proof` or a table found already built).
    pub proof: Option<Proof>,
    /// `histogram[v]` = entries of value `v`.
    pub histogram: Vec<u64>,
}

impl TableReport {
    /// What the table's space says; nothing measured yet.
    fn of_space(space: &StateSpace, histogram: Vec<u64>) -> Self {
        TableReport {
            board: space.board().to_string(),
            goal: space.goal().to_string(),
            blank_rule: space.rule().to_string(),
            tiles: space.pattern().tiles().to_vec(),
            placements: space.placements(),
            entries: space.entries(),
            layers: 0,
            max_value: 0,
            mean_value: histogram_mean(&histogram).unwrap_or(0.0),
            unreached: 0,
            wall_seconds: 0.0,
            states_expanded: 0,
            expanded_per_second: 0.0,
            state_array_bytes: 0,
            depth_bytes: 0,
            peak_rss_bytes: None,
            build_memory_bytes: None,
            file: None,
            encoding: None,
            file_bytes: None,
            checksum: None,
            cached: false,
            proof: None,
            histogram,
        }
    }

    /// The report of `table`, built in `space`.
    pub fn new(
        space: &StateSpace,
        table: &BuiltTable,
        peak_rss_bytes: Option<u64>,
        file: Option<PathBuf>,
    ) -> Self {
        let secs = table.elapsed.as_secs_f64();
        TableReport {
            layers: table.layers,
            max_value: table.max_value(),
            unreached: table.unreached,
            wall_seconds: secs,
            states_expanded: table.expanded,
            expanded_per_second: if secs > 0.0 {
                table.expanded as f64 / secs
            } else {
                0.0
            },
            state_array_bytes: table.state_array_bytes,
            depth_bytes: table.depth_bytes,
            peak_rss_bytes,
            file,
            ..TableReport::of_space(space, table.histogram.clone())
        }
    }

    /// Adds the written file's path, encoding, size and checksum.
    pub fn with_table_file(mut self, pdb: &Pdb) -> Self {
        self.file = Some(pdb.path().to_path_buf());
        self.encoding = Some(pdb.encoding().to_string());
        self.file_bytes = Some(pdb.file_len());
        self.checksum = Some(pdb.checksum());
        self
    }

    /// Adds the memory plan of the table's build, in bytes.
    pub fn with_plan(mut self, bytes: u64) -> Self {
        self.build_memory_bytes = Some(bytes);
        self
    }

    /// Adds what the table's check proved.
    pub fn with_proof(mut self, proof: Option<Proof>) -> Self {
        self.proof = proof;
        self
    }

    /// The report of a table found already built: what its header says, nothing measured.
    pub fn cached(space: &StateSpace, pdb: &Pdb) -> Self {
        let h = pdb.header();
        TableReport {
            layers: u32::from(h.max_value) + 1,
            max_value: h.max_value,
            unreached: h.unreached,
            cached: true,
            ..TableReport::of_space(space, h.histogram.clone())
        }
        .with_table_file(pdb)
    }

    /// One line for people.
    pub fn line(&self) -> String {
        let file = match (&self.file, self.file_bytes, &self.checksum) {
            (Some(f), Some(bytes), Some(sum)) => format!(
                "; {} {} ({}, {sum})",
                self.encoding.as_deref().unwrap_or("?"),
                f.display(),
                human_bytes(bytes)
            ),
            _ => String::new(),
        };
        let file = match self.proof {
            Some(proof) => format!("{file}; proof: {proof}"),
            None => file,
        };
        if self.cached {
            let tiles = self
                .tiles
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
                .join(",");
            return format!(
                "{} {} {{{tiles}}}: already built, max {}, mean {:.3}{file}",
                self.board, self.blank_rule, self.max_value, self.mean_value
            );
        }
        let tiles = self
            .tiles
            .iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let arrays = self.state_array_bytes + self.depth_bytes;
        let plan = self
            .build_memory_bytes
            .map_or_else(String::new, |b| format!(", plan {}", human_bytes(b)));
        let peak = match self.peak_rss_bytes {
            Some(p) if arrays < RATIO_MIN_ARRAYS => format!(
                "peak memory {} (arrays {}{plan})",
                human_bytes(p),
                human_bytes(arrays)
            ),
            Some(p) => format!(
                "peak memory {} ({:.2}x the arrays of {}{plan})",
                human_bytes(p),
                p as f64 / arrays as f64,
                human_bytes(arrays)
            ),
            None => format!("arrays {}{plan}", human_bytes(arrays)),
        };
        format!(
            "{} {} {{{tiles}}}: {} placements, {} layers, max {}, mean {:.3}, {:.2} s, {:.2} M states expanded/s, {peak}{file}",
            self.board,
            self.blank_rule,
            self.placements,
            self.layers,
            self.max_value,
            self.mean_value,
            self.wall_seconds,
            self.expanded_per_second / 1e6,
        )
    }
}

pub use tilepdb_common::units::peak_rss_bytes;

/// Resets the peak resident memory so that the next table's peak is its own (Linux).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Memory this process may still use: the least of the machine's available memory and its
/// memory cgroups' headroom ([`crate::memory`]), on Linux.
pub fn available_memory_bytes() -> Option<u64> {
    crate::memory::available_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::{BlankRule, Board, Goal, Pattern};

    fn report(arrays: u64, peak: u64) -> TableReport {
        let board: Board = "3x3".parse().unwrap();
        let space = StateSpace::new(
            board,
            Goal::BlankFirst,
            Pattern::new(board, vec![1, 2]).unwrap(),
            BlankRule::Minimized,
        )
        .unwrap();
        TableReport {
            state_array_bytes: arrays,
            peak_rss_bytes: Some(peak),
            ..TableReport::of_space(&space, vec![1])
        }
    }

    #[test]
    fn the_peak_is_compared_with_the_arrays_only_when_they_are_large() {
        let small = report(2 << 10, 12 << 20).line();
        assert!(
            small.contains("peak memory 12.0 MiB (arrays 2.0 KiB)"),
            "{small}"
        );
        assert!(!small.contains("x the arrays"), "{small}");
        let large = report(1 << 30, 3 << 29).line();
        assert!(large.contains("(1.50x the arrays of 1.0 GiB)"), "{large}");
    }
}
