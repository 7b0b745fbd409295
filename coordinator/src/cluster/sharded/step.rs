//! A step of a sharded job's control plane ([`Step`]), what each shard reports of it
//! ([`ShardReport`]) and how it ended ([`StepOutcome`]); the transitions between steps are in
//! [`super::control`].

/// A step every shard takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Make the arrays of table `table`; the peers' addresses by shard.
    Open {
        /// The table.
        table: u32,
        /// Every shard's data-plane address.
        peers: Vec<String>,
    },
    /// Expand the layer `depth` of table `table`.
    Expand {
        /// The table.
        table: u32,
        /// The layer.
        depth: u32,
    },
    /// Finish the layer `depth` of table `table`.
    Finish {
        /// The table.
        table: u32,
        /// The layer.
        depth: u32,
    },
    /// Write the states of the layer `depth + 1` of table `table` to each shard's checkpoint.
    Checkpoint {
        /// The table.
        table: u32,
        /// The layer expanded.
        depth: u32,
    },
    /// Rebuild table `table` on the shards `shards` from their checkpoints of the layers
    /// `0..=depth`; every shard takes the peers' addresses.
    Restore {
        /// The table.
        table: u32,
        /// The layer the restored shards will expand next.
        depth: u32,
        /// The shards that restore.
        shards: Vec<u32>,
        /// Every shard's data-plane address.
        peers: Vec<String>,
    },
    /// Let table `table`'s arrays go.
    Close {
        /// The table.
        table: u32,
    },
    /// Make the provers of table `table`'s written file: `team_a[j]` (a shard) proves team
    /// A's proof shard `j`, and the same for team B.
    ProofOpen {
        /// The table.
        table: u32,
        /// Team A's provers, by proof shard.
        team_a: Vec<u32>,
        /// Team B's provers, by proof shard.
        team_b: Vec<u32>,
        /// Every shard's data-plane address.
        peers: Vec<String>,
    },
    /// Expand the provers' layer `depth` of table `table`.
    ProofExpand {
        /// The table.
        table: u32,
        /// The layer.
        depth: u32,
    },
    /// End the provers' layer `depth` of table `table`.
    ProofFinish {
        /// The table.
        table: u32,
        /// The layer.
        depth: u32,
    },
    /// The proof's searches are over: each prover checks its entries never met and reports
    /// its counts.
    ProofClose {
        /// The table.
        table: u32,
    },
}

impl Step {
    /// Whether a shard's replacement, which holds nothing of the job yet, may take this step:
    /// a `Restore` that names `shard` (it rebuilds the table from its checkpoints), or a
    /// `ProofOpen` (every prover is made anew from the written file; the table's build arrays
    /// are closed by then). Any other step would find the replacement without the state it
    /// needs.
    pub fn admits_replacement(&self, shard: u32) -> bool {
        match self {
            Step::Restore { shards, .. } => shards.contains(&shard),
            Step::ProofOpen { .. } => true,
            _ => false,
        }
    }
}

/// Why a step failed on a shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepFailure {
    /// The shard could not do it (it does not fit, say): the job fails with this.
    Failed(String),
    /// Another shard could not be reached: the step can be done again once it is back.
    PeerUnreachable(String),
}

/// What a shard reports of a step it did (the service makes it from the wire's report,
/// [`crate::cluster::wire`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardReport {
    /// Expand: current-layer states expanded.
    pub expanded: u64,
    /// Expand: successors generated.
    pub generated: u64,
    /// Expand: states sent to other shards.
    pub sent_states: u64,
    /// Expand: the bytes that sent them.
    pub sent_bytes: u64,
    /// Expand: successors that belong to another shard, before they are deduplicated.
    pub foreign_successors: u64,
    /// Finish: next-layer states.
    pub added: u64,
    /// Finish: the table entries they stand for.
    pub entries: u64,
    /// Checkpoint: bytes written to the shard's data directory.
    pub checkpoint_bytes: u64,
    /// The worker's peak resident memory so far, bytes (0: unknown).
    pub peak_rss: u64,
    /// Proof close: the prover's entries per distance.
    pub proof_histogram: Vec<u64>,
    /// Proof close: the prover's entries never met.
    pub proof_unreached: u64,
    /// A proof step: the prover's verdict against the table (a wrong entry, say).
    pub proof_failure: Option<String>,
    /// The step failed on this shard: why.
    pub failure: Option<StepFailure>,
}

/// How a step ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Every shard reported it.
    Done(Vec<ShardReport>),
    /// Shards were lost (silent too long; the list may be empty when a shard only could not
    /// reach another): the step must be done again once they are replaced.
    Lost(Vec<u32>),
}
