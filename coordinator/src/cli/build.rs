//! `tilepdb-coordinator build`: the tables of a partition, built on this machine.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tilepdb_common::table::Pdb;
use tilepdb_common::{BlankRule, StateSpace};
use tilepdb_coordinator::build::{
    BuildOptions, BuiltTable, build_memory, build_table, build_table_store, check_build_memory,
    human_bytes, memory_plan,
};
use tilepdb_coordinator::cluster::sharded::local::LocalShards;
use tilepdb_coordinator::engine::{Reuse, SetSpec, TableBuilder, build_set};
use tilepdb_coordinator::report::{
    TableReport, available_memory_bytes, peak_rss_bytes, reset_peak_rss,
};
use tilepdb_proof::Proof;
use tilepdb_proof::facts::{check_consistent, check_lower_bound, check_minimized_against_aware};
use tilepdb_proof::verify_deep;

use super::job::{JobArgs, seconds};
use super::progress::SetProgress;
use super::summary::{print_sharded, print_summary, set_name, summary};
use tilepdb_coordinator::cluster::local::LocalCluster;

#[derive(Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub(super) job: JobArgs,
    /// Worker threads (default: every core).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    threads: usize,
    /// Where to write the table set (a directory per set is made inside). It is also a cache:
    /// a table whose valid file is already in the set's directory is not built again.
    #[arg(long, default_value = "tables")]
    pub(super) out: PathBuf,
    /// Build every table a catalogue file needs instead of a partition: each distinct table
    /// once (a table serves the symmetric images of its tile set that the catalogue lists), each
    /// as a set of its own in --out, which `tilepdb-solve --catalogue FILE --tables DIR` reads.
    /// A line `0,1,2,3` is a zero-aware table of tiles 1,2,3, a line without 0 a blank-ignored
    /// one (--blank is not used); the board is --puzzle's (default 24).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["partition", "pattern", "workers", "shards"])]
    pub(super) catalogue: Option<PathBuf>,
    /// Build every table even if a valid file of it is already in the set's directory.
    #[arg(long)]
    rebuild: bool,
    /// Print the summary as JSON (with each table's histogram) on standard output.
    #[arg(long)]
    pub(super) json: bool,
    /// After building, check every entry: value >= Manhattan distance with an even difference;
    /// consistency of aware and ignored tables; for minimized tables, equality with the least
    /// aware value (this builds the aware table too).
    #[arg(long)]
    check: bool,
    /// Most ranks (placements) per task; by default each thread gets about 16 tasks a layer.
    #[arg(long, value_name = "N", value_parser = super::job::parse_task_ranks)]
    task_ranks: Option<u64>,
    /// Most memory a table's build may hold, e.g. 8G or 512M (default: the memory available).
    #[arg(long, value_name = "BYTES", value_parser = super::job::parse_bytes)]
    memory_limit: Option<u64>,
    /// Build with a local cluster instead: a gRPC coordinator in this process and N worker
    /// processes on loopback (the distributed path, for trying it and comparing).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, value_parser = parse_workers)]
    workers: usize,
    /// Build with a local sharded cluster instead: the search state of each table cut into P
    /// shards, one worker process each, which exchange successors directly; this process
    /// holds no table's search state.
    #[arg(long, value_name = "P", default_value_t = 0, hide_default_value = true, conflicts_with_all = ["workers", "check"])]
    shards: u32,
    /// With --workers: the job's data directory (default: a directory in --out, removed
    /// when the build succeeds).
    #[arg(long, value_name = "DIR", requires = "workers")]
    data_dir: Option<PathBuf>,
    /// With --workers: seconds without a heartbeat after which a worker's task is handed out
    /// again.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 30.0,
        requires = "workers"
    )]
    lease_timeout: f64,
}

