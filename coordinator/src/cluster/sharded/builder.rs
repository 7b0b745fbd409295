//! The driver of a sharded job: each table's layers given as steps to every shard, and the
//! finished table's values read from the shards in file order.
//!
//! The builder is a [`TableBuilder`], so [`crate::engine::build_set`] proves each table and
//! writes it, its manifest and its reuse, as for every other build.

use std::sync::Arc;
use std::time::Instant;

use tilepdb_common::StateSpace;
use tilepdb_common::region_expand::ExpandStats;
use tilepdb_common::shard::{ShardLayout, assemble_values};
use tilepdb_common::table::{DepthCode, Encoding, Pdb};
use tilepdb_common::wire::connect::{Auth, channel};
use tilepdb_common::wire::proto::ReadValuesRequest;
use tilepdb_common::wire::proto::shard_peer_client::ShardPeerClient;
use tilepdb_proof::Proof;

use super::control::{Control, Step};
use crate::engine::build_memory::depth_code;
use crate::engine::search::{BuiltTable, table_of_values};
use crate::engine::{SearchProgress, TableBuilder};
use crate::error::{Error, Result};
use crate::report::TableReport;

/// File entries read from every shard at once: a multiple of 8 (whole bytes of 1-bit codes
/// and of 2-bit ones).
const READ_ENTRIES: u64 = 1 << 22;

/// What a sharded build measured of one table, besides its values.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ShardedTableFigures {
    /// Successors sent to another shard than their parent's.
    pub sent_states: u64,
    /// Their bytes on the wire.
    pub sent_bytes: u64,
    /// Successors generated.
    pub generated: u64,
    /// The peak resident memory each shard's worker reported, bytes.
    pub worker_peak_rss: Vec<u64>,
}

/// Builds a set's tables with the shards of a [`Control`].
pub struct ShardedBuilder {
    control: Arc<Control>,
    peers: Vec<String>,
    encoding: Encoding,
    token: Option<String>,
    runtime: tokio::runtime::Handle,
    proves: bool,
    proof: Option<Proof>,
    /// Each table's report, as it was written or reused.
    pub reports: Vec<TableReport>,
    /// Each built table's figures, by table.
    pub figures: Vec<ShardedTableFigures>,
}

impl ShardedBuilder {
    /// A builder over `control`, whose shards joined at `peers`; tables written in
    /// `encoding`; `token`: the shared token of the peers; `runtime`: where the values are
    /// read.
    pub fn new(
        control: Arc<Control>,
        peers: Vec<String>,
        encoding: Encoding,
        token: Option<String>,
        runtime: tokio::runtime::Handle,
        proves: bool,
    ) -> ShardedBuilder {
        ShardedBuilder {
            control,
            peers,
            encoding,
            token,
            runtime,
            proves,
            proof: None,
            reports: Vec::new(),
            figures: Vec::new(),
        }
    }

