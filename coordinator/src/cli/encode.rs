//! `tilepdb-coordinator encode`: another encoding of a finished lossless set, from its values
//! and without building again, through the writer and the checks that `build` uses.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{Partition, Pattern, StateSpace};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::output::{set_dir, write_manifest, write_table};

#[derive(Args)]
pub struct EncodeArgs {
    /// The set to read: a directory with its manifest.json, in a lossless encoding (byte or
    /// mod3).
    set: PathBuf,
    /// The encoding to write: nibble, min-nibble:C, mod3 (aware and ignored tables only) or
    /// byte — the same choices and refusals as `build --encoding`.
    #[arg(long, value_name = "ENCODING")]
    encoding: Encoding,
    /// Where to write the new set (a directory per set is made inside, named as `build` names
    /// it). Default: next to the set read.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Before writing, check every value as `build --check` does.
    #[arg(long)]
    check: bool,
    /// Worker threads for --check (default: every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

pub fn run(args: EncodeArgs) -> anyhow::Result<()> {
    let set = TableSet::open(&args.set)
        .with_context(|| format!("opening the table set {}", args.set.display()))?;
    let manifest = set.manifest();
    let from = set.encoding();
    if !from.is_exact() {
        bail!(
            "{} is in the {from} encoding, which does not keep every value exactly; encode from a byte (or mod3) set",
            args.set.display()
        );
    }
    let rule = manifest.blank_rule;
    args.encoding.check_rule(rule)?;
    let board = set.board();
    let patterns = set
        .tables()
        .iter()
        .map(|t| Pattern::new(board, t.header().tiles.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let partition = Partition::new(manifest.partition.clone(), board, patterns)?;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => args
            .set
            .canonicalize()
            .with_context(|| format!("resolving {}", args.set.display()))?
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let dir = set_dir(&out, &partition, rule, set.goal(), args.encoding);
    if dir.canonicalize().ok() == args.set.canonicalize().ok() {
        bail!(
            "{} is already in the {} encoding",
            args.set.display(),
            args.encoding
        );
    }
    let options = BuildOptions {
        threads: args.threads,
        ..BuildOptions::default()
    };
    let started = Instant::now();
    let mut files = Vec::new();
    for (table, pattern) in set.tables().iter().zip(partition.patterns()) {
        let space = StateSpace::new(board, set.goal(), pattern.clone(), rule)?;
        let values = table
            .decode_all()
            .with_context(|| format!("decoding {}", table.path().display()))?;
        if args.check {
            super::build::run_checks(&space, &values, &options)
                .with_context(|| format!("checking {}", table.path().display()))?;
        }
        let pdb = write_table(&dir, &space, args.encoding, &values)?;
        println!(
            "{{{pattern}}}: {} -> {} ({} -> {} bytes)",
            from,
            args.encoding,
            table.file_len(),
            pdb.file_len()
        );
        files.push(pdb);
    }
    write_manifest(&dir, &partition, set.goal(), rule, args.encoding, &files)?;
    println!(
        "{} table(s) of {} encoded to {} in {:.2} s",
        files.len(),
        partition.name(),
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
