//! Comparing heuristics on one instance file under one protocol: per-instance records, a
//! summary per heuristic, the Pareto fronts of table memory against search effort and of time
//! against instances solved, and plots (SVG, and PNG with the `png` feature).
//!
//! The protocol is the same for every entry: the same instances in the same order, the same
//! node and time budgets per instance, the same thread count, IDA* counting every generated
//! child ([`crate::search`]'s convention), and the same seeded random states for the mean
//! heuristic value.
//!
//! ```
//! use tilepdb_common::{Goal, PuzzleState};
//! use tilepdb_solver::bench::{Entry, Protocol, run};
//! let board = "3x3".parse().unwrap();
//! let instances = vec![("a".to_string(), PuzzleState::parse(board, "1 2 0 3 4 5 6 7 8").unwrap())];
//! let entries: Vec<Entry> = vec!["manhattan".parse().unwrap(), "misplaced".parse().unwrap()];
//! let report = run(&entries, &instances, board, Goal::BlankFirst, &Protocol::default()).unwrap();
//! assert_eq!(report.summaries[0].solved, 1);
//! assert_eq!(report.records[0].length, Some(2));
//! ```

mod catalogue;
pub mod output;
pub mod pareto;

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use rayon::prelude::*;
use serde::Serialize;
use tilepdb_common::generate::random_states;
use tilepdb_common::table::TableSet;
use tilepdb_common::{Board, Goal, PuzzleState};

use crate::error::{Error, Result};
use crate::heuristic::{Heuristic, LinearConflict, Manhattan, Misplaced, PdbHeuristic};
use crate::move_pruning::MovePruning;
use crate::search::{IterationCounts, Limits, Outcome, ida_star, ida_star_pruned};

/// What an entry of the matrix searches with.
#[derive(Clone, Debug, PartialEq)]
pub enum HeuristicSpec {
    /// Tiles out of place.
    Misplaced,
    /// The Manhattan distance.
    Manhattan,
    /// The Manhattan distance plus linear conflicts.
    LinearConflict,
    /// A table set's additive sum, with or without the reflection about the diagonal.
    Tables {
        /// The set's directory.
        dir: PathBuf,
        /// Whether to take the reflection too.
        reflect: bool,
    },
    /// A catalogue's maximum over its additive sets (`catalogue:FILE@DIR`).
    Catalogue {
        /// The catalogue file.
        file: PathBuf,
        /// The directory of the sets that serve it.
        dir: PathBuf,
    },
}

/// One heuristic of the matrix and the label it is reported under.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The label in reports.
    pub label: String,
    /// The heuristic.
    pub spec: HeuristicSpec,
}

impl FromStr for Entry {
    type Err = Error;

