//! `tilepdb-coordinator verify FILE|DIR [--deep]`: checks table files (magic, version, sizes,
//! both checksums; a set's files against its manifest) and, with `--deep`, decodes every entry
//! and re-checks it; on a directory of sets, every set in it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tilepdb_common::table::manifest::MANIFEST_NAME;
use tilepdb_common::table::{Manifest, Pdb};
use tilepdb_proof::{DeepReport, verify_deep};

#[derive(Args)]
pub struct VerifyArgs {
    /// A table file (`.pdb`), a table set's directory (with its `manifest.json`), or a
    /// directory of sets (each subdirectory with a manifest is verified).
    path: PathBuf,
    /// Also decode every entry and check: value >= Manhattan distance with an even difference;
    /// consistency across every move for aware and ignored tables; agreement with the header's
    /// histogram (equality for byte and mod3, lower bounds for nibble and min-nibble).
    #[arg(long)]
    deep: bool,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Outcome {
    file: PathBuf,
    ok: bool,
    checksum: Option<String>,
    error: Option<String>,
    deep: Option<DeepReport>,
    #[serde(rename = "wall_seconds")]
    seconds: f64,
}

fn check_one(opened: anyhow::Result<Pdb>, file: PathBuf, deep: bool) -> Outcome {
    let started = Instant::now();
    let result = opened.and_then(|pdb| {
        let report = if deep { Some(verify_deep(&pdb)?) } else { None };
        Ok((pdb.checksum(), report))
    });
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok((checksum, deep)) => Outcome {
            file,
            ok: true,
            checksum: Some(checksum),
            error: None,
            deep,
            seconds,
        },
        Err(e) => Outcome {
            file,
            ok: false,
            checksum: None,
            error: Some(format!("{e:#}")),
            deep: None,
            seconds,
        },
    }
}

fn check_dir(dir: &Path, deep: bool) -> anyhow::Result<(Vec<Outcome>, Vec<String>)> {
    let manifest = Manifest::read(dir)?;
    let mut notes = Vec::new();
    let listed: BTreeSet<&str> = manifest.tables.iter().map(|t| t.file.as_str()).collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut extra: Vec<String> = entries
            .filter_map(std::result::Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != MANIFEST_NAME && !n.starts_with('.') && !listed.contains(n.as_str()))
            .collect();
        extra.sort();
        for name in extra {
            notes.push(format!("{name} is not listed in the manifest (ignored)"));
        }
    }
    let outcomes = manifest
        .tables
        .iter()
        .map(|entry| {
            // The validated pages go back to the page cache: a deep proof reads what it
            // needs again (a part at a time where it can), so it does not hold the file whole.
            let opened = manifest
                .open_table(dir, entry)
                .inspect(Pdb::release_resident)
                .map_err(anyhow::Error::from);
            check_one(opened, dir.join(&entry.file), deep)
        })
        .collect();
    Ok((outcomes, notes))
}

/// The sets directly inside `dir` (its subdirectories with a manifest), sorted.
fn sets_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list the directory {}", dir.display()))?;
    let mut sets: Vec<PathBuf> = entries
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.join(MANIFEST_NAME).is_file())
        .collect();
    sets.sort();
    Ok(sets)
}

/// The verification of one set.
#[derive(Serialize)]
struct SetOutcome {
    set_dir: PathBuf,
    ok: bool,
    /// Why the set could not be read (its manifest), if it could not.
    error: Option<String>,
    tables: Vec<Outcome>,
    notes: Vec<String>,
}

fn print_outcomes(outcomes: &[Outcome], notes: &[String]) {
    for o in outcomes {
        match (&o.error, &o.deep) {
            (Some(e), _) => tilepdb_common::outln!("FAILED {e}"),
            (None, Some(d)) => tilepdb_common::outln!(
                "ok     {} {} (deep, {:.2} s: {} entries decoded, h >= Manhattan with even difference, every entry its exact value by the {}, histogram {})",
                o.file.display(),
                o.checksum.as_deref().unwrap_or(""),
                o.seconds,
                d.entries,
                d.proof.name().replace('-', " "),
                if d.exact {
                    "equal to the header's"
                } else {
                    "a lower bound of the header's"
                },
            ),
            (None, None) => tilepdb_common::outln!(
                "ok     {} {} (magic, version, sizes, header and payload checksums)",
                o.file.display(),
                o.checksum.as_deref().unwrap_or("")
            ),
        }
    }
    for n in notes {
        tilepdb_common::outln!("note   {n}");
    }
}

