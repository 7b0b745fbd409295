//! A shard's layer: expanded on the worker's threads, each foreign successor gathered per
//! owner and pushed to it in increasing, deduplicated region lists of at most
//! [`MAX_PUSH_STATES`] states (zstd on the wire); and the layer finished.
//!
//! Each thread gathers its successors in an outbox (`outbox.rs`, which puts them in order).
//! A thread gathers about [`list_states`] states for an owner (the worker's threads share one
//! budget of lists, whatever the shards), pushes a full list itself and waits for the
//! owner's answer, so the lists in flight are bounded too, and a layer's expansion ends only
//! when every one of its lists is merged.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::BlankRule;
use tilepdb_common::region_index;
use tilepdb_common::shard::{MAX_PUSH_STATES, Shard, list_states, lists_budget};
use tilepdb_common::wire::connect::{Auth, Endpoint};
use tilepdb_common::wire::proto::shard_peer_client::ShardPeerClient;
use tilepdb_common::wire::proto::{PushRequest, StepReport};
use tilepdb_common::wire::zstd_frames;
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use super::outbox::{Outbox, OutboxBuffers, Sent};
use super::peer::MAX_MESSAGE_BYTES;
use crate::client::retry::peer_unreachable;
use crate::error::{Error, Result};

type PeerClient = ShardPeerClient<InterceptedService<Channel, Auth>>;

/// How many tries a push gets while its owner is unreachable (about 15 s in all).
const PUSH_TRIES: u32 = 10;

/// Clients of every other shard, by shard number (`None` for this one).
pub struct Peers {
    clients: Vec<Option<PeerClient>>,
    shard: u32,
}

