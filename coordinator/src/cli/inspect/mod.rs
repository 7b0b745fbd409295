//! `tilepdb-coordinator inspect FILE|DIR`: a table's header, sizes and histogram, or those of
//! every table of a set with the set's statistics (mean value, mean heuristic over random
//! states with and without reflection, Manhattan's); `--plot` draws the value histograms;
//! `--plan` shows the header and sizes of tables not built yet.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;
use serde::Serialize;
use tilepdb_common::table::header::{FORMAT_MAJOR, FORMAT_MINOR, HEADER_LEN, histogram_mean};
use tilepdb_common::table::statistics::SetStatistics;
use tilepdb_common::table::{Encoding, Header, Pdb, TableSet};
use tilepdb_common::{BlankRule, Goal, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, MemoryPlan, human_bytes, memory_plan};
use tilepdb_coordinator::cluster::sharded::plan::ShardPlan;
use tilepdb_coordinator::report::available_memory_bytes;
use tilepdb_proof::Proof;

mod plan;
mod plots;

use plan::{plan, print_sharded};
use plots::{check_plot_file, plot_set, plot_tables, table_name};

#[derive(Args)]
pub struct InspectArgs {
    /// A table file (`.pdb`) or a table set's directory (with its `manifest.json`).
    #[arg(required_unless_present = "plan")]
    path: Option<PathBuf>,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
    /// Show the header and sizes the tables of a partition would have, without building them
    /// (chosen with --puzzle, --partition or --pattern, --goal, --blank, --encoding).
    #[arg(long, conflicts_with = "path")]
    plan: bool,
    /// With --plan: the board (8, 15, 24 or WxH).
    #[arg(long, requires = "plan")]
    puzzle: Option<String>,
    /// With --plan: a known partition, e.g. 24:6-6-6-6.
    #[arg(long, requires = "plan", conflicts_with = "pattern")]
    partition: Option<String>,
    /// With --plan: a pattern of one's own, `1,2,3`; repeat for each pattern.
    #[arg(long, value_name = "TILES", requires = "plan")]
    pattern: Vec<String>,
    /// With --plan: the goal, blank-first or blank-last.
    #[arg(long, default_value = "blank-first", requires = "plan")]
    goal: Goal,
    /// With --plan: minimized, aware, zero-aware or ignored.
    #[arg(long, default_value = "minimized", requires = "plan")]
    blank: BlankRule,
    /// With --plan: also what a sharded build on P shards needs per worker, for the
    /// coordinator and on the wire.
    #[arg(long, value_name = "P", requires = "plan")]
    shards: Option<u32>,
    /// With --plan: byte, nibble, mod3, 1-bit or min-nibble:C.
    #[arg(long, default_value = "byte", requires = "plan")]
    encoding: Encoding,
    /// For a set: the uniformly random solvable states its mean heuristic is taken over
    /// [default: 1000; 0 for none].
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "plan",
        value_parser = tilepdb_common::units::parse_random_states
    )]
    random_states: Option<usize>,
    /// The seed of those states [default: 1].
    #[arg(long, conflicts_with = "plan")]
    seed: Option<u64>,
    /// Draw the value histogram (one series per table of a set) into FILE, .svg or .png.
    #[arg(long, value_name = "FILE", conflicts_with = "plan")]
    plot: Option<PathBuf>,
}

/// What `inspect` says about one table (JSON keys in this order).
#[derive(Serialize)]
pub struct TableInfo {
    /// The file, or null for a plan.
    pub file: Option<PathBuf>,
    pub format_version: String,
    pub board: String,
    pub goal: String,
    pub blank_rule: String,
    pub tiles: Vec<u8>,
    pub encoding: String,
    pub bits_per_entry: f64,
    pub placements: u64,
    pub entries: u64,
    /// Stored values: entries, or groups of min-nibble.
    pub stored: u64,
    pub stored_unit: &'static str,
    pub header_bytes: u64,
    pub payload_bytes: u64,
    pub file_bytes: u64,
    /// Bytes a single-machine build of the table holds in memory at most, as the kernel
    /// counts them: the larger of the build (two-bit array of the region-indexed search, the
    /// depth store of what the encoding keeps and, unless zero-aware, the values in placement
    /// order) and of the file mapped with its proof, and the program itself.
    pub build_memory_bytes: u64,
    /// The same without the proof (`--no-proof`).
    pub build_memory_no_proof_bytes: u64,
    /// The proof the table gets before it is written (`bellman-check`, `layer-search`).
    pub proof: Option<Proof>,
    /// Bytes held while it runs: the file mapped and the proof's own arrays.
    pub proof_memory_bytes: u64,
    /// What those bytes are, in words.
    pub build_memory_detail: String,
    /// States of the region-indexed search (placement, region of the blank).
    pub search_states: u64,
    /// Null for a plan.
    pub max_value: Option<u8>,
    pub mean_value: Option<f64>,
    pub unreached: Option<u64>,
    pub histogram: Option<Vec<u64>>,
    pub checksum: Option<String>,
    pub payload_crc32: Option<String>,
    /// With `--plan --shards P`: what a sharded build needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharded: Option<ShardPlan>,
}

