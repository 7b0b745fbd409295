//! What a bench run records: each search, each table, the run's provenance and the summary
//! per entry.

use std::path::PathBuf;

use serde::Serialize;

use tilepdb_common::Goal;

use crate::search::{IterationCounts, Outcome};

/// One search: an entry on an instance.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceRecord {
    /// The entry's label.
    pub entry: String,
    /// 1-based position in the instance file.
    pub number: usize,
    /// The instance's state.
    pub instance: String,
    /// How the search ended.
    pub outcome: Outcome,
    /// The solution's length, if solved.
    pub length: Option<usize>,
    /// Nodes expanded (their children generated).
    pub expanded: u64,
    /// Nodes generated.
    pub generated: u64,
    /// Seconds of search.
    pub seconds: f64,
    /// Heuristic value of the start.
    pub initial_h: u32,
    /// Each IDA* iteration's bound, nodes expanded and generated.
    pub per_iteration: Vec<IterationCounts>,
}

/// One table of a set, for its value histogram.
#[derive(Clone, Debug, Serialize)]
pub struct TableHistogram {
    /// The set's directory name and the table's file name.
    pub set: String,
    /// The table's file name.
    pub table: String,
    /// `counts[v]`: entries of value `v`.
    pub counts: Vec<u64>,
}

/// A table file an entry searched with, as it was on disk: what identifies its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableFile {
    /// The file's name in its set's directory.
    pub file: String,
    /// The table's pattern.
    pub tiles: Vec<u8>,
    /// The file's size in bytes.
    pub file_bytes: u64,
    /// The file's checksum as the set's manifest records it (`crc32:` and the CRC-32 of the
    /// header, which holds the payload's CRC-32).
    pub checksum: String,
}

/// The program a report was made by: its version, the commit it was built from and the
/// command line it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// The program's name.
    pub program: String,
    /// Its version (the crate's).
    pub program_version: String,
    /// The git commit it was built from: `TILEPDB_COMMIT` at build time, else what git said
    /// in the source tree, else `unknown` (see the crate's `build.rs`).
    pub commit: String,
    /// The command line, program first, each argument as given.
    pub command_line: Vec<String>,
}

impl Provenance {
    /// This program, run with `command_line`.
    pub fn new(command_line: Vec<String>) -> Provenance {
        Provenance {
            program: "tilepdb-solve".to_string(),
            program_version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("TILEPDB_COMMIT").to_string(),
            command_line,
        }
    }

    /// This process: its own command line.
    pub fn of_this_process() -> Provenance {
        Provenance::new(std::env::args().collect())
    }

    /// The program, version and commit in one phrase: `tilepdb-solve 0.1.0 (commit abc…)`.
    pub fn program_line(&self) -> String {
        format!(
            "{} {} (commit {})",
            self.program, self.program_version, self.commit
        )
    }

    /// The command line as one line a shell reads back the same (arguments quoted where
    /// they need it).
    pub fn command_text(&self) -> String {
        self.command_line
            .iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else in
/// single quotes.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// What an entry did over all instances.
#[derive(Clone, Debug, Serialize)]
pub struct EntrySummary {
    /// The entry's label.
    pub entry: String,
    /// The heuristic and, for tables, the set, its encoding and whether reflected.
    pub heuristic: String,
    /// The set's directory, for tables (`None` for the computed heuristics).
    pub set_dir: Option<PathBuf>,
    /// The set's table files with their checksums (empty for the computed heuristics).
    pub tables: Vec<TableFile>,
    /// Bytes of table files (0 for the computed heuristics).
    pub table_bytes: u64,
    /// Instances searched.
    pub instances: usize,
    /// Instances solved.
    pub solved: usize,
    /// Nodes expanded over every instance; one stopped by a budget counts the nodes it spent.
    pub total_expanded: u64,
    /// Nodes generated over every instance.
    pub total_generated: u64,
    /// Mean nodes expanded.
    pub mean_expanded: f64,
    /// Mean nodes generated.
    pub mean_generated: f64,
    /// Median nodes generated.
    pub median_generated: f64,
    /// CPU seconds (user + system) of the process while the entry's searches ran (not the mean
    /// over random states), over every thread: beside `total_seconds`, the searches' summed
    /// wall times.
    pub cpu_seconds: f64,
    /// `total_expanded / cpu_seconds`.
    pub expanded_per_cpu_second: f64,
    /// `total_generated / cpu_seconds`.
    pub generated_per_cpu_second: f64,
    /// Mean seconds.
    pub mean_seconds: f64,
    /// Median seconds.
    pub median_seconds: f64,
    /// Total seconds.
    pub total_seconds: f64,
    /// Mean heuristic value of the starts.
    pub mean_initial_h: f64,
    /// Over [`Protocol::random_states`](super::Protocol::random_states) seeded random states.
    pub mean_random_h: f64,
    /// Not dominated in (table memory, mean nodes).
    pub on_memory_front: bool,
    /// Not dominated in (total time, instances solved).
    pub on_time_front: bool,
}

/// The whole run: provenance, protocol, machine, records and summaries.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// The program, its commit and the command line that made the report.
    #[serde(flatten)]
    pub provenance: Provenance,
    /// When the run started.
    pub date: String,
    /// The machine it ran on.
    pub machine: String,
    /// The board.
    pub board: String,
    /// The goal.
    pub goal: Goal,
    /// Instances searched.
    pub instances: usize,
    /// Node budget per search.
    pub max_nodes: Option<u64>,
    /// Time budget per search.
    pub timeout_seconds: Option<f64>,
    /// Instances searched at once.
    pub threads: usize,
    /// Threads searching each instance (1: the sequential search).
    pub search_threads: usize,
    /// Random states per entry for the mean heuristic value.
    pub random_states: usize,
    /// Seed of the random states.
    pub seed: u64,
    /// How the tables were held: `map` or `memory`.
    pub load: String,
    /// One summary per entry.
    pub summaries: Vec<EntrySummary>,
    /// Entries (labels) on the memory/effort front, by increasing memory.
    pub memory_front: Vec<String>,
    /// Entries on the time/solved front, by increasing time.
    pub time_front: Vec<String>,
    /// Every search (written to their own files).
    #[serde(skip)]
    pub records: Vec<InstanceRecord>,
    /// Every table's histogram (written to their own files).
    #[serde(skip)]
    pub histograms: Vec<TableHistogram>,
}