    /// `[LABEL=]SPEC`, SPEC one of `misplaced`, `manhattan`, `linear-conflict`, `tables:DIR`,
    /// `tables+reflect:DIR`; the label defaults to the spec (a set's directory name, with
    /// `+reflect`).
    fn from_str(text: &str) -> Result<Entry> {
        let (label, spec) = match text.split_once('=') {
            Some((label, spec)) if !label.contains(':') => (Some(label.trim()), spec.trim()),
            _ => (None, text.trim()),
        };
        let spec = match spec {
            "misplaced" => HeuristicSpec::Misplaced,
            "manhattan" => HeuristicSpec::Manhattan,
            "linear-conflict" => HeuristicSpec::LinearConflict,
            other => match other.split_once(':') {
                Some(("tables", dir)) if !dir.is_empty() => HeuristicSpec::Tables {
                    dir: dir.into(),
                    reflect: false,
                },
                Some(("tables+reflect", dir)) if !dir.is_empty() => HeuristicSpec::Tables {
                    dir: dir.into(),
                    reflect: true,
                },
                Some(("catalogue", both)) => match both.rsplit_once('@') {
                    Some((file, dir)) if !file.is_empty() && !dir.is_empty() => {
                        HeuristicSpec::Catalogue {
                            file: file.into(),
                            dir: dir.into(),
                        }
                    }
                    _ => {
                        return Err(Error::Bench(format!(
                            "{text:?}: a catalogue entry is catalogue:FILE@DIR (DIR the directory of its tables)"
                        )));
                    }
                },
                _ => {
                    return Err(Error::Bench(format!(
                        "{text:?} is not an entry: expected [LABEL=]misplaced, manhattan, linear-conflict, tables:DIR, tables+reflect:DIR or catalogue:FILE@DIR"
                    )));
                }
            },
        };
        let label = match label {
            Some("") => return Err(Error::Bench(format!("{text:?}: the label is empty"))),
            Some(label) => label.to_string(),
            None => match &spec {
                HeuristicSpec::Misplaced => "misplaced".into(),
                HeuristicSpec::Manhattan => "manhattan".into(),
                HeuristicSpec::LinearConflict => "linear-conflict".into(),
                HeuristicSpec::Catalogue { file, .. } => file.file_stem().map_or_else(
                    || file.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                ),
                HeuristicSpec::Tables { dir, reflect } => {
                    let name = dir.file_name().map_or_else(
                        || dir.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    if *reflect {
                        format!("{name}+reflect")
                    } else {
                        name
                    }
                }
            },
        };
        Ok(Entry { label, spec })
    }
}

/// The budgets and settings every entry runs under.
#[derive(Clone, Debug)]
pub struct Protocol {
    /// Per instance.
    pub limits: Limits,
    /// Instances searched at once (0: every core).
    pub threads: usize,
    /// Random solvable states the mean heuristic value is also taken over.
    pub random_states: usize,
    /// Their seed ([`random_states`]).
    pub seed: u64,
    /// The move-pruning machine of every search (`None`: the undo rule alone).
    pub move_pruning: Option<MovePruning>,
}

impl Default for Protocol {
    fn default() -> Protocol {
        Protocol {
            limits: Limits::default(),
            threads: 1,
            random_states: 1000,
            seed: 1,
            move_pruning: None,
        }
    }
}

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
    /// Over [`Protocol::random_states`] seeded random states.
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
    /// Threads searching.
    pub threads: usize,
    /// Random states per entry for the mean heuristic value.
    pub random_states: usize,
    /// Seed of the random states.
    pub seed: u64,
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

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    if count == 0 { 0.0 } else { sum / count as f64 }
}

/// The median (mean of the middle two for an even count; 0 when empty).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