impl TableInfo {
    fn new(header: &Header, space: &StateSpace, pdb: Option<&Pdb>) -> TableInfo {
        let built = pdb.is_some();
        // A build that writes this encoding keeps only what it stores of each depth, writes
        // the file and proves it.
        let options = BuildOptions {
            encoding: Some(header.encoding),
            written_as: Some(header.encoding),
            proves: true,
            ..BuildOptions::default()
        };
        let memory = memory_plan(space, &options);
        let unproven = memory_plan(
            space,
            &BuildOptions {
                proves: false,
                ..options
            },
        );
        TableInfo {
            file: pdb.map(|p| p.path().to_path_buf()),
            format_version: format!("{}.{}", header.major, header.minor),
            board: header.board.to_string(),
            goal: header.goal.to_string(),
            blank_rule: header.rule.to_string(),
            tiles: header.tiles.clone(),
            encoding: header.encoding.to_string(),
            bits_per_entry: header.encoding.bits_per_entry(),
            placements: space.placements(),
            entries: header.entries,
            stored: header.units,
            stored_unit: header.encoding.unit_name(),
            header_bytes: HEADER_LEN as u64,
            payload_bytes: header.payload_len,
            file_bytes: header.file_len(),
            build_memory_bytes: memory.as_ref().map_or(u64::MAX, |p| p.bytes),
            build_memory_no_proof_bytes: unproven.map_or(u64::MAX, |p| p.bytes),
            proof: memory
                .as_ref()
                .ok()
                .and_then(|p| p.proof.as_ref().map(|p| p.proof)),
            proof_memory_bytes: memory
                .as_ref()
                .map_or(u64::MAX, MemoryPlan::proof_phase_bytes),
            build_memory_detail: memory.map_or_else(|e| e.to_string(), |p| p.detail),
            search_states: space.region_search_states().unwrap_or(u64::MAX),
            max_value: built.then_some(header.max_value),
            mean_value: histogram_mean(&header.histogram).filter(|_| built),
            unreached: built.then_some(header.unreached),
            histogram: built.then(|| header.histogram.clone()),
            checksum: pdb.map(tilepdb_common::table::Pdb::checksum),
            payload_crc32: pdb.map(|_| format!("{:08x}", header.payload_crc32)),
            sharded: None,
        }
    }

    /// The text form, one field a line.
    pub fn print(&self) {
        self.print_definition();
        self.print_sizes();
        if let Some(p) = &self.sharded {
            print_sharded(p);
        }
        self.print_fit();
        self.print_values();
    }

    /// What the table is: its file, board, goal, rule, tiles and encoding.
    fn print_definition(&self) {
        let name = match &self.file {
            Some(f) => f.display().to_string(),
            None => format!("plan (not built; format {FORMAT_MAJOR}.{FORMAT_MINOR})"),
        };
        let encoding: Encoding = self.encoding.parse().expect("a valid encoding");
        let tiles = self
            .tiles
            .iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        tilepdb_common::outln!("{name}");
        if self.file.is_some() {
            tilepdb_common::outln!("  format      {}", self.format_version);
        }
        tilepdb_common::outln!("  board       {}, goal {}", self.board, self.goal);
        tilepdb_common::outln!("  blank rule  {}", self.blank_rule);
        tilepdb_common::outln!("  tiles       {tiles}");
        tilepdb_common::outln!("  encoding    {} ({})", self.encoding, encoding.cost());
    }

