//! `tilepdb-solve eval`: every table's value for states, the sum and the reflected sum.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tilepdb_common::table::Load;
use tilepdb_solver::heuristic::PdbHeuristic;

use super::input::StateInput;

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    input: StateInput,
    /// A table set directory (with its manifest.json); with --catalogue, the directory of the
    /// sets that serve the catalogue.
    #[arg(long)]
    tables: PathBuf,
    #[command(flatten)]
    catalogue: super::catalogue::CatalogueArg,
    /// With --catalogue: the board, when --tables holds sets of several (8, 15, 24 or W x H).
    #[arg(long, requires = "catalogue")]
    puzzle: Option<String>,
    /// With --catalogue: the goal, when --tables holds sets of both.
    #[arg(long, requires = "catalogue")]
    goal: Option<tilepdb_common::Goal>,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Evaluation {
    instance: String,
    values: Vec<u8>,
    sum: u32,
    reflected_values: Option<Vec<u8>>,
    reflected_sum: Option<u32>,
    heuristic: u32,
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let board = args.puzzle.as_deref().map(str::parse).transpose()?;
    if let Some(tables) = args
        .catalogue
        .open(Some(&args.tables), board, args.goal, Load::Map)?
    {
        return super::catalogue::eval(&tables, &args.input, args.json);
    }
    let set = super::tables::open_set(&args.tables, Load::Map)?;
    let reflect = set.reflection();
    let h = PdbHeuristic::new(&set, reflect)?;
    let states = args.input.read(set.board())?;
    let mut out = Vec::new();
    for (label, state) in states {
        state
            .check_solvable(set.goal())
            .with_context(|| label.clone())?;
        let (values, reflected) = h.table_values(&state.cells())?;
        let sum = values.iter().map(|&v| u32::from(v)).sum();
        let reflected_sum = reflected
            .as_ref()
            .map(|r| r.iter().map(|&v| u32::from(v)).sum());
        out.push(Evaluation {
            instance: label,
            heuristic: reflected_sum.map_or(sum, |r: u32| r.max(sum)),
            values,
            sum,
            reflected_values: reflected,
            reflected_sum,
        });
    }
    if args.json {
        #[derive(Serialize)]
        struct Table {
            tiles: Vec<u8>,
        }
        #[derive(Serialize)]
        struct Evaluations<'a> {
            set_dir: &'a std::path::Path,
            /// The tables in the order of each result's `values`.
            tables: Vec<Table>,
            results: &'a [Evaluation],
        }
        let tables = set
            .tables()
            .iter()
            .map(|t| Table {
                tiles: t.space().pattern().tiles().to_vec(),
            })
            .collect();
        tilepdb_common::json::print(
            "eval",
            Evaluations {
                set_dir: &args.tables,
                tables,
                results: &out,
            },
        )?;
    } else {
        for e in &out {
            let values = e
                .values
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
                .join(" + ");
            match e.reflected_sum {
                Some(r) => tilepdb_common::outln!(
                    "{}: {values} = {}; reflected {r}; h = {}",
                    e.instance,
                    e.sum,
                    e.heuristic
                ),
                None => tilepdb_common::outln!("{}: {values} = {}", e.instance, e.sum),
            }
        }
    }
    Ok(())
}