fn search_all<H: Heuristic>(
    label: &str,
    h: &H,
    instances: &[(String, PuzzleState)],
    goal: Goal,
    randoms: &[PuzzleState],
    limits: &Limits,
    pruning: Option<&MovePruning>,
) -> Result<(Vec<InstanceRecord>, f64, f64)> {
    let cpu_before = process_cpu_seconds();
    let records = instances
        .par_iter()
        .enumerate()
        .map(|(i, (name, state))| {
            let r = match pruning {
                Some(machine) => ida_star_pruned(state, goal, h, limits, machine)?,
                None => ida_star(state, goal, h, limits)?,
            };
            Ok(InstanceRecord {
                entry: label.to_string(),
                number: i + 1,
                instance: name.clone(),
                outcome: r.outcome,
                length: r.length(),
                expanded: r.expanded,
                generated: r.generated,
                seconds: r.seconds,
                initial_h: r.initial_h,
                per_iteration: r.per_iteration,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let cpu_seconds = process_cpu_seconds() - cpu_before;
    let values = randoms
        .iter()
        .map(|s| h.evaluate(&s.cells()).map(|(v, _)| f64::from(v)))
        .collect::<Result<Vec<_>>>()?;
    Ok((records, mean(values.into_iter()), cpu_seconds))
}

/// CPU seconds (user + system) this process has used, over all its threads (0 where the
/// system does not say).
fn process_cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the pointer, which points to one.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if status != 0 {
        return 0.0;
    }
    // SAFETY: getrusage returned 0, so it filled the struct (which was zeroed before anyway).
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The machine the run is on: processor model, logical cores and memory (Linux `/proc`).
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown processor".into());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or("unknown memory".into(), |kb| {
            format!("{:.1} GiB", kb as f64 / (1024.0 * 1024.0))
        });
    format!("{cpu}, {cores} logical cores, {memory}")
}

/// The current time in UTC as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (
        i64::try_from(secs / 86_400).unwrap_or(i64::MAX),
        secs % 86_400,
    );
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Runs every entry on every instance under `protocol` and summarises.
pub fn run(
    entries: &[Entry],
    instances: &[(String, PuzzleState)],
    board: Board,
    goal: Goal,
    protocol: &Protocol,
) -> Result<BenchReport> {
    if entries.is_empty() {
        return Err(Error::Bench("no entries to compare".into()));
    }
    if instances.is_empty() {
        return Err(Error::Bench("no instances to search".into()));
    }
    for (i, e) in entries.iter().enumerate() {
        if entries[..i].iter().any(|o| o.label == e.label) {
            return Err(Error::Bench(format!(
                "two entries are labelled {:?}: give one another label (LABEL=SPEC)",
                e.label
            )));
        }
    }
    if let Some((name, s)) = instances.iter().find(|(_, s)| s.board() != board) {
        return Err(Error::Mismatch {
            tables: board.to_string(),
            state: format!("{name} ({})", s.board()),
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(protocol.threads)
        .build()
        .map_err(|e| Error::Bench(format!("starting the threads: {e}")))?;
    let threads = pool.current_num_threads();
    let randoms = random_states(board, goal, protocol.seed, protocol.random_states);
    let mut records = Vec::new();
    let mut summaries = Vec::new();
    let mut histograms: Vec<TableHistogram> = Vec::new();
    for entry in entries {
        let limits = &protocol.limits;
        let pruning = protocol.move_pruning.as_ref();
        let label = entry.label.as_str();
        let (entry_records, random_h, cpu_seconds, heuristic, files) = match &entry.spec {
            HeuristicSpec::Misplaced => {
                let h = Misplaced::new(board, goal);
                let (r, m, cpu) = pool.install(|| {
                    search_all(label, &h, instances, goal, &randoms, limits, pruning)
                })?;
                (r, m, cpu, "misplaced tiles".to_string(), None)
            }
            HeuristicSpec::Manhattan => {
                let h = Manhattan::new(board, goal);
                let (r, m, cpu) = pool.install(|| {
                    search_all(label, &h, instances, goal, &randoms, limits, pruning)
                })?;
                (r, m, cpu, "Manhattan distance".to_string(), None)
            }
            HeuristicSpec::LinearConflict => {
                let h = LinearConflict::new(board, goal);
                let (r, m, cpu) = pool.install(|| {
                    search_all(label, &h, instances, goal, &randoms, limits, pruning)
                })?;
                (r, m, cpu, "linear conflict".to_string(), None)
            }
            HeuristicSpec::Catalogue { file, dir } => {
                let (r, m, cpu, what, files) = catalogue::run_entry(
                    label, file, dir, instances, board, goal, &randoms, limits, &pool,
                )?;
                (r, m, cpu, what, Some((dir.clone(), files)))
            }
            HeuristicSpec::Tables { dir, reflect } => {
                let set = TableSet::open(dir)?;
                if set.board() != board || set.goal() != goal {
                    return Err(Error::Mismatch {
                        tables: format!("{} ({}, {} goal)", dir.display(), set.board(), set.goal()),
                        state: format!("the instances ({board}, {goal} goal)"),
                    });
                }
                let h = PdbHeuristic::new(&set, *reflect)?;
                let (r, m, cpu) = pool.install(|| {
                    search_all(label, &h, instances, goal, &randoms, limits, pruning)
                })?;
                let name = dir.file_name().map_or_else(
                    || dir.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                if !histograms.iter().any(|t| t.set == name) {
                    for pdb in set.tables() {
                        histograms.push(TableHistogram {
                            set: name.clone(),
                            table: pdb
                                .path()
                                .file_name()
                                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                            counts: pdb.header().histogram.clone(),
                        });
                    }
                }
                let files = set
                    .tables()
                    .iter()
                    .map(|pdb| TableFile {
                        file: pdb
                            .path()
                            .file_name()
                            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                        tiles: pdb.header().tiles.clone(),
                        file_bytes: pdb.file_len(),
                        checksum: pdb.checksum(),
                    })
                    .collect::<Vec<_>>();
                let what = format!(
                    "tables {name} ({} encoding{})",
                    set.encoding().name(),
                    if *reflect { ", with reflection" } else { "" }
                );
                (r, m, cpu, what, Some((dir.clone(), files)))
            }
        };
        let (set_dir, tables) = files.unzip();
        let tables = tables.unwrap_or_default();
        let generated: Vec<f64> = entry_records.iter().map(|r| r.generated as f64).collect();
        let total_expanded: u64 = entry_records.iter().map(|r| r.expanded).sum();
        let total_generated: u64 = entry_records.iter().map(|r| r.generated).sum();
        let seconds: Vec<f64> = entry_records.iter().map(|r| r.seconds).collect();
        summaries.push(EntrySummary {
            entry: entry.label.clone(),
            heuristic,
            table_bytes: tables.iter().map(|t| t.file_bytes).sum(),
            set_dir,
            tables,
            instances: entry_records.len(),
            solved: entry_records.iter().filter(|r| r.length.is_some()).count(),
            total_expanded,
            total_generated,
            mean_expanded: mean(entry_records.iter().map(|r| r.expanded as f64)),
            mean_generated: mean(generated.iter().copied()),
            median_generated: median(&generated),
            cpu_seconds,
            expanded_per_cpu_second: total_expanded as f64 / cpu_seconds.max(1e-9),
            generated_per_cpu_second: total_generated as f64 / cpu_seconds.max(1e-9),
            mean_seconds: mean(seconds.iter().copied()),
            median_seconds: median(&seconds),
            total_seconds: seconds.iter().sum(),
            mean_initial_h: mean(entry_records.iter().map(|r| f64::from(r.initial_h))),
            mean_random_h: random_h,
            on_memory_front: false,
            on_time_front: false,
        });
        records.extend(entry_records);
    }
    let memory_points: Vec<(f64, f64)> = summaries
        .iter()
        .map(|s| (s.table_bytes as f64, s.mean_generated))
        .collect();
    let time_points: Vec<(f64, f64)> = summaries
        .iter()
        .map(|s| (s.total_seconds, -(s.solved as f64)))
        .collect();
    let memory_front = pareto::pareto_front(&memory_points);
    let time_front = pareto::pareto_front(&time_points);
    for &i in &memory_front {
        summaries[i].on_memory_front = true;
    }
    for &i in &time_front {
        summaries[i].on_time_front = true;
    }
    Ok(BenchReport {
        provenance: Provenance::of_this_process(),
        date: utc_now(),
        machine: machine(),
        board: board.to_string(),
        goal,
        instances: instances.len(),
        max_nodes: protocol.limits.max_nodes,
        timeout_seconds: protocol.limits.timeout.map(|t: Duration| t.as_secs_f64()),
        threads,
        random_states: protocol.random_states,
        seed: protocol.seed,
        memory_front: memory_front
            .iter()
            .map(|&i| summaries[i].entry.clone())
            .collect(),
        time_front: time_front
            .iter()
            .map(|&i| summaries[i].entry.clone())
            .collect(),
        summaries,
        records,
        histograms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_with_and_without_labels() {
        let e: Entry = "manhattan".parse().unwrap();
        assert_eq!(
            (e.label.as_str(), &e.spec),
            ("manhattan", &HeuristicSpec::Manhattan)
        );
        let e: Entry = "tables+reflect:/x/4x4-7-8".parse().unwrap();
        assert_eq!(e.label, "4x4-7-8+reflect");
        assert_eq!(
            e.spec,
            HeuristicSpec::Tables {
                dir: "/x/4x4-7-8".into(),
                reflect: true
            }
        );
        let e: Entry = "big=tables:/a=b".parse().unwrap();
        assert_eq!(e.label, "big");
        assert_eq!(
            e.spec,
            HeuristicSpec::Tables {
                dir: "/a=b".into(),
                reflect: false
            }
        );
        for bad in ["manhatan", "tables:", "=manhattan", "pdb:/x"] {
            let err = bad.parse::<Entry>().unwrap_err().to_string();
            assert!(err.contains(bad.trim_start_matches('=')), "{err}");
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn the_date_is_well_formed() {
        let d = utc_now();
        assert_eq!(d.len(), "2026-12-01 08:00:00 UTC".len(), "{d}");
        let year: i32 = d[..4].parse().unwrap();
        assert!(year >= 2024, "{d}");
    }
}