    /// How large it is: its entries, payload, file, and the memory its build takes.
    fn print_sizes(&self) {
        let per = self.entries / self.placements;
        let entries = if self.blank_rule == BlankRule::ZeroAware.name() {
            format!("{} (placement, region of the blank)", commas(self.entries))
        } else if per > 1 {
            format!(
                "{} ({} placements x {per} blank cells)",
                commas(self.entries),
                commas(self.placements)
            )
        } else {
            format!("{} (one per placement)", commas(self.entries))
        };
        tilepdb_common::outln!("  entries     {entries}");
        tilepdb_common::outln!(
            "  payload     {} {} in {} payload bytes ({})",
            commas(self.stored),
            self.stored_unit,
            commas(self.payload_bytes),
            human_bytes(self.payload_bytes)
        );
        tilepdb_common::outln!(
            "  file        {} bytes ({} of header + payload)",
            commas(self.file_bytes),
            commas(self.header_bytes)
        );
        tilepdb_common::outln!(
            "  build       {} of memory at most with its proof{}, {} without (--no-proof)",
            human_bytes(self.build_memory_bytes),
            self.proof.map_or_else(String::new, |p| format!(
                " ({p}, {} with the file)",
                human_bytes(self.proof_memory_bytes)
            )),
            human_bytes(self.build_memory_no_proof_bytes),
        );
        tilepdb_common::outln!(
            "              {} search states: {}",
            commas(self.search_states),
            self.build_memory_detail
        );
    }

    /// Whether a plan's build fits this machine's available memory.
    fn print_fit(&self) {
        if let Some(available) = available_memory_bytes().filter(|_| self.file.is_none()) {
            tilepdb_common::outln!(
                "  this machine {} available: {}",
                human_bytes(available),
                if self.build_memory_bytes <= available {
                    "fits"
                } else {
                    "does not fit, `build` refuses it"
                }
            );
        }
    }

    /// A built table's values: their maximum, mean, checksums and histogram.
    fn print_values(&self) {
        if let (Some(max), Some(unreached), Some(hist)) =
            (self.max_value, self.unreached, &self.histogram)
        {
            tilepdb_common::outln!(
                "  values      max {max}, mean {:.3}, {} unreached",
                self.mean_value.unwrap_or(0.0),
                commas(unreached)
            );
            tilepdb_common::outln!(
                "  checksum    {} (payload crc32 {})",
                self.checksum.as_deref().unwrap_or("-"),
                self.payload_crc32.as_deref().unwrap_or("-")
            );
            let cells: Vec<String> = hist
                .iter()
                .enumerate()
                .filter(|(_, n)| **n != 0)
                .map(|(v, n)| format!("{v}:{n}"))
                .collect();
            tilepdb_common::outln!("  histogram   {}", cells.join(" "));
        }
    }
}

/// `1234567` as `1,234,567`.
pub fn commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[derive(Serialize)]
struct SetInfo {
    /// The set's directory (`None` for a plan).
    set_dir: Option<PathBuf>,
    partition: String,
    board: String,
    goal: String,
    blank_rule: String,
    encoding: String,
    reflection: bool,
    total_file_bytes: u64,
    /// The most a build of the set holds at once: its largest table's (tables are built one
    /// at a time), with the proof.
    build_memory_bytes: u64,
    /// Its fields sit at the set's level; absent for a plan.
    #[serde(flatten)]
    statistics: Option<SetStatistics>,
    tables: Vec<TableInfo>,
}

impl SetInfo {
    /// The set's file bytes in all and the memory its build holds at most (its largest
    /// table's: tables are built one at a time), from its `tables`.
    fn totals(tables: &[TableInfo]) -> (u64, u64) {
        let files = tables.iter().map(|t| t.file_bytes).sum();
        let build = tables
            .iter()
            .map(|t| t.build_memory_bytes)
            .max()
            .unwrap_or(0);
        (files, build)
    }