#[derive(Serialize)]
pub(super) struct BuildSummary {
    partition: String,
    set_name: String,
    set_dir: PathBuf,
    threads: usize,
    total_seconds: f64,
    /// Tables that failed their proof before being written, and were built again.
    tables_rejected: u64,
    /// The peak resident memory of the whole command as the kernel counts it (the most of
    /// every table's build, file and proof), if the system says.
    peak_rss_bytes: Option<u64>,
    /// The plan of the set: its largest table's (tables are built one at a time), with the
    /// file and the proof.
    build_memory_bytes: u64,
    tables: Vec<TableReport>,
}

/// Most worker threads a build accepts: far more than any machine's cores, few enough that
/// starting the pool cannot exhaust the system (100,000 threads stalled the build for minutes).
const MAX_THREADS: usize = 1024;

impl BuildArgs {
    /// The arguments of a bare `tilepdb-coordinator` (the defaults, as clap gives them).
    pub fn defaults() -> BuildArgs {
        #[derive(clap::Parser)]
        struct Bare {
            #[command(flatten)]
            args: BuildArgs,
        }
        <Bare as clap::Parser>::parse_from(["tilepdb-coordinator"]).args
    }
}

pub fn run(args: BuildArgs) -> anyhow::Result<()> {
    if args.threads > MAX_THREADS {
        bail!(
            "--threads {} is too many: at most {MAX_THREADS} worker threads (0 means one per core)",
            args.threads
        );
    }
    if let Some(catalogue) = &args.catalogue {
        return super::build_catalogue::run(&args, catalogue);
    }
    let spec = args.job.spec()?;
    let out = args.out.clone();
    if args.workers > 0 {
        let cluster = LocalCluster {
            workers: args.workers,
            threads: args.threads,
            worker_program: worker_program()?,
            out,
            data_dir: args.data_dir.clone(),
            lease_timeout: seconds(args.lease_timeout, "--lease-timeout")?,
            task_ranks: args.task_ranks,
            prove: !args.job.no_proof,
        };
        let started = Instant::now();
        let (job, reports) = cluster.run_watched(spec, |job| {
            tilepdb_coordinator::observe::bars::watch(job.clone())
        })?;
        return print_summary(
            "build",
            &summary(&job, Some(args.workers), started, reports),
            args.json,
        );
    }
    if args.shards > 0 {
        return build_sharded(&args, &spec);
    }
    let summary = build_local(&args, &spec)?;
    print_local(&summary, args.json)
}

/// Builds the set `spec` on this machine with threads, as `args` say: its summary.
pub(super) fn build_local(args: &BuildArgs, spec: &SetSpec) -> anyhow::Result<BuildSummary> {
    let out = args.out.clone();
    let dir = spec.dir(&out);
    let memory_limit = args.memory_limit.or_else(available_memory_bytes);
    let options = BuildOptions {
        threads: args.threads,
        task_ranks: args.task_ranks,
        memory_limit,
        // --check reads every value: keep a byte per entry for it.
        encoding: (!args.check).then_some(spec.encoding),
        written_as: Some(spec.encoding),
        proves: !args.job.no_proof,
    };
    let spaces = spec.spaces()?;
    // Refuse before building anything if any table will not fit; the set's plan is its
    // largest table's (they are built one at a time).
    let mut set_plan = 0;
    for space in &spaces {
        check_build_memory(space, &options)?;
        set_plan = set_plan.max(memory_plan(space, &options)?.bytes);
    }
    let threads = if args.threads == 0 {
        rayon::current_num_threads()
    } else {
        args.threads
    };
    tracing::info!(
        partition = spec.partition.name(),
        goal = %spec.goal,
        blank = %spec.rule,
        encoding = %spec.encoding,
        threads,
        out = %dir.display(),
        "building {} table(s)",
        spaces.len()
    );
    let started = Instant::now();
    let mut builder = CliBuilder {
        options: &options,
        proves: !args.job.no_proof,
        proof: None,
        rejected: 0,
        check: args.check,
        json: args.json,
        tables: Vec::new(),
        progress: SetProgress::new(&spaces),
        set_peak: None,
    };
    let reuse = if args.rebuild {
        Reuse::Nothing
    } else {
        Reuse::ValidFiles
    };
    build_set(spec, &out, reuse, &mut builder)?;
    builder.note_peak();
    builder.progress.finish();
    let summary = BuildSummary {
        partition: spec.partition.name().to_string(),
        set_name: set_name(&dir),
        set_dir: dir.clone(),
        threads,
        total_seconds: started.elapsed().as_secs_f64(),
        tables_rejected: builder.rejected,
        peak_rss_bytes: builder.set_peak,
        build_memory_bytes: set_plan,
        tables: std::mem::take(&mut builder.tables),
    };
    Ok(summary)
}