    /// Reads the values of `space`'s table from every shard, in file order, in `code`.
    fn read_values(&self, table: u32, space: &StateSpace, code: DepthCode) -> Result<Vec<u8>> {
        let index = space.region_index()?;
        let layout = ShardLayout::new(index.orders(), self.control.shards())?;
        let entries = space.entries();
        let mut values = Vec::with_capacity(
            usize::try_from(code.bytes_for(entries))
                .map_err(|_| Error::Shards("the table does not fit in memory".into()))?,
        );
        let clients = self
            .peers
            .iter()
            .map(|address| {
                let _guard = self.runtime.enter();
                Ok(ShardPeerClient::with_interceptor(
                    channel(address, None, None)?,
                    Auth::new(self.token.as_deref())?,
                )
                .max_decoding_message_size(64 << 20))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut start = 0;
        while start < entries {
            let end = (start + READ_ENTRIES).min(entries);
            let parts = self.runtime.block_on(async {
                let reads = clients.iter().enumerate().map(|(p, client)| {
                    let mut client = client.clone();
                    let request = ReadValuesRequest {
                        job_id: self.control.job_id.clone(),
                        table,
                        start,
                        end,
                    };
                    async move {
                        let r = client
                            .read_values(request)
                            .await
                            .map_err(|s| {
                                Error::Shards(format!(
                                    "shard {p} did not give its values: {}",
                                    s.message()
                                ))
                            })?
                            .into_inner();
                        check_values(p, &r.values, r.crc32, r.count, end - start)
                    }
                });
                futures_join_all(reads).await
            });
            let parts = parts.into_iter().collect::<Result<Vec<_>>>()?;
            values.extend(assemble_values(
                space,
                &index,
                layout,
                code,
                start..end,
                &parts,
            )?);
            start = end;
        }
        Ok(values)
    }
}

/// Runs the futures one after another's start, all at once, and gathers their outputs in
/// order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out = Vec::with_capacity(set.len());
    for f in set {
        out.push(f.await);
    }
    out
}

/// A shard's values off the wire: the CRC-32 of the compressed bytes, and at most `room`
/// values, exactly as many as declared.
fn check_values(shard: usize, packed: &[u8], crc: u32, count: u64, room: u64) -> Result<Vec<u8>> {
    let bad = |why: String| Error::Shards(format!("shard {shard} sent bad values: {why}"));
    if crc32fast::hash(packed) != crc {
        return Err(bad("their CRC-32 does not match".into()));
    }
    if count > room {
        return Err(bad(format!("{count} values for {room} entries")));
    }
    let values = zstd::bulk::decompress(packed, usize::try_from(count).unwrap_or(usize::MAX))
        .map_err(|e| bad(format!("they do not decompress: {e}")))?;
    if values.len() as u64 != count {
        return Err(bad(format!(
            "{} values where {count} were declared",
            values.len()
        )));
    }
    Ok(values)
}

impl TableBuilder for ShardedBuilder {
    type Error = Error;

    fn build(&mut self, index: usize, space: &StateSpace) -> Result<BuiltTable> {
        let started = Instant::now();
        let table = u32::try_from(index).map_err(|_| Error::Shards("too many tables".into()))?;
        let code = depth_code(space, Some(self.encoding));
        let open = self.control.run_step(Step::Open {
            table,
            peers: self.peers.clone(),
        })?;
        let mut figures = ShardedTableFigures::default();
        let mut progress = SearchProgress::start();
        while !progress.search_done {
            let depth = progress.next_depth;
            let expanded = self.control.run_step(Step::Expand { table, depth })?;
            let mut stats = ExpandStats::default();
            for r in &expanded {
                stats.expanded += r.expanded;
                stats.generated += r.generated;
                figures.sent_states += r.sent_states;
                figures.sent_bytes += r.sent_bytes;
            }
            let finished = self.control.run_step(Step::Finish { table, depth })?;
            let added = finished.iter().map(|r| r.added).sum();
            let entries = finished.iter().map(|r| r.entries).sum();
            progress.layer_finished(space, added, entries, stats)?;
            tracing::debug!(table, depth, added, "layer finished on every shard");
        }
        figures.generated = progress.generated;
        let data = self.read_values(table, space, code)?;
        let closed = self.control.run_step(Step::Close { table })?;
        figures.worker_peak_rss = closed.iter().map(|r| r.peak_rss).collect();
        let _ = open;
        let index_bytes = space.region_index()?.memory_bytes();
        let built = table_of_values(space, code, data, &progress, started, (index_bytes, 0));
        if self.figures.len() <= index {
            self.figures
                .resize(index + 1, ShardedTableFigures::default());
        }
        self.figures[index] = figures;
        Ok(built)
    }

    fn proves(&self) -> bool {
        self.proves
    }

    fn proven(&mut self, _index: usize, _space: &StateSpace, proof: Proof) -> Result<()> {
        self.proof = Some(proof);
        Ok(())
    }

    fn reused(&mut self, _index: usize, space: &StateSpace, pdb: &Pdb) -> Result<()> {
        self.reports.push(TableReport::cached(space, pdb));
        Ok(())
    }

    fn written(
        &mut self,
        _index: usize,
        space: &StateSpace,
        table: &BuiltTable,
        pdb: &Pdb,
    ) -> Result<()> {
        self.reports.push(
            TableReport::new(space, table, crate::report::peak_rss_bytes(), None)
                .with_table_file(pdb)
                .with_proof(self.proof.take()),
        );
        Ok(())
    }
}
