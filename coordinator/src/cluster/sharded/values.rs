//! The shards' values read for the table's file: one shard's range of file entries asked for
//! over its data plane, its packed codes checked (CRC-32, count, length) before the builder
//! assembles them.

use tilepdb_common::shard::OwnCodes;
use tilepdb_common::table::DepthCode;
use tilepdb_common::wire::connect::Auth;
use tilepdb_common::wire::proto::ReadValuesRequest;
use tilepdb_common::wire::proto::shard_peer_client::ShardPeerClient;
use tilepdb_common::wire::zstd_frames;

use crate::error::{Error, Result};

/// A client of a shard's data plane.
pub(super) type PeerClient = ShardPeerClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Auth>,
>;

/// Shard `shard`'s codes of the file entries `range` of table `table` of job `job_id` (packed
/// as `code` packs them), read through `client` and checked ([`check_codes`]): the codes, and
/// the compressed bytes that carried them.
pub(super) async fn read_values(
    mut client: PeerClient,
    shard: usize,
    job_id: String,
    table: u32,
    range: std::ops::Range<u64>,
    code: DepthCode,
) -> Result<(OwnCodes, u64)> {
    let request = ReadValuesRequest {
        job_id,
        table,
        start: range.start,
        end: range.end,
    };
    let r = client
        .read_values(request)
        .await
        .map_err(|s| {
            Error::Shards(format!(
                "shard {shard} did not give its values: {}",
                s.message()
            ))
        })?
        .into_inner();
    let codes = check_codes(
        shard,
        code,
        &r.values,
        r.crc32,
        r.count,
        range.end - range.start,
    )?;
    Ok((codes, r.values.len() as u64))
}

/// A shard's codes off the wire: the CRC-32 of the compressed bytes, and at most `room`
/// codes, exactly as many as declared, in exactly the bytes `code` packs them in.
fn check_codes(
    shard: usize,
    code: DepthCode,
    packed: &[u8],
    crc: u32,
    count: u64,
    room: u64,
) -> Result<OwnCodes> {
    let bad = |why: String| Error::Shards(format!("shard {shard} sent bad values: {why}"));
    if crc32fast::hash(packed) != crc {
        return Err(bad("their CRC-32 does not match".into()));
    }
    if count > room {
        return Err(bad(format!("{count} values for {room} entries")));
    }
    let bytes = code.bytes_for(count);
    let codes = zstd_frames::decompress(packed, usize::try_from(bytes).unwrap_or(usize::MAX))
        .map_err(|e| bad(format!("they do not decompress: {e}")))?;
    OwnCodes::new(code, codes, count).map_err(|e| bad(e.to_string()))
}