impl Peers {
    /// Clients of the shards at `addresses` (this one, `shard`, excepted), with the token and
    /// TLS settings of `coordinator`.
    pub fn connect(addresses: &[String], shard: u32, coordinator: &Endpoint) -> Result<Peers> {
        let clients = addresses
            .iter()
            .enumerate()
            .map(|(p, address)| {
                if p as u64 == u64::from(shard) {
                    return Ok(None);
                }
                let peer = coordinator.at(address.as_str());
                Ok(Some(
                    ShardPeerClient::with_interceptor(peer.channel()?, peer.auth()?)
                        .max_encoding_message_size(MAX_MESSAGE_BYTES),
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Peers { clients, shard })
    }
}

/// Pushes the sorted list `states` through `push` in parts of at most [`MAX_PUSH_STATES`]
/// states, the most a peer takes in one push (a list is gathered up to twice that before it
/// is deduplicated), stopping at the first failure: the bytes sent.
pub(super) fn push_in_parts(
    states: &[u64],
    mut push: impl FnMut(&[u64]) -> Result<u64>,
) -> Result<u64> {
    let most = usize::try_from(MAX_PUSH_STATES).unwrap_or(usize::MAX);
    states
        .chunks(most)
        .try_fold(0, |sent, part| Ok(sent + push(part)?))
}

/// Cuts the sets of `shard`'s table into about `parts` ranges of about equal states.
pub fn set_ranges(shard: &Shard, parts: u64) -> Vec<Range<u64>> {
    region_index::set_ranges(
        shard.index(),
        shard.space().rule() == BlankRule::Ignored,
        parts,
    )
}

/// Expands the layer `depth` of table `table` of `shard` on `pool`, pushing foreign successors
/// to their owners through `peers` (on the runtime `handle`), the threads' lists taken from
/// `buffers` and given back to it for the next layer; what it did.
#[expect(clippy::too_many_arguments, reason = "the step's whole context")]
pub fn expand_layer(
    shard: &Shard,
    pool: &rayon::ThreadPool,
    peers: &Peers,
    handle: &tokio::runtime::Handle,
    job_id: &str,
    (table, depth): (u32, u32),
    level: i32,
    buffers: &Mutex<Vec<OutboxBuffers>>,
) -> Result<StepReport> {
    let shape = super::list_shape(shard, depth + 1);
    // The owners found unreachable in this layer: once one push to an owner has used up its
    // tries, the other threads' pushes to it fail at once instead of trying as long again.
    let gone: Vec<AtomicBool> = (0..shard.layout().shards())
        .map(|_| AtomicBool::new(false))
        .collect();
    let liar = super::test_liar(peers.shard);
    let push = |to: u32, bytes: &[u8], count: u64| -> Result<u64> {
        // A test-only bad worker withholds its lists of layer 3 to shard 0.
        if liar && to == 0 && depth + 1 == 3 {
            return Ok(0);
        }
        let list = zstd_frames::compress(bytes, level)
            .map_err(|e| Error::Start(format!("cannot compress a list: {e}")))?;
        let request = PushRequest {
            job_id: job_id.to_string(),
            table,
            depth: depth + 1,
            from_shard: peers.shard,
            to_shard: to,
            count,
            list_bytes: bytes.len() as u64,
            crc32: crc32fast::hash(&list),
            list,
            search: 0,
        };
        push_list(peers, handle, &request, &gone)
    };
    let shards = shard.layout().shards() as usize;
    let threads = pool.current_num_threads();
    let ranges = set_ranges(shard, threads as u64 * 8);
    let list_states = list_states(
        threads,
        shards.saturating_sub(1),
        lists_budget(shard.bytes()),
    );
    // An outbox a thread for the whole layer: its lists' buffers serve range after range,
    // and layer after layer.
    let mut spare = buffers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let outboxes: Vec<Mutex<Outbox<'_>>> = (0..threads)
        .map(|_| {
            Mutex::new(Outbox::new(
                shard,
                shape,
                list_states,
                &push,
                spare.pop().unwrap_or_default(),
            ))
        })
        .collect();
    let results: Vec<Result<(tilepdb_common::region_expand::ExpandStats, Sent)>> =
        pool.install(|| {
            ranges
                .par_iter()
                .map(|sets| {
                    let thread = rayon::current_thread_index().unwrap_or(0) % threads.max(1);
                    let mut outbox = outboxes[thread]
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let stats = shard.expand(sets.clone(), depth, &mut |block, orders| {
                        outbox.add(block, orders);
                    });
                    outbox.finish_range().map(|sent| (stats, sent))
                })
                .collect()
        });
    spare.extend(outboxes.into_iter().map(|o| {
        o.into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .into_buffers()
    }));
    let mut report = StepReport::default();
    for r in results {
        let (stats, sent) = r?;
        report.expanded += stats.expanded;
        report.generated += stats.generated;
        report.sent_states += sent.states;
        report.sent_bytes += sent.bytes;
        report.foreign_successors += sent.foreign;
    }
    Ok(report)
}

/// Pushes `request` to its shard through `peers` (on the runtime `handle`), trying again
/// while the shard is unreachable; the bytes sent. `gone` marks the shards found
/// unreachable in this layer: once one push to a shard has used up its tries, the other
/// pushes to it fail at once instead of trying as long again.
pub(super) fn push_list(
    peers: &Peers,
    handle: &tokio::runtime::Handle,
    request: &PushRequest,
    gone: &[AtomicBool],
) -> Result<u64> {
    let to = request.to_shard;
    let unreachable_owner =
        |why: &str| Error::PeerUnreachable(format!("shard {to} could not be reached: {why}"));
    let flag = gone
        .get(to as usize)
        .ok_or_else(|| Error::Refused(format!("no shard {to}")))?;
    if flag.load(Relaxed) {
        return Err(unreachable_owner("an earlier push of this layer gave up"));
    }
    let sent = request.list.len() as u64;
    let mut client = peers
        .clients
        .get(to as usize)
        .cloned()
        .flatten()
        .ok_or_else(|| Error::Refused(format!("no client of shard {to}")))?;
    let mut tries = 0;
    loop {
        match handle.block_on(client.push(request.clone())) {
            Ok(_) => return Ok(sent),
            Err(s) if peer_unreachable(&s) && tries < PUSH_TRIES => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100 << tries.min(4)));
            }
            Err(s) if peer_unreachable(&s) => {
                flag.store(true, Relaxed);
                return Err(unreachable_owner(s.message()));
            }
            Err(s) => {
                return Err(Error::Refused(format!(
                    "shard {to} refused a list of layer {}: {}",
                    request.depth,
                    s.message()
                )));
            }
        }
    }
}

/// Finishes the layer `depth` of `shard` on `pool`: the next layer's states and entries.
pub fn finish_layer(shard: &Shard, pool: &rayon::ThreadPool, depth: u32) -> (u64, u64) {
    let ranges = set_ranges(shard, pool.current_num_threads() as u64 * 8);
    pool.install(|| {
        ranges
            .par_iter()
            .map(|sets| shard.finish_layer(sets.clone(), depth))
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_is_pushed_in_parts_that_a_peer_takes() {
        let states: Vec<u64> = (0..2 * MAX_PUSH_STATES + 5).map(|s| 3 * s).collect();
        let mut parts: Vec<Vec<u64>> = Vec::new();
        let sent = push_in_parts(&states, |part| {
            parts.push(part.to_vec());
            Ok(part.len() as u64 + 1)
        })
        .unwrap();
        let sizes: Vec<u64> = parts.iter().map(|p| p.len() as u64).collect();
        assert_eq!(sizes, [MAX_PUSH_STATES, MAX_PUSH_STATES, 5]);
        assert_eq!(parts.concat(), states);
        assert_eq!(sent, 2 * MAX_PUSH_STATES + 5 + 3);
        // The first failure stops the pushes.
        let mut tries = 0;
        let failed = push_in_parts(&states, |_| {
            tries += 1;
            Err(Error::Refused("no".into()))
        });
        assert!(failed.is_err());
        assert_eq!(tries, 1);
    }
}