/// `verify DIR` on a directory of sets: each set in turn, then a summary.
fn run_sets(args: &VerifyArgs, sets: Vec<PathBuf>) -> anyhow::Result<()> {
    let outcomes: Vec<SetOutcome> = sets
        .into_iter()
        .map(|dir| match check_dir(&dir, args.deep) {
            Ok((tables, notes)) => SetOutcome {
                ok: tables.iter().all(|o| o.ok),
                set_dir: dir,
                error: None,
                tables,
                notes,
            },
            Err(e) => SetOutcome {
                set_dir: dir,
                ok: false,
                error: Some(format!("{e:#}")),
                tables: Vec::new(),
                notes: Vec::new(),
            },
        })
        .collect();
    let failed_sets = outcomes.iter().filter(|s| !s.ok).count();
    let tables: usize = outcomes.iter().map(|s| s.tables.len()).sum();
    let failed_tables: usize = outcomes
        .iter()
        .map(|s| s.tables.iter().filter(|o| !o.ok).count())
        .sum();
    if args.json {
        #[derive(Serialize)]
        struct Summary<'a> {
            ok: bool,
            deep: bool,
            sets: &'a [SetOutcome],
        }
        tilepdb_common::json::print(
            "verify",
            Summary {
                ok: failed_sets == 0,
                deep: args.deep,
                sets: &outcomes,
            },
        )?;
    } else {
        for set in &outcomes {
            tilepdb_common::outln!("set    {}", set.set_dir.display());
            if let Some(e) = &set.error {
                tilepdb_common::outln!("FAILED {e}");
            }
            print_outcomes(&set.tables, &set.notes);
        }
        tilepdb_common::outln!(
            "{} set(s) in {}: {} ok, {failed_sets} failed; {tables} table(s), {failed_tables} failed",
            outcomes.len(),
            args.path.display(),
            outcomes.len() - failed_sets,
        );
    }
    if failed_sets > 0 {
        bail!(
            "{failed_sets} of {} set(s) in {} failed verification",
            outcomes.len(),
            args.path.display()
        );
    }
    Ok(())
}

pub fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let path = &args.path;
    if !path.exists() {
        bail!("{}: no such file or directory", path.display());
    }
    if path.is_dir() && !path.join(MANIFEST_NAME).exists() {
        let sets = sets_in(path)?;
        if sets.is_empty() {
            bail!(
                "{} is not a table set (it has no {MANIFEST_NAME}) and holds no set (no \
                 subdirectory has one)",
                path.display()
            );
        }
        return run_sets(&args, sets);
    }
    let (outcomes, notes) = if path.is_dir() {
        check_dir(path, args.deep)?
    } else {
        // Each part's pages let go once its checksum is read (the header, checksums and
        // histogram are validated as `Pdb::open` does): a deep proof reads what it needs
        // again, so it does not hold the file whole.
        let opened = Pdb::open_released(path).map_err(anyhow::Error::from);
        (vec![check_one(opened, path.clone(), args.deep)], Vec::new())
    };
    let failed = outcomes.iter().filter(|o| !o.ok).count();
    if args.json {
        #[derive(Serialize)]
        struct Summary<'a> {
            ok: bool,
            deep: bool,
            tables: &'a [Outcome],
            notes: &'a [String],
        }
        tilepdb_common::json::print(
            "verify",
            Summary {
                ok: failed == 0,
                deep: args.deep,
                tables: &outcomes,
                notes: &notes,
            },
        )?;
    } else {
        print_outcomes(&outcomes, &notes);
    }
    if failed > 0 {
        bail!(
            "{failed} of {} table(s) failed verification",
            outcomes.len()
        );
    }
    Ok(())
}
