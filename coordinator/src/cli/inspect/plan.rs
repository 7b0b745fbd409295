//! `inspect --plan`: the header, sizes and memory of tables not built yet, and with
//! `--shards` each worker's and the coordinator's share of a sharded build.

use tilepdb_common::StateSpace;
use tilepdb_common::table::Header;
use tilepdb_coordinator::build::human_bytes;
use tilepdb_coordinator::cluster::sharded::plan::{ShardPlan, shard_plan};

use super::{InspectArgs, SetInfo, TableInfo, output};
use crate::cli::job::resolve_partition;

pub(super) fn plan(args: &InspectArgs) -> anyhow::Result<()> {
    let partition = resolve_partition(
        args.puzzle.as_deref(),
        args.partition.as_deref(),
        &args.pattern,
    )?;
    let mut tables = Vec::new();
    for pattern in partition.patterns() {
        let space = StateSpace::new(partition.board(), args.goal, pattern.clone(), args.blank)?;
        let header = Header::plan(&space, args.encoding)?;
        let mut info = TableInfo::new(&header, &space, None);
        if let Some(shards) = args.shards {
            info.sharded = Some(shard_plan(&space, args.encoding, shards)?);
        }
        tables.push(info);
    }
    let (total_file_bytes, build_memory_bytes) = SetInfo::totals(&tables);
    let info = SetInfo {
        set_dir: None,
        partition: partition.name().to_string(),
        board: partition.board().to_string(),
        goal: args.goal.to_string(),
        blank_rule: args.blank.to_string(),
        encoding: args.encoding.to_string(),
        reflection: tilepdb_common::table::manifest::reflection_applies(
            partition.board(),
            args.goal,
        ),
        total_file_bytes,
        build_memory_bytes,
        statistics: None,
        tables,
    };
    output(&info, args.json, SetInfo::print)
}

/// A sharded build's plan: each worker's memory and disk, the coordinator's, the wire.
pub(super) fn print_sharded(p: &ShardPlan) {
    let prover = if p.worker_prover_bytes > 0 {
        format!(
            ", then {} for its part of the proof",
            human_bytes(p.worker_prover_bytes)
        )
    } else {
        String::new()
    };
    let entries = if p.worker_proof_entries_bytes > 0 {
        format!(
            ", then {} of the proof's file entries",
            human_bytes(p.worker_proof_entries_bytes)
        )
    } else {
        String::new()
    };
    tilepdb_common::outln!(
        "  sharded     on {} shards: each worker {} of memory at most ({} of arrays{prover}), {} of disk at most ({} of checkpoints{entries})",
        p.shards,
        human_bytes(p.worker_memory_bytes),
        human_bytes(p.worker_arrays_bytes),
        human_bytes(p.worker_disk_bytes),
        human_bytes(p.worker_checkpoint_bytes)
    );
    let proof = if p.worker_prover_bytes > 0 {
        "(the workers prove the table)"
    } else {
        "besides the proof (it proves the table)"
    };
    tilepdb_common::outln!(
        "              the coordinator {} of memory {proof}, {} of disk; {} on the wire in all ({:.2} bytes a state; {:.1} % of the successors stay on their shard)",
        human_bytes(p.coordinator_memory_bytes),
        human_bytes(p.coordinator_disk_bytes),
        human_bytes(p.wire_bytes),
        p.wire_bytes_per_state,
        100.0 * p.local_fraction
    );
}
