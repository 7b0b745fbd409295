//! `prove_on_shards FILE SHARDS THREADS`: proves a zero-aware (or minimized, in bytes) table
//! file as one team of `SHARDS` provers does on the shards ([`ShardProver`]), all in this
//! process: each layer, every prover's sets are expanded in ranges on a pool of `THREADS`
//! threads, as a worker expands its proof shard, and the lists are handed over in memory.
//! Prints the proof's wall time and the entries per distance (checked against the file's
//! header), or the error; `/usr/bin/time` gives its CPU. For measuring how a prover's layers
//! scale with a worker's threads, without a cluster.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::shard::{LEAST_LISTS_BYTES, list_states};
use tilepdb_common::table::Pdb;
use tilepdb_proof::sharded::{EntriesPlace, ShardEntries, ShardProver};

fn main() -> ExitCode {
    tilepdb_common::allocator::keep_large_blocks_mapped();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, shards, threads] = args.as_slice() else {
        eprintln!("usage: prove_on_shards FILE SHARDS THREADS");
        return ExitCode::FAILURE;
    };
    let (Ok(shards), Ok(threads)) = (shards.parse::<u32>(), threads.parse::<usize>()) else {
        eprintln!("SHARDS and THREADS are whole numbers");
        return ExitCode::FAILURE;
    };
    match prove(file, shards, threads) {
        Ok(line) => {
            println!("{file}: {line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{file}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn prove(file: &str, shards: u32, threads: usize) -> Result<String, String> {
    let pdb = Pdb::open(file).map_err(|e| e.to_string())?;
    let space = pdb.space().clone();
    let index = space.region_index().map_err(|e| e.to_string())?;
    let layout = ShardLayout::new(index.orders(), shards).map_err(|e| e.to_string())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| e.to_string())?;
    let mut provers = (0..shards)
        .map(|j| {
            let entries = ShardEntries::from_payload(
                &space,
                &index,
                layout,
                j,
                pdb.encoding(),
                EntriesPlace::memory(),
                pdb.payload(),
            )?;
            ShardProver::new(
                &space,
                Arc::clone(&index),
                layout,
                j,
                pdb.encoding(),
                entries,
            )
        })
        .collect::<tilepdb_proof::Result<Vec<_>>>()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut layers = 0;
    loop {
        let inbox: Mutex<Vec<Vec<Vec<u64>>>> = Mutex::new(vec![Vec::new(); provers.len()]);
        for prover in &provers {
            let ranges = ranges(prover.sets(), threads as u64 * 4);
            pool.install(|| {
                ranges.par_iter().try_for_each(|sets| {
                    prover.expand(
                        sets.clone(),
                        list_states(threads, provers.len() - 1, LEAST_LISTS_BYTES),
                        &mut |to, list| {
                            inbox.lock().expect("inbox")[to as usize].push(list);
                            Ok(())
                        },
                    )
                })
            })
            .map_err(|e| e.to_string())?;
        }
        let inbox = inbox.into_inner().expect("inbox");
        for (prover, lists) in provers.iter().zip(&inbox) {
            pool.install(|| lists.par_iter().try_for_each(|list| prover.merge(list)))
                .map_err(|e| e.to_string())?;
        }
        let mut added = 0;
        for prover in &mut provers {
            added += prover.finish_layer().map_err(|e| e.to_string())?;
        }
        layers += 1;
        if added == 0 {
            break;
        }
    }
    let mut histogram: Vec<u64> = Vec::new();
    let mut unreached = 0;
    for prover in provers {
        let tally = prover.finish().map_err(|e| e.to_string())?;
        if histogram.len() < tally.histogram.len() {
            histogram.resize(tally.histogram.len(), 0);
        }
        for (h, n) in histogram.iter_mut().zip(&tally.histogram) {
            *h += n;
        }
        unreached += tally.unreached;
    }
    while histogram.len() > 1 && histogram.last() == Some(&0) {
        histogram.pop();
    }
    let header = pdb.header();
    if histogram != header.histogram || unreached != header.unreached {
        return Err(format!(
            "the provers' entries per distance {histogram:?} ({unreached} unreached) are not the \
             header's {:?} ({} unreached)",
            header.histogram, header.unreached
        ));
    }
    Ok(format!(
        "proven by {shards} prover(s) on {threads} thread(s) in {:.2} s, {layers} layers, \
         entries per distance {histogram:?}",
        started.elapsed().as_secs_f64()
    ))
}

/// About `parts` ranges of `sets` sets of equal length.
fn ranges(sets: u64, parts: u64) -> Vec<std::ops::Range<u64>> {
    let per = sets.div_ceil(parts.max(1)).max(1);
    (0..sets)
        .step_by(usize::try_from(per).unwrap_or(usize::MAX))
        .map(|s| s..(s + per).min(sets))
        .collect()
}
