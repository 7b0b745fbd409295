//! `tilepdb-coordinator verify FILE|DIR [--deep]`: checks table files (magic, version, sizes,
//! both checksums; a set's files against its manifest) and, with `--deep`, decodes every entry
//! and re-checks it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use serde::Serialize;
use tilepdb_common::table::manifest::MANIFEST_NAME;
use tilepdb_common::table::{Manifest, Pdb};
use tilepdb_coordinator::verify::{DeepReport, verify_deep};

#[derive(Args)]
pub struct VerifyArgs {
    /// A table file (`.pdb`) or a table set's directory (with its `manifest.json`).
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
            let opened = manifest.open_table(dir, entry).map_err(anyhow::Error::from);
            check_one(opened, dir.join(&entry.file), deep)
        })
        .collect();
    Ok((outcomes, notes))
}

pub fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let path = &args.path;
    if !path.exists() {
        bail!("{}: no such file or directory", path.display());
    }
    let (outcomes, notes) = if path.is_dir() {
        check_dir(path, args.deep)?
    } else {
        let opened = Pdb::open(path).map_err(anyhow::Error::from);
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
        println!(
            "{}",
            serde_json::to_string_pretty(&Summary {
                ok: failed == 0,
                deep: args.deep,
                tables: &outcomes,
                notes: &notes,
            })?
        );
    } else {
        for o in &outcomes {
            match (&o.error, &o.deep) {
                (Some(e), _) => println!("FAILED {e}"),
                (None, Some(d)) => println!(
                    "ok     {} {} (deep, {:.2} s: {} entries decoded, h >= Manhattan with even difference{}, histogram {})",
                    o.file.display(),
                    o.checksum.as_deref().unwrap_or(""),
                    o.seconds,
                    d.entries,
                    if d.distances_checked {
                        ", every entry the exact distance (Bellman check)"
                    } else if d.consistency_checked {
                        ", consistent"
                    } else {
                        ""
                    },
                    if d.exact {
                        "equal to the header's"
                    } else {
                        "a lower bound of the header's"
                    },
                ),
                (None, None) => println!(
                    "ok     {} {} (magic, version, sizes, header and payload checksums)",
                    o.file.display(),
                    o.checksum.as_deref().unwrap_or("")
                ),
            }
        }
        for n in &notes {
            println!("note   {n}");
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} table(s) failed verification",
            outcomes.len()
        );
    }
    Ok(())
}
