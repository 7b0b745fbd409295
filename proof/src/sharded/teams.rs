//! [`ProofTeams`]: which worker proves which shard, in two disjoint teams.

use std::ops::Range;

use tilepdb_common::StateSpace;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::table::Encoding;

use super::{ProverBytes, prover_bytes};
use crate::error::Result;

/// One team: its workers, the layout of its proof shards (as many as it has workers, cut by
/// the order digit as the build's shards are) and the worker that proves each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofTeam {
    /// The team's proof shards.
    pub layout: ShardLayout,
    /// `provers[j]`: the worker (the build's shard number) that proves proof shard `j`.
    pub provers: Vec<u32>,
}

/// The two disjoint teams that prove a table built on the shards of `build`: team A the
/// workers `0..ceil(P/2)`, team B the others. Within a team a proof shard goes to a worker
/// that did not build any of its orders when a rotation of the team's workers allows it,
/// else to the rotation that shares the fewest orders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofTeams {
    /// Team A, then team B.
    pub teams: [ProofTeam; 2],
}

impl ProofTeams {
    /// The teams of a build on `build`'s shards; `None` for one shard (no two disjoint teams
    /// exist).
    pub fn new(build: ShardLayout) -> Result<Option<ProofTeams>> {
        let p = build.shards();
        if p < 2 {
            return Ok(None);
        }
        let orders = build.orders_of(p - 1).end;
        let a = p.div_ceil(2);
        let team = |workers: Range<u32>| -> Result<ProofTeam> {
            let m = workers.end - workers.start;
            let layout = ShardLayout::new(orders, m)?;
            let shared = |r: u32| -> u64 {
                (0..m)
                    .map(|j| {
                        let proof = layout.orders_of(j);
                        let built = build.orders_of(workers.start + (j + r) % m);
                        proof
                            .end
                            .min(built.end)
                            .saturating_sub(proof.start.max(built.start))
                    })
                    .sum()
            };
            let r = (0..m).min_by_key(|&r| shared(r)).unwrap_or(0);
            Ok(ProofTeam {
                layout,
                provers: (0..m).map(|j| workers.start + (j + r) % m).collect(),
            })
        };
        Ok(Some(ProofTeams {
            teams: [team(0..a)?, team(a..p)?],
        }))
    }
}

impl ProofTeams {
    /// The most bytes any prover holds in memory and on disk, over both teams, for the table
    /// of `space` in `encoding` on `index` ([`prover_bytes`], its entries in a file if
    /// `entries_in_file`): what a worker holds while it proves, after its build shard.
    pub fn largest_prover_bytes(
        &self,
        space: &StateSpace,
        index: &RegionIndex,
        encoding: Encoding,
        entries_in_file: bool,
    ) -> Result<ProverBytes> {
        let mut largest = ProverBytes::default();
        for team in &self.teams {
            for j in 0..team.layout.shards() {
                largest = largest.max(prover_bytes(
                    space,
                    index,
                    team.layout,
                    j,
                    encoding,
                    entries_in_file,
                )?);
            }
        }
        Ok(largest)
    }
}
