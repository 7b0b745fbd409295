//! `tilepdb-solve fetch`: download a table set from a coordinator into the local cache.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tilepdb_common::human_bytes;
use tilepdb_common::wire::connect::{Endpoint, read_token};
use tilepdb_solver::fetch::{
    FetchOptions, FetchReport, default_cache_dir, fetch_set_with, list_sets,
};

#[derive(Args)]
pub struct FetchArgs {
    /// The coordinator serving the tables: http://HOST:PORT or https://HOST:PORT (started with
    /// `tilepdb-coordinator serve`, `--keep-serving` or `--no-build`).
    #[arg(long, value_name = "URL")]
    from: String,
    /// The set to download, by the name --list shows (e.g. 4x4-7-8-minimized-blank-first).
    #[arg(long, value_name = "NAME", required_unless_present_any = ["list", "catalogue"])]
    set: Option<String>,
    /// Download every set that serves the patterns of this catalogue file (a table serves its
    /// tile set and the symmetric images that keep the goal), and print the cache directory,
    /// for --catalogue FILE --tables DIR.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["set", "list"])]
    catalogue: Option<PathBuf>,
    /// With --catalogue: the board (8, 15, 24 or WxH; default 24).
    #[arg(long, requires = "catalogue")]
    puzzle: Option<String>,
    /// With --catalogue: the goal (default blank-first).
    #[arg(long, requires = "catalogue")]
    goal: Option<tilepdb_common::Goal>,
    /// With --catalogue: only sets of this encoding (e.g. 1-bit), when the coordinator serves
    /// a table in several.
    #[arg(long, value_name = "ENCODING", requires = "catalogue")]
    encoding: Option<String>,
    /// List the sets the coordinator serves, and download nothing.
    #[arg(long, conflicts_with = "set")]
    list: bool,
    /// The cache directory (default: $TILEPDB_CACHE, else $XDG_CACHE_HOME/tilepdb, else
    /// ~/.cache/tilepdb).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// A file holding the coordinator's shared token (default: the TILEPDB_TOKEN environment
    /// variable, if set).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// CA certificate (PEM) that signed the coordinator's certificate (https://).
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// The name the coordinator's certificate is for, if not the host of --from.
    #[arg(long, value_name = "NAME")]
    tls_domain: Option<String>,
    /// Keep the set after its checksums alone, without proving its tables (a server you
    /// trust; the summary and --json say the set is unproven, and a later fetch without this
    /// flag proves it).
    #[arg(long)]
    no_proof: bool,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

pub fn run(args: FetchArgs) -> anyhow::Result<()> {
    let remote = Endpoint {
        address: args.from.clone(),
        token: read_token(args.token_file.as_deref())?,
        tls_ca: args.tls_ca.clone(),
        tls_domain: args.tls_domain.clone(),
    };
    let cache = args.cache.clone().unwrap_or_else(default_cache_dir);
    let options = FetchOptions {
        prove: !args.no_proof,
    };
    if let Some(file) = &args.catalogue {
        let board = args.puzzle.as_deref().unwrap_or("24").parse()?;
        return super::fetch_catalogue::fetch(
            &remote,
            file,
            board,
            args.goal.unwrap_or_default(),
            args.encoding.as_deref(),
            &cache,
            options,
            args.json,
        );
    }
    let Some(name) = &args.set else {
        return list(&remote, args.json);
    };
    let report = fetch_showing_progress(&remote, name, &cache, options)?;
    if args.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(())
}

/// Fetches the set `name` into `cache`, with a progress bar on standard error when it is a
/// terminal.
fn fetch_showing_progress(
    remote: &Endpoint,
    name: &str,
    cache: &Path,
    options: FetchOptions,
) -> anyhow::Result<FetchReport> {
    let bar = std::io::stderr().is_terminal().then(|| {
        ProgressBar::new(0).with_style(
            ProgressStyle::with_template(
                "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        )
    });
    if let Some(bar) = &bar {
        bar.set_message(name.to_string());
    }
    let report = fetch_set_with(remote, name, cache, options, |p| {
        if let Some(bar) = &bar {
            bar.set_length(p.total);
            bar.set_position(p.bytes);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    Ok(report?)
}

/// The fetch's report as JSON on standard output.
fn print_json(report: &FetchReport) -> anyhow::Result<()> {
    tilepdb_common::json::print(
        "fetch",
        serde_json::json!({
            "set_name": report.set,
            "set_dir": report.dir,
            "files": report.files,
            "total_file_bytes": report.bytes,
            "downloaded_bytes": report.downloaded,
            "resumed_bytes": report.resumed,
            "already_present": report.already_present,
            "proven": report.proven,
            "proof_seconds": report.proof_seconds,
            "total_seconds": report.seconds,
        }),
    )?;
    Ok(())
}

/// What was fetched and how it was checked on standard error, and the set's directory alone
/// on standard output.
fn print_text(report: &FetchReport) {
    let proof = proof_text(report);
    if report.already_present {
        eprintln!(
            "{} is already in the cache ({} files, {}), {proof}: nothing to download",
            report.set,
            report.files,
            human_bytes(report.bytes)
        );
    } else {
        eprintln!(
            "fetched {}: {} files, {} ({} downloaded{}) in {:.2} s, {proof}",
            report.set,
            report.files,
            human_bytes(report.bytes),
            human_bytes(report.downloaded),
            if report.resumed > 0 {
                format!(
                    ", {} kept from an interrupted fetch",
                    human_bytes(report.resumed)
                )
            } else {
                String::new()
            },
            report.seconds
        );
    }
    // The directory alone on standard output: `solve --tables "$(tilepdb-solve fetch ...)"`.
    tilepdb_common::outln!("{}", report.dir.display());
}

/// How the set was checked: proven (and how long the proof took), or its checksums alone.
fn proof_text(report: &FetchReport) -> String {
    if report.proven {
        if report.proof_seconds > 0.0 {
            format!(
                "checked and proven ({:.2} s of proof)",
                report.proof_seconds
            )
        } else {
            "checked and proven".to_string()
        }
    } else {
        "checked, NOT proven (--no-proof): its entries are the server's word".to_string()
    }
}

fn list(remote: &Endpoint, json: bool) -> anyhow::Result<()> {
    let sets = list_sets(remote)?;
    if json {
        let sets: Vec<serde_json::Value> = sets
            .iter()
            .map(|s| {
                serde_json::json!({
                    "set_name": s.name, "partition": s.partition, "board": s.board,
                    "goal": s.goal, "blank_rule": s.blank_rule, "encoding": s.encoding,
                    "reflection": s.reflection, "total_file_bytes": s.total_bytes,
                    "tables": s.files.iter().map(|f| serde_json::json!({
                        "file": f.name, "tiles": f.tiles, "entries": f.entries,
                        "file_bytes": f.size, "checksum": f.checksum,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        tilepdb_common::json::print("fetch", serde_json::json!({ "sets": sets }))?;
        return Ok(());
    }
    if sets.is_empty() {
        bail!("{} serves no table set yet", remote.address);
    }
    for s in &sets {
        tilepdb_common::outln!(
            "{}  {} {} {} {} {}  {} files, {}",
            s.name,
            s.partition,
            s.board,
            s.goal,
            s.blank_rule,
            s.encoding,
            s.files.len(),
            human_bytes(s.total_bytes)
        );
    }
    Ok(())
}