    fn print(&self) {
        let name = match &self.set_dir {
            Some(d) => d.display().to_string(),
            None => "plan".to_string(),
        };
        tilepdb_common::outln!(
            "set {name}: partition {}, {} board, goal {}, blank {}, {}, reflection {}, {} table(s), {} bytes; a build holds at most {} (its largest table's, with the proof)",
            self.partition,
            self.board,
            self.goal,
            self.blank_rule,
            self.encoding,
            if self.reflection {
                "applies"
            } else {
                "does not apply"
            },
            self.tables.len(),
            commas(self.total_file_bytes),
            human_bytes(self.build_memory_bytes)
        );
        if let Some(s) = &self.statistics {
            print_statistics(s);
        }
        for t in &self.tables {
            t.print();
        }
    }
}

pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    if args.plan {
        return plan(&args);
    }
    let path = args
        .path
        .as_deref()
        .expect("clap requires a path without --plan");
    if let Some(file) = &args.plot {
        check_plot_file(file)?;
    }
    if path.is_dir() {
        let set = TableSet::open(path)?;
        let statistics = set_statistics(&set, &args)?;
        let m = set.manifest();
        let tables: Vec<TableInfo> = set
            .tables()
            .iter()
            .map(|p| TableInfo::new(p.header(), p.space(), Some(p)))
            .collect();
        let (total_file_bytes, build_memory_bytes) = SetInfo::totals(&tables);
        let info = SetInfo {
            set_dir: Some(path.to_path_buf()),
            partition: m.partition.clone(),
            board: m.board.to_string(),
            goal: m.goal.to_string(),
            blank_rule: m.blank_rule.to_string(),
            encoding: m.encoding.to_string(),
            reflection: m.reflection,
            total_file_bytes,
            build_memory_bytes,
            statistics: Some(statistics),
            tables,
        };
        output(&info, args.json, SetInfo::print)?;
        if let Some(file) = &args.plot {
            plot_set(file, &set, path, args.json)?;
        }
        Ok(())
    } else {
        if args.random_states.is_some() || args.seed.is_some() {
            bail!(
                "{}: --random-states and --seed take a set's directory (a heuristic sums a set's tables), not one table",
                path.display()
            );
        }
        let pdb = open_file(path)?;
        let info = TableInfo::new(pdb.header(), pdb.space(), Some(&pdb));
        output(&info, args.json, TableInfo::print)?;
        if let Some(file) = &args.plot {
            plot_tables(file, &table_name(&pdb), &[&pdb], args.json)?;
        }
        Ok(())
    }
}

/// Random states of a set's statistics unless asked otherwise.
const DEFAULT_RANDOM_STATES: usize = 1000;
/// Their seed unless asked otherwise.
const DEFAULT_SEED: u64 = 1;

/// The set's mean value and its mean heuristic over the random states asked for.
fn set_statistics(set: &TableSet, args: &InspectArgs) -> anyhow::Result<SetStatistics> {
    Ok(SetStatistics::of(
        set,
        args.random_states.unwrap_or(DEFAULT_RANDOM_STATES),
        args.seed.unwrap_or(DEFAULT_SEED),
    )?)
}

fn print_statistics(s: &SetStatistics) {
    tilepdb_common::outln!(
        "  mean value  {:.3} (the sum of the tables' means)",
        s.mean_value
    );
    let (Some(h), Some(m)) = (s.mean_heuristic, s.mean_manhattan) else {
        return;
    };
    let reflected = s
        .mean_heuristic_reflected
        .map_or("reflection does not apply".to_string(), |r| {
            format!("{r:.3} with reflection")
        });
    tilepdb_common::outln!(
        "  random      {} solvable states (seed {}): mean heuristic {h:.3}, {reflected}; Manhattan {m:.3}",
        commas(s.random_states as u64),
        s.seed
    );
}

fn open_file(path: &Path) -> anyhow::Result<Pdb> {
    if !path.exists() {
        bail!("{}: no such file or directory", path.display());
    }
    Ok(Pdb::open(path)?)
}

fn output<T: Serialize>(info: &T, json: bool, print: fn(&T)) -> anyhow::Result<()> {
    if json {
        tilepdb_common::json::print("inspect", info)?;
    } else {
        print(info);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn commas() {
        assert_eq!(super::commas(0), "0");
        assert_eq!(super::commas(999), "999");
        assert_eq!(super::commas(1000), "1,000");
        assert_eq!(super::commas(2_422_728_000), "2,422,728,000");
    }
}