/// Prints the summary of a set built on this machine: JSON, or a line for people.
pub(super) fn print_local(summary: &BuildSummary, json: bool) -> anyhow::Result<()> {
    let dir = &summary.set_dir;
    if json {
        tilepdb_common::json::print("build", summary)?;
    } else {
        let cached = summary.tables.iter().filter(|t| t.cached).count();
        let peak = summary
            .peak_rss_bytes
            .map_or_else(|| "?".to_string(), human_bytes);
        tilepdb_common::outln!(
            "{} table(s) of {} written to {} in {:.2} s ({} built, {cached} already built); peak memory {peak} (plan {})",
            summary.tables.len(),
            summary.partition,
            dir.display(),
            summary.total_seconds,
            summary.tables.len() - cached,
            human_bytes(summary.build_memory_bytes)
        );
    }
    Ok(())
}

/// `build --shards P`: a local sharded cluster.
fn build_sharded(args: &BuildArgs, spec: &SetSpec) -> anyhow::Result<()> {
    let started = Instant::now();
    let run = LocalShards {
        shards: args.shards,
        threads: args.threads,
        worker_program: worker_program()?,
        out: args.out.clone(),
        reuse: if args.rebuild {
            Reuse::Nothing
        } else {
            Reuse::ValidFiles
        },
        prove: !args.job.no_proof,
        silence: seconds(args.lease_timeout, "--lease-timeout")?,
    }
    .run(spec)?;
    print_sharded("build", spec, args.shards, started, run, args.json)
}

/// The `build` command's tables: built with a progress bar, checked with `--check`, reported.
struct CliBuilder<'a> {
    options: &'a BuildOptions,
    /// Prove each table before it is written (not `--no-proof`), and what the last proved.
    proves: bool,
    proof: Option<Proof>,
    /// Tables that failed their proof (and were built again).
    rejected: u64,
    check: bool,
    json: bool,
    tables: Vec<TableReport>,
    progress: SetProgress,
    /// The most resident memory seen so far, over the peaks reset before each table.
    set_peak: Option<u64>,
}

impl CliBuilder<'_> {
    /// Folds the peak since the last reset into the set's.
    fn note_peak(&mut self) {
        if let Some(peak) = peak_rss_bytes() {
            self.set_peak = Some(self.set_peak.map_or(peak, |p| p.max(peak)));
        }
    }

    fn report(&mut self, report: TableReport) {
        if !self.json {
            self.progress.println(&report.line());
        }
        self.tables.push(report);
    }
}

