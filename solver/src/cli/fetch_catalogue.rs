//! `tilepdb-solve fetch --catalogue FILE`: every set a coordinator serves that a catalogue
//! needs, downloaded into the cache like a set each; prints the cache directory, for
//! `--catalogue FILE --tables DIR`.

use std::path::Path;

use anyhow::{Context, bail};
use tilepdb_common::catalogue::Catalogue;
use tilepdb_common::wire::connect::Endpoint;
use tilepdb_common::{BlankRule, Board, Goal};
use tilepdb_solver::fetch::{FetchOptions, fetch_set_with, list_sets};
use tilepdb_solver::heuristic::{Candidate, resolve};

/// Fetches the sets that serve the catalogue `file` (of `board` and `goal`) from `remote` into
/// `cache`; with `encoding`, only sets of that encoding are looked at.
#[expect(
    clippy::too_many_arguments,
    reason = "the command's options, passed as they are"
)]
pub fn fetch(
    remote: &Endpoint,
    file: &Path,
    board: Board,
    goal: Goal,
    encoding: Option<&str>,
    cache: &Path,
    options: FetchOptions,
    json: bool,
) -> anyhow::Result<()> {
    let catalogue = Catalogue::read(file, board)?;
    let sets = list_sets(remote)?;
    let mut candidates = Vec::new();
    let mut owners = Vec::new();
    for (s, set) in sets.iter().enumerate() {
        let fits = set.board.parse::<Board>().is_ok_and(|b| b == board)
            && set.goal.parse::<Goal>().is_ok_and(|g| g == goal)
            && encoding.is_none_or(|e| e == set.encoding);
        let Ok(rule) = set.blank_rule.parse::<BlankRule>() else {
            continue;
        };
        if !fits {
            continue;
        }
        for f in &set.files {
            let tiles: Vec<u8> = f
                .tiles
                .iter()
                .filter_map(|&t| u8::try_from(t).ok())
                .collect();
            candidates.push(Candidate { tiles, rule });
            owners.push(s);
        }
    }
    let served = resolve(&catalogue, goal, &candidates, &remote.address)?;
    let mut names: Vec<&str> = served
        .iter()
        .map(|s| sets[owners[s.candidate]].name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        bail!("{} needs no table", file.display());
    }
    let mut reports = Vec::new();
    for name in &names {
        let report = fetch_set_with(remote, name, cache, options, |_| {})
            .with_context(|| format!("fetching the set {name}"))?;
        if !json {
            eprintln!(
                "{} {}: {} files, {} downloaded{}",
                if report.already_present {
                    "kept"
                } else {
                    "fetched"
                },
                report.set,
                report.files,
                tilepdb_common::human_bytes(report.downloaded),
                if report.proven {
                    ""
                } else {
                    ", NOT proven (--no-proof)"
                }
            );
        }
        reports.push(report);
    }
    if json {
        tilepdb_common::json::print(
            "fetch",
            serde_json::json!({
                "catalogue": file,
                "patterns": served.len(),
                "cache_dir": cache,
                "sets": reports.iter().map(|r| serde_json::json!({
                    "set_name": r.set, "set_dir": r.dir, "files": r.files,
                    "total_file_bytes": r.bytes, "downloaded_bytes": r.downloaded,
                    "already_present": r.already_present, "proven": r.proven,
                })).collect::<Vec<_>>(),
            }),
        )?;
        return Ok(());
    }
    eprintln!(
        "{} pattern(s) of {} served by {} set(s) in the cache",
        served.len(),
        file.display(),
        names.len()
    );
    // The directory alone on standard output: `solve --catalogue FILE --tables "$(...)"`.
    tilepdb_common::outln!("{}", cache.display());
    Ok(())
}
