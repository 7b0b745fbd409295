//! The driver of a written table's proof on the shards (`docs/DESIGN.md` §5): two disjoint
//! teams of workers each run the proof crate's layer search on their own cut of the index,
//! reading the file's entries from the coordinator (`ReadEntries`), and both must pass; each
//! team's counts must be the header's. The steps are `ProofOpen`, then `ProofExpand d` and
//! `ProofFinish d` for each layer, then `ProofClose` ([`super::control`]).
//!
//! A shard lost during the proof (silent for the silence time, or a step that could not reach
//! a peer) makes the whole attempt void: every report of it is discarded, a verdict included,
//! and once every shard has an owner again (the lost one's replacement joined its freed slot)
//! the table is proven again from `ProofOpen`, which makes every prover anew. Nothing else is
//! needed: a proof's state is only its provers' arrays and the lists they exchange, and the
//! table's build arrays are closed before it starts. A list of the void attempt that reaches a
//! prover of the new one is either refused (another layer) or a list of the first layer, the
//! same states its honest sender pushes again, met where unseen. At most
//! [`PROOF_ATTEMPTS`] attempts are made; then the job fails.

use std::sync::Arc;
use std::time::Duration;

use tilepdb_common::StateSpace;
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::table::{Header, Pdb};
use tilepdb_proof::Proof;
use tilepdb_proof::sharded::{ProofTeams, ShardTally, proven_on_shards, team_layers};

use super::builder::ShardedBuilder;
use super::step::{ShardReport, Step, StepOutcome};
use crate::engine::set::prove_file;
use crate::error::{Error, Result};

/// Most times a table is proven on the shards when shards are lost during its proof: the
/// job fails after the last attempt loses one too.
pub const PROOF_ATTEMPTS: u32 = 3;

/// How one attempt at the proof ended.
enum Attempt {
    /// Every step was done: the proof that ran, or why the table is refused.
    Verdict(std::result::Result<Proof, Error>),
    /// A step lost shards (`lost`; empty when a shard only could not reach another).
    Lost(Vec<u32>),
}

impl ShardedBuilder {
    /// Proves table `table`'s file `staged`: on the shards with two shards or more, for the
    /// tables the shards prove; else in the coordinator ([`prove_file`]), which it logs. The
    /// proof that ran, or (inside) why the table is refused.
    pub(super) fn prove_table(
        &mut self,
        table: u32,
        space: &StateSpace,
        staged: &Pdb,
    ) -> Result<std::result::Result<Proof, Error>> {
        let orders = tilepdb_common::region_index::factorial(space.k());
        let build = ShardLayout::new(orders, self.control.shards());
        let teams = match build.ok().map(ProofTeams::new) {
            Some(Ok(Some(teams))) if proven_on_shards(space, staged.encoding()) => teams,
            _ => {
                tracing::info!(
                    table,
                    shards = self.control.shards(),
                    "the table's file is proven in the coordinator (one shard, or a table the shards do not prove)"
                );
                return Ok(prove_file(staged));
            }
        };
        self.prove_on_shards(table, space, staged, &teams)
    }

    /// Proves table `table`'s written file `staged` on the shards by the two teams `teams`,
    /// again from its first step when a shard is lost ([`PROOF_ATTEMPTS`] attempts at
    /// most). The proof that ran, or (inside) why the table is refused.
    fn prove_on_shards(
        &mut self,
        table: u32,
        space: &StateSpace,
        staged: &Pdb,
        teams: &ProofTeams,
    ) -> Result<std::result::Result<Proof, Error>> {
        let pdb = Arc::new(Pdb::open_released(staged.path())?);
        self.proven.set(Some((table, pdb)));
        let verdict = self.prove_until_verdict(table, space, staged.header(), teams);
        self.proven.set(None);
        verdict
    }

