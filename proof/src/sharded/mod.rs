//! The proof of a table built on shards, run on the shards: the layer search of
//! [`crate::layers`] cut by the order digit into proof shards, each searched by one prover
//! ([`ShardProver`]) that holds two bits per state of its shard and its shard's file entries
//! ([`ShardEntries`], in memory or in a file of the worker's data directory read back a part
//! at a time), never the whole table.
//!
//! A prover expands its own current layer with the proof's own walks
//! ([`crate::walks`], never the build's kernel), a range of its sets at a time, several ranges
//! at once on a worker's threads; the successors it owns are met at once, the
//! others are handed on in sorted lists grouped by owner, and each owner meets what it
//! receives where unseen. Every state met has its file entry checked against its depth's
//! code, as [`crate::layers::prove_zero_aware`] and [`crate::layers::prove_minimized`] do:
//! `(d >> 1) & 1` in `1-bit`, `d % 3` in `mod3`, `d` in bytes. A zero-aware layer's entries
//! are compared once the layer is complete, in the shard's entry order a part at a time (so
//! the entries may stay on disk); a minimized entry is the depth at which any region of its
//! placement is first met, checked then, and every region of a placement lies on one shard
//! under the order cut. When no prover of the team met a state in a layer, each checks that
//! its unmet entries store the unreached code and returns its entries per distance; the
//! team's sums must be the header's histogram ([`team_layers`]).
//!
//! A layer search is distributed, so each prover's depths depend on the lists every other
//! prover of its team sent: a bad worker that withheld successors in the build (so that
//! another shard's entries are too large) can withhold them again in the proof, and the honest
//! prover of that shard then derives the same wrong depths. Two searches on disjoint teams
//! of workers, both required to pass ([`ProofTeams`]), leave one team without the bad worker,
//! which derives the exact depths and finds every wrong entry.
//!
//! Zero-aware tables in `1-bit`, `mod3` and bytes and minimized tables in bytes are proven
//! on the shards ([`proven_on_shards`]); the others keep the single proof
//! ([`crate::verify_deep`]).

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, StateSpace};

use crate::error::Result;
use crate::layers::Layers;
use crate::walks::fail;

mod entries;
mod entries_file;
mod prover;
mod teams;
#[cfg(test)]
mod tests;

pub use entries::{
    ENTRIES_PART_BYTES, ENTRIES_PER_READ, EntriesPlace, RANGES_PER_READ, ShardEntries,
};
pub use prover::{ProverBytes, ShardProver, ShardTally, prover_bytes};
pub use teams::{ProofTeam, ProofTeams};

/// Whether a table of `space` in `encoding` is proven on the shards.
pub fn proven_on_shards(space: &StateSpace, encoding: Encoding) -> bool {
    matches!(
        (space.rule(), encoding),
        (
            BlankRule::ZeroAware,
            Encoding::OneBit | Encoding::Mod3 | Encoding::Byte
        ) | (BlankRule::Minimized, Encoding::Byte)
    )
}

/// The entries per distance of a table from the tallies of one team's proof shards (every
/// shard of the team's layout once), checked against the header's `histogram` and
/// `unreached` count.
pub fn team_layers(
    space: &StateSpace,
    tallies: &[ShardTally],
    histogram: &[u64],
    unreached: u64,
) -> Result<Layers> {
    let depths = tallies.iter().map(|t| t.histogram.len()).max().unwrap_or(0);
    let mut sum = vec![0u64; depths];
    for tally in tallies {
        for (s, &n) in sum.iter_mut().zip(&tally.histogram) {
            *s += n;
        }
    }
    let layers = Layers {
        histogram: sum,
        unreached: tallies.iter().map(|t| t.unreached).sum(),
    };
    if layers.histogram != histogram || layers.unreached != unreached {
        return Err(fail(
            space,
            format!(
                "the proof shards' entries per distance {:?} ({} unreached) differ from the header's histogram {histogram:?} ({unreached} unreached)",
                layers.histogram, layers.unreached
            ),
        ));
    }
    Ok(layers)
}
