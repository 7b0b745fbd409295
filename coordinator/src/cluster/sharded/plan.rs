//! What a sharded build of a table will need per worker, for the coordinator and on the
//! wire, before anything is made (`inspect --plan --shards P`): the shards' arrays exactly,
//! the rest from rates measured by `cargo bench -p tilepdb-coordinator --bench sharded`
//! (`docs/benchmarks.md`).
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
//! use tilepdb_coordinator::cluster::sharded::plan::shard_plan;
//! let p = Partition::named("15:5-5-5").unwrap();
//! let space = StateSpace::new(p.board(), Goal::BlankFirst, p.patterns()[0].clone(),
//!                             BlankRule::ZeroAware).unwrap();
//! let plan = shard_plan(&space, Encoding::OneBit, 4).unwrap();
//! assert!(plan.local_fraction > 0.5 && plan.local_fraction < 1.0);
//! ```

use serde::Serialize;
use tilepdb_common::StateSpace;
use tilepdb_common::region_index::OrderMoves;
use tilepdb_common::shard::{ShardLayout, ShardSize, lists_budget, locality};
use tilepdb_common::table::file_writer::{TableFileWriter, WRITE_BUFFER_BYTES};
use tilepdb_common::table::{Encoding, Header};

use tilepdb_proof::sharded::{ProofTeams, ProverBytes, proven_on_shards};

use super::builder::READ_ENTRIES;
use crate::engine::build_memory::depth_code;
use crate::error::Result;

/// Bytes on the wire per successor sent to another shard (sorted, gap-coded, zstd level 1).
pub const WIRE_BYTES_PER_FOREIGN_SUCCESSOR: f64 = 0.22;
/// Bytes of checkpoint per state (each state is in one layer's list).
pub const CHECKPOINT_BYTES_PER_STATE: f64 = 0.21;
/// What a worker holds beside its arrays, the lists it gathers to push ([`lists_budget`])
/// and the index: the lists it receives, the runtime and the program.
pub const WORKER_ALLOWANCE_BYTES: u64 = 32 << 20;
/// What the coordinator holds beside the index and the range of values it writes: the
/// runtime, the control plane, the program.
pub const COORDINATOR_ALLOWANCE_BYTES: u64 = 32 << 20;
/// Tile sets sampled to estimate the local fraction.
const SAMPLED_SETS: u64 = 20_000;

/// What a sharded build of one table needs.
#[derive(Clone, Debug, Serialize)]
pub struct ShardPlan {
    /// The number of shards.
    pub shards: u32,
    /// The largest shard's two-bit codes and depth store.
    pub worker_arrays_bytes: u64,
    /// The largest prover's memory when the table is proven on the shards (two bits a state
    /// of its proof shard and, its file entries kept in the worker's data directory, a part of
    /// them; a minimized table's entries all), held after the shard's arrays are let go; 0
    /// when the coordinator proves it.
    pub worker_prover_bytes: u64,
    /// The most memory a worker holds: the larger of its arrays and its prover's, each with
    /// the budget of the lists it pushes (a sixteenth of them, at least 32 MiB), the index and
    /// the allowance.
    pub worker_memory_bytes: u64,
    /// The most disk a worker's checkpoints of the table take.
    pub worker_checkpoint_bytes: u64,
    /// The largest prover's file of entries in its worker's data directory (a zero-aware
    /// table's proven on the shards; else 0).
    pub worker_proof_entries_bytes: u64,
    /// The most disk a worker takes: the larger of its checkpoints and its prover's file of
    /// entries (the checkpoints are let go when the table is closed, before its proof).
    pub worker_disk_bytes: u64,
    /// The fraction of successors that stay on their parent's shard (sampled).
    pub local_fraction: f64,
    /// Bytes sent between workers over the whole search.
    pub wire_bytes: u64,
    /// Bytes per state on the wire.
    pub wire_bytes_per_state: f64,
    /// The coordinator's memory as it writes the file: the index, one range of values read
    /// from the shards and encoded, and its allowance (the proof's memory not included).
    pub coordinator_memory_bytes: u64,
    /// The coordinator's disk: the table's file.
    pub coordinator_disk_bytes: u64,
}

/// The plan of a sharded build of `space` written in `encoding` on `shards` shards.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "estimates: non-negative products of rates and counts, far below 2^53"
)]
pub fn shard_plan(space: &StateSpace, encoding: Encoding, shards: u32) -> Result<ShardPlan> {
    let index = space.region_index()?;
    let layout = ShardLayout::new(index.orders(), shards)?;
    let code = depth_code(space, Some(encoding));
    let largest = (0..shards)
        .map(|p| ShardSize::of(space, &index, layout, p, code))
        .max_by_key(ShardSize::bytes)
        .expect("at least one shard");
    let moves = OrderMoves::new(index.k());
    let (local, moves_per_state) =
        locality(&index, &moves, layout, (index.sets() / SAMPLED_SETS).max(1));
    let states = largest.states * u64::from(shards);
    let wire = states as f64 * moves_per_state * (1.0 - local) * WIRE_BYTES_PER_FOREIGN_SUCCESSOR;
    let header = Header::plan(space, encoding)?;
    // One range at a time: every shard's part and the range in file order, in the depth
    // store's code, then its payload and the file's buffer.
    let multiple = TableFileWriter::part_multiple(encoding);
    let range = READ_ENTRIES.div_ceil(multiple) * multiple;
    let range_bytes =
        2 * code.bytes_for(range) + encoding.payload_len(range) + WRITE_BUFFER_BYTES as u64;
    let prover = match ProofTeams::new(layout)? {
        Some(teams) if proven_on_shards(space, encoding) => {
            teams.largest_prover_bytes(space, &index, encoding, true)?
        }
        _ => ProverBytes::default(),
    };
    let checkpoints = (largest.states as f64 * CHECKPOINT_BYTES_PER_STATE) as u64;
    Ok(ShardPlan {
        shards,
        worker_arrays_bytes: largest.bytes(),
        worker_prover_bytes: prover.memory,
        worker_memory_bytes: (largest.bytes() + lists_budget(largest.bytes()))
            .max(prover.memory + lists_budget(prover.memory))
            + index.memory_bytes()
            + WORKER_ALLOWANCE_BYTES,
        worker_checkpoint_bytes: checkpoints,
        worker_proof_entries_bytes: prover.disk,
        worker_disk_bytes: checkpoints.max(prover.disk),
        local_fraction: local,
        wire_bytes: wire as u64,
        wire_bytes_per_state: wire / states as f64,
        coordinator_memory_bytes: index.memory_bytes() + range_bytes + COORDINATOR_ALLOWANCE_BYTES,
        coordinator_disk_bytes: header.file_len(),
    })
}
