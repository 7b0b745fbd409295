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
mod environment;
mod matrix;
pub mod output;
pub mod pareto;
mod record;

use environment::process_cpu_seconds;
pub use environment::{machine, utc_now};
use matrix::Matrix;
pub use record::{
    BenchReport, EntrySummary, InstanceRecord, Provenance, TableFile, TableHistogram,
};

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use rayon::prelude::*;
use tilepdb_common::generate::random_states;
use tilepdb_common::table::Load;
use tilepdb_common::{Board, Goal, PuzzleState};

use crate::error::{Error, Result};
use crate::heuristic::Heuristic;
use crate::move_pruning::MovePruning;
use crate::search::{Limits, ida_star, ida_star_parallel, ida_star_pruned};

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
    /// Threads searching each instance (0: every core; 1: the sequential search), each
    /// iteration's subtrees shared out among them ([`ida_star_parallel`]).
    pub search_threads: usize,
    /// Random solvable states the mean heuristic value is also taken over.
    pub random_states: usize,
    /// Their seed ([`random_states`]).
    pub seed: u64,
    /// The move-pruning machine of every search (`None`: the undo rule alone).
    pub move_pruning: Option<MovePruning>,
    /// How every entry's tables are held: mapped, or copied into huge pages. The copy is made
    /// when an entry's tables are opened, before its searches' CPU time is counted.
    pub load: Load,
}

impl Default for Protocol {
    fn default() -> Protocol {
        Protocol {
            limits: Limits::default(),
            threads: 1,
            search_threads: 1,
            random_states: 1000,
            seed: 1,
            move_pruning: None,
            load: Load::Map,
        }
    }
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
    protocol: &Protocol,
) -> Result<(Vec<InstanceRecord>, f64, f64)> {
    let limits = &protocol.limits;
    let cpu_before = process_cpu_seconds();
    let records = instances
        .par_iter()
        .enumerate()
        .map(|(i, (name, state))| {
            let r = match (protocol.search_threads, &protocol.move_pruning) {
                (1, Some(machine)) => ida_star_pruned(state, goal, h, limits, machine)?,
                (1, None) => ida_star(state, goal, h, limits)?,
                (threads, machine) => {
                    let undo = MovePruning::undo_only(state.board());
                    let machine = machine.as_ref().unwrap_or(&undo);
                    ida_star_parallel(state, goal, h, limits, machine, threads)?
                }
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

/// Runs every entry on every instance under `protocol` and summarises.
pub fn run(
    entries: &[Entry],
    instances: &[(String, PuzzleState)],
    board: Board,
    goal: Goal,
    protocol: &Protocol,
) -> Result<BenchReport> {
    check_matrix(entries, instances, board)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(protocol.threads)
        .build()
        .map_err(|e| Error::Bench(format!("starting the threads: {e}")))?;
    let search_threads = match protocol.search_threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    };
    let matrix = Matrix {
        instances,
        board,
        goal,
        randoms: random_states(board, goal, protocol.seed, protocol.random_states),
        protocol,
        pool: &pool,
    };
    let mut records = Vec::new();
    let mut summaries = Vec::new();
    let mut histograms: Vec<TableHistogram> = Vec::new();
    for entry in entries {
        let (entry_records, random_h, cpu_seconds, heuristic, files) =
            matrix.run_entry(entry, &mut histograms)?;
        summaries.push(summarise(
            entry,
            &entry_records,
            random_h,
            cpu_seconds,
            heuristic,
            files,
        ));
        records.extend(entry_records);
    }
    let (memory_front, time_front) = mark_fronts(&mut summaries);
    Ok(BenchReport {
        provenance: Provenance::of_this_process(),
        date: utc_now(),
        machine: machine(),
        board: board.to_string(),
        goal,
        instances: instances.len(),
        max_nodes: protocol.limits.max_nodes,
        timeout_seconds: protocol.limits.timeout.map(|t: Duration| t.as_secs_f64()),
        threads: pool.current_num_threads(),
        search_threads,
        random_states: protocol.random_states,
        seed: protocol.seed,
        load: protocol.load.name().to_string(),
        memory_front,
        time_front,
        summaries,
        records,
        histograms,
    })
}

/// Refuses a matrix without entries or instances, with two entries of one label, or with an
/// instance of another board.
fn check_matrix(
    entries: &[Entry],
    instances: &[(String, PuzzleState)],
    board: Board,
) -> Result<()> {
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
    Ok(())
}

/// An entry's summary from its records.
fn summarise(
    entry: &Entry,
    entry_records: &[InstanceRecord],
    random_h: f64,
    cpu_seconds: f64,
    heuristic: String,
    files: Option<(PathBuf, Vec<TableFile>)>,
) -> EntrySummary {
    let (set_dir, tables) = files.unzip();
    let tables = tables.unwrap_or_default();
    let generated: Vec<f64> = entry_records.iter().map(|r| r.generated as f64).collect();
    let total_expanded: u64 = entry_records.iter().map(|r| r.expanded).sum();
    let total_generated: u64 = entry_records.iter().map(|r| r.generated).sum();
    let seconds: Vec<f64> = entry_records.iter().map(|r| r.seconds).collect();
    EntrySummary {
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
    }
}

/// Marks the entries on the memory/effort and time/solved Pareto fronts; returns the labels
/// on each, in the fronts' order.
fn mark_fronts(summaries: &mut [EntrySummary]) -> (Vec<String>, Vec<String>) {
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
    let labels = |front: &[usize]| front.iter().map(|&i| summaries[i].entry.clone()).collect();
    (labels(&memory_front), labels(&time_front))
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