    /// The attempts at the proof (see [`ShardedBuilder::prove_on_shards`]).
    fn prove_until_verdict(
        &mut self,
        table: u32,
        space: &StateSpace,
        header: &Header,
        teams: &ProofTeams,
    ) -> Result<std::result::Result<Proof, Error>> {
        for attempt in 1..=PROOF_ATTEMPTS {
            let lost = match self.run_proof(table, space, header, teams)? {
                Attempt::Verdict(verdict) => return Ok(verdict),
                Attempt::Lost(lost) => lost,
            };
            if attempt == PROOF_ATTEMPTS {
                break;
            }
            tracing::warn!(
                table,
                shards = ?lost,
                attempt,
                "shards were lost while the table was proven on the shards: its proof is void; \
                 proving the table again once every shard has an owner"
            );
            if lost.is_empty() {
                // A shard could not reach another that is still there: try again shortly.
                std::thread::sleep(Duration::from_secs(1));
            }
            self.peers = self.control.wait_members(self.replacement_wait)?;
        }
        Err(Error::Shards(format!(
            "table {table}: shards were lost during each of {PROOF_ATTEMPTS} attempts to prove \
             the table on the shards; giving up"
        )))
    }

    /// One attempt at the proof: its steps from `ProofOpen` to `ProofClose`, stopped at the
    /// first verdict against the table or the first step that loses shards.
    fn run_proof(
        &mut self,
        table: u32,
        space: &StateSpace,
        header: &Header,
        teams: &ProofTeams,
    ) -> Result<Attempt> {
        let [a, b] = &teams.teams;
        tracing::info!(
            table,
            team_a = ?a.provers,
            team_b = ?b.provers,
            "proving the table's file on the shards, by two disjoint teams"
        );
        let refused = |reports: &[ShardReport]| {
            reports.iter().enumerate().find_map(|(p, r)| {
                r.proof_failure.as_ref().map(|why| Error::Check {
                    table: space.pattern().to_string(),
                    reason: format!("the proof on shard {p}: {why}"),
                })
            })
        };
        // Gives `step`; every shard's report, or how the attempt ends (lost shards).
        macro_rules! step {
            ($step:expr) => {
                match self.control.run_step($step)? {
                    StepOutcome::Done(reports) => reports,
                    StepOutcome::Lost(lost) => return Ok(Attempt::Lost(lost)),
                }
            };
        }
        // A verdict against the table: the provers let go, the table refused (a shard lost
        // while they are let go changes nothing: the verdict came with a step every shard
        // did, and the next step given admits the replacement or restores it).
        macro_rules! refuse {
            ($error:expr) => {{
                let _ = self.control.run_step(Step::ProofClose { table })?;
                return Ok(Attempt::Verdict(Err($error)));
            }};
        }
        let open = Step::ProofOpen {
            table,
            team_a: a.provers.clone(),
            team_b: b.provers.clone(),
            peers: self.peers.clone(),
        };
        let reports = step!(open);
        if let Some(e) = refused(&reports) {
            refuse!(e);
        }
        for depth in 0u32.. {
            let reports = step!(Step::ProofExpand { table, depth });
            if let Some(e) = refused(&reports) {
                refuse!(e);
            }
            let reports = step!(Step::ProofFinish { table, depth });
            if let Some(e) = refused(&reports) {
                refuse!(e);
            }
            if reports.iter().all(|r| r.added == 0) {
                break;
            }
        }
        let reports = step!(Step::ProofClose { table });
        self.proof_peaks(table, &reports);
        if let Some(e) = refused(&reports) {
            return Ok(Attempt::Verdict(Err(e)));
        }
        for (name, team) in [("A", a), ("B", b)] {
            let tallies: Vec<ShardTally> = team
                .provers
                .iter()
                .map(|&w| ShardTally {
                    histogram: reports[w as usize].proof_histogram.clone(),
                    unreached: reports[w as usize].proof_unreached,
                })
                .collect();
            if let Err(e) = team_layers(space, &tallies, &header.histogram, header.unreached) {
                return Ok(Attempt::Verdict(Err(Error::Check {
                    table: space.pattern().to_string(),
                    reason: format!("team {name}'s proof: {e}"),
                })));
            }
        }
        tracing::info!(table, "both teams proved the table's file");
        Ok(Attempt::Verdict(Ok(Proof::LayerSearch)))
    }

    /// Raises table `table`'s figures to the workers' peaks reported at the proof's close
    /// (a prover may hold more than its worker's build did).
    fn proof_peaks(&mut self, table: u32, reports: &[ShardReport]) {
        let Some(figures) = self.figures.get_mut(table as usize) else {
            return;
        };
        let peaks = &mut figures.worker_peak_rss_bytes;
        if peaks.len() < reports.len() {
            peaks.resize(reports.len(), 0);
        }
        for (peak, report) in peaks.iter_mut().zip(reports) {
            *peak = (*peak).max(report.peak_rss);
        }
    }
}