impl TableBuilder for CliBuilder<'_> {
    type Error = anyhow::Error;

    fn build(&mut self, index: usize, space: &StateSpace) -> anyhow::Result<BuiltTable> {
        tracing::info!(
            table = index,
            pattern = %space.pattern(),
            placements = space.placements(),
            states = space.states(),
            memory = %human_bytes(build_memory(space, self.options)?.0),
            "building"
        );
        self.note_peak();
        reset_peak_rss();
        let observer = self.progress.table(index, space);
        if !self.check {
            // The values stay in the search's store and are streamed to the file.
            return Ok(build_table_store(space, self.options, &observer)?);
        }
        let table = build_table(space, self.options, &observer)?;
        {
            let values = table
                .values
                .bytes()
                .context("--check needs a byte per entry")?;
            run_checks(space, values, self.options)?;
            tracing::info!(table = index, pattern = %space.pattern(), "checks passed");
        }
        Ok(table)
    }

    fn proves(&self) -> bool {
        self.proves
    }

    fn rejected(
        &mut self,
        _index: usize,
        _space: &StateSpace,
        _error: &tilepdb_coordinator::error::Error,
    ) -> anyhow::Result<()> {
        self.rejected += 1;
        Ok(())
    }

    fn proven(&mut self, _index: usize, _space: &StateSpace, proof: Proof) -> anyhow::Result<()> {
        self.proof = Some(proof);
        Ok(())
    }

    fn reused(&mut self, index: usize, space: &StateSpace, pdb: &Pdb) -> anyhow::Result<()> {
        if self.check {
            verify_deep(pdb)?;
            tracing::info!(table = index, pattern = %space.pattern(), "deep verification of the built file passed");
        }
        self.progress.written(index, false);
        self.report(TableReport::cached(space, pdb));
        Ok(())
    }

    fn written(
        &mut self,
        index: usize,
        space: &StateSpace,
        table: &BuiltTable,
        pdb: &Pdb,
    ) -> anyhow::Result<()> {
        // The peak the kernel counts over the build, the file's write and its proof, beside
        // the plan of the same.
        let plan = memory_plan(space, self.options)?.bytes;
        let report = TableReport::new(space, table, peak_rss_bytes(), None)
            .with_table_file(pdb)
            .with_proof(self.proof.take())
            .with_plan(plan);
        self.progress.written(index, true);
        self.report(report);
        Ok(())
    }
}

pub(super) fn run_checks(
    space: &StateSpace,
    values: &[u8],
    options: &BuildOptions,
) -> anyhow::Result<()> {
    check_lower_bound(space, values)?;
    match space.rule() {
        BlankRule::Minimized => {
            let aware_space = StateSpace::new(
                space.board(),
                space.goal(),
                space.pattern().clone(),
                BlankRule::Aware,
            )?;
            let aware = build_table(&aware_space, options, &()).context(
                "building the aware table that --check compares the minimized table with",
            )?;
            let aware_values = aware.values.bytes().context("the aware table's values")?;
            check_minimized_against_aware(space, values, aware_values)?;
        }
        BlankRule::Aware | BlankRule::Ignored | BlankRule::ZeroAware => {
            check_consistent(space, values)?;
        }
    }
    Ok(())
}

/// The environment variable naming the worker program of local clusters (a `tilepdb-worker`,
/// or a `tilepdb-coordinator`, whose `worker` command is run).
const WORKER_PROGRAM_ENV: &str = "TILEPDB_WORKER_PROGRAM";

/// The worker program: `TILEPDB_WORKER_PROGRAM` if set, else `tilepdb-worker` next to this
/// program, else this program's `worker`.
fn worker_program() -> anyhow::Result<(PathBuf, Vec<String>)> {
    if let Some(program) = std::env::var_os(WORKER_PROGRAM_ENV) {
        let program = PathBuf::from(program);
        let is_coordinator = program
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("tilepdb-coordinator"));
        return Ok((
            program,
            if is_coordinator {
                vec!["worker".into()]
            } else {
                Vec::new()
            },
        ));
    }
    let me = std::env::current_exe().context("cannot find this program")?;
    let sibling = me.with_file_name(format!("tilepdb-worker{}", std::env::consts::EXE_SUFFIX));
    Ok(if sibling.is_file() {
        (sibling, Vec::new())
    } else {
        (me, vec!["worker".to_string()])
    })
}

/// Most local worker processes of `build --workers`.
const MAX_LOCAL_WORKERS: usize = 256;

/// `--workers`: from 0 (no local cluster) to [`MAX_LOCAL_WORKERS`].
fn parse_workers(text: &str) -> Result<usize, String> {
    tilepdb_common::units::parse_count(text, MAX_LOCAL_WORKERS, "local worker processes")
}

#[cfg(test)]
mod tests {
    use super::super::job::parse_bytes;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("8GiB"), Ok(8 << 30));
        assert_eq!(parse_bytes("100"), Ok(100));
        assert!(parse_bytes("8Q").is_err());
        assert!(parse_bytes("x").is_err());
    }
}
