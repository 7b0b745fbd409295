//! `tilepdb-coordinator encode`: another encoding of a finished lossless set, from its values
//! and without building again, through the writer and the checks that `build` uses.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use tilepdb_common::table::header::histogram_of as histogram;
use tilepdb_common::table::{Encoding, Pdb, TableSet, TableValues};
use tilepdb_common::{Partition, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, BuiltTable};
use tilepdb_coordinator::engine::{Reuse, SetSpec, TableBuilder, build_set};

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
    #[arg(long, default_value_t = 0, hide_default_value = true, value_parser = tilepdb_common::units::parse_threads)]
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
            .map_or_else(|| PathBuf::from("."), PathBuf::from),
    };
    let spec = SetSpec::new(partition, set.goal(), rule, args.encoding)?;
    let dir = spec.dir(&out);
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
    let mut builder = Decoder {
        set: &set,
        options: &options,
        check: args.check,
        from,
        to: args.encoding,
    };
    let built = build_set(&spec, &out, Reuse::Nothing, &mut builder)?;
    tilepdb_common::outln!(
        "{} table(s) of {} encoded to {} in {:.2} s",
        built.tables.len(),
        spec.partition.name(),
        built.dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The tables of an encoded set: each one's values decoded from the set read (and checked
/// with `--check`) instead of searched.
struct Decoder<'a> {
    set: &'a TableSet,
    options: &'a BuildOptions,
    check: bool,
    from: Encoding,
    to: Encoding,
}

impl TableBuilder for Decoder<'_> {
    type Error = anyhow::Error;

    fn build(&mut self, index: usize, space: &StateSpace) -> anyhow::Result<BuiltTable> {
        let started = Instant::now();
        let table = &self.set.tables()[index];
        let values = table
            .decode_all()
            .with_context(|| format!("decoding {}", table.path().display()))?;
        if self.check {
            super::build::run_checks(space, &values, self.options)
                .with_context(|| format!("checking {}", table.path().display()))?;
        }
        let (histogram, unreached) = histogram(&values);
        Ok(BuiltTable {
            values: TableValues::Bytes(values),
            store: None,
            layers: u32::try_from(histogram.len()).expect("at most 256 layers"),
            histogram,
            unreached,
            expanded: 0,
            generated: 0,
            elapsed: started.elapsed(),
            state_array_bytes: 0,
            depth_bytes: 0,
        })
    }

    fn written(
        &mut self,
        index: usize,
        space: &StateSpace,
        _table: &BuiltTable,
        pdb: &Pdb,
    ) -> anyhow::Result<()> {
        tilepdb_common::outln!(
            "{{{}}}: {} -> {} ({} -> {} bytes)",
            space.pattern(),
            self.from,
            self.to,
            self.set.tables()[index].file_len(),
            pdb.file_len()
        );
        Ok(())
    }
}
