//! The finished table's file written from the shards' values, read range by range in file
//! order: the coordinator holds one range at a time, never the table.

use std::path::Path;

use tilepdb_common::StateSpace;
use tilepdb_common::shard::{ShardLayout, assemble_values};
use tilepdb_common::table::file_writer::TableFileWriter;
use tilepdb_common::table::{DepthCode, Header, TableError};
use tilepdb_common::wire::connect::{Auth, channel};
use tilepdb_common::wire::proto::shard_peer_client::ShardPeerClient;

use super::ShardedBuilder;
use crate::cluster::sharded::values::read_values;
use crate::error::{Error, Result};

/// About how many file entries are read from every shard at once (rounded up to whole parts
/// of the file's payload, [`TableFileWriter::part_multiple`]).
pub(in crate::cluster::sharded) const READ_ENTRIES: u64 = 1 << 22;

impl ShardedBuilder {
    /// Writes `space`'s table `table` to `path` in the builder's encoding, from the values
    /// read from every shard range by range in file order (in `code`), holding one range at
    /// a time; `counts`: the reached entries by value and the unreached ones, for packed codes.
    /// The file's header.
    fn write_values(
        &self,
        table: u32,
        space: &StateSpace,
        code: DepthCode,
        counts: (&[u64], u64),
        path: &Path,
    ) -> Result<Header> {
        let index = space.region_index()?;
        let layout = ShardLayout::new(index.orders(), self.control.shards())?;
        let entries = space.entries();
        let mut writer = TableFileWriter::create(path, space, self.encoding, code)?;
        let multiple = TableFileWriter::part_multiple(self.encoding);
        let read_entries = READ_ENTRIES.div_ceil(multiple) * multiple;
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
            let end = (start + read_entries).min(entries);
            // Every shard's part at once, gathered in shard order.
            let parts = self.runtime.block_on(async {
                let reads: Vec<_> = clients
                    .iter()
                    .enumerate()
                    .map(|(p, client)| {
                        let read = read_values(
                            client.clone(),
                            p,
                            self.control.job_id.clone(),
                            table,
                            start..end,
                            code,
                        );
                        tokio::spawn(read)
                    })
                    .collect();
                let mut parts = Vec::with_capacity(reads.len());
                for read in reads {
                    parts.push(read.await.unwrap_or_else(|e| {
                        Err(Error::Shards(format!("a read of the values stopped: {e}")))
                    }));
                }
                parts
            });
            let parts = parts
                .into_iter()
                .map(|part| {
                    part.map(|(values, bytes)| {
                        self.status.values_read(bytes);
                        values
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let values = assemble_values(space, &index, layout, code, start..end, &parts)?;
            writer.append(space, &values, end - start)?;
            start = end;
        }
        Ok(writer.finish(space, (code != DepthCode::Byte).then_some(counts))?)
    }

    /// Writes table `table`'s file at `path` from the shards' values: the header, or why the
    /// values make no table (the table is built again once closed); `None` when a shard fell
    /// silent meanwhile (the next step finds it lost and recovers).
    pub(super) fn write_or_retry(
        &mut self,
        table: u32,
        space: &StateSpace,
        code: DepthCode,
        counts: (&[u64], u64),
        path: &Path,
    ) -> Result<Option<Result<Header>>> {
        match self.write_values(table, space, code, counts, path) {
            Ok(header) => Ok(Some(Ok(header))),
            Err(e @ Error::Table(TableError::Value { .. } | TableError::ValueCount { .. })) => {
                Ok(Some(Err(e)))
            }
            Err(e) if self.control.any_gone() => {
                tracing::warn!("writing the values stopped: {e}");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}
