//! A shard's layer: expanded on the worker's threads, each foreign successor gathered per
//! owner and pushed to it in sorted (a radix sort), deduplicated region lists of at most
//! [`MAX_PUSH_STATES`] states (zstd on the wire); and the layer finished.
//!
//! A thread gathers [`list_states`] states for an owner (the worker's threads share one
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
use tilepdb_common::wire::region_lists::RegionListEncoder;
use tilepdb_common::wire::zstd_frames;
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use super::peer::MAX_MESSAGE_BYTES;
use crate::client::retry::peer_unreachable;
use crate::error::{Error, Result};
use tilepdb_common::sort::radix_sort;

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

thread_local! {
    /// A pushing thread's list bytes before compression, kept from list to list.
    static LIST_BYTES: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// What one thread's expansion sent.
#[derive(Default)]
struct Sent {
    /// Successors of another shard, before deduplication.
    foreign: u64,
    states: u64,
    bytes: u64,
}

/// The lists and the sort buffer of one thread's outbox, kept by the worker from layer to
/// layer: a buffer of 128 KiB or more is a mapping of its own
/// ([`tilepdb_common::allocator`]), which each layer would otherwise map and fault in again.
#[derive(Default)]
pub struct OutboxBuffers {
    lists: Vec<Vec<u64>>,
    scratch: Vec<u64>,
}

/// One thread's lists in the making, one per owner, kept from range to range (their buffers
/// reused, not allocated again for each range).
struct Outbox<'a> {
    /// A list per shard (this one's stays empty), pushed when it holds `list_states`.
    lists: Vec<Vec<u64>>,
    list_states: usize,
    /// The second buffer of the lists' sorts.
    scratch: Vec<u64>,
    push: &'a (dyn Fn(u32, &[u64]) -> Result<u64> + Sync),
    sent: Sent,
    error: Option<Error>,
}

impl<'a> Outbox<'a> {
    /// Empty lists for `shards` shards but `own`, each pushed through `push` when it holds
    /// `list_states` states, in `buffers` (room for `list_states` states made in each).
    fn new(
        shards: usize,
        own: usize,
        list_states: usize,
        push: &'a (dyn Fn(u32, &[u64]) -> Result<u64> + Sync),
        buffers: OutboxBuffers,
    ) -> Self {
        let OutboxBuffers { mut lists, scratch } = buffers;
        lists.resize_with(shards, Vec::new);
        for (p, list) in lists.iter_mut().enumerate() {
            list.clear();
            let room = if p == own { 0 } else { list_states };
            // A list with more room than this table's lists take (a larger table's, or a sort
            // buffer swapped in and grown) is made again at this size: the budget holds.
            if list.capacity() > room {
                *list = Vec::with_capacity(room);
            } else {
                list.reserve_exact(room);
            }
        }
        Outbox {
            lists,
            list_states,
            scratch,
            push,
            sent: Sent::default(),
            error: None,
        }
    }

    /// The outbox's buffers, for the next layer's.
    fn into_buffers(self) -> OutboxBuffers {
        OutboxBuffers {
            lists: self.lists,
            scratch: self.scratch,
        }
    }

    fn add(&mut self, to: u32, state: u64) {
        self.sent.foreign += 1;
        let list = &mut self.lists[to as usize];
        list.push(state);
        if list.len() >= self.list_states {
            self.flush(to);
        }
    }

    fn flush(&mut self, to: u32) {
        let Outbox {
            lists,
            scratch,
            list_states: _,
            push,
            sent,
            error,
        } = self;
        let list = &mut lists[to as usize];
        radix_sort(list, scratch);
        list.dedup();
        if error.is_none() {
            match push_in_parts(list, |part| push(to, part)) {
                Ok(bytes) => {
                    sent.states += list.len() as u64;
                    sent.bytes += bytes;
                }
                Err(e) => *error = Some(e),
            }
        }
        list.clear();
    }

    /// Pushes what the range left in the lists: what the range sent, or its first failure.
    fn finish_range(&mut self) -> Result<Sent> {
        for to in 0..self.lists.len() {
            self.flush(u32::try_from(to).expect("a shard number"));
        }
        let sent = std::mem::take(&mut self.sent);
        self.error.take().map_or(Ok(sent), Err)
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
    let all = 0..shard.index_states();
    // The owners found unreachable in this layer: once one push to an owner has used up its
    // tries, the other threads' pushes to it fail at once instead of trying as long again.
    let gone: Vec<AtomicBool> = (0..shard.layout().shards())
        .map(|_| AtomicBool::new(false))
        .collect();
    let liar = super::test_liar(peers.shard);
    let push = |to: u32, states: &[u64]| -> Result<u64> {
        // A test-only bad worker withholds its lists of layer 3 to shard 0.
        if liar && to == 0 && depth + 1 == 3 {
            return Ok(0);
        }
        let (list, list_bytes) = LIST_BYTES.with(|spare| -> Result<(Vec<u8>, u64)> {
            let mut encoder = RegionListEncoder::with_buffer(&shape, all.clone(), spare.take());
            for &s in states {
                encoder.push(s);
            }
            let bytes = encoder.finish()?;
            let list = zstd_frames::compress(&bytes, level)
                .map_err(|e| Error::Start(format!("cannot compress a list: {e}")))?;
            let list_bytes = bytes.len() as u64;
            spare.set(bytes);
            Ok((list, list_bytes))
        })?;
        let request = PushRequest {
            job_id: job_id.to_string(),
            table,
            depth: depth + 1,
            from_shard: peers.shard,
            to_shard: to,
            count: states.len() as u64,
            list_bytes,
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
                shards,
                peers.shard as usize,
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
                    let stats = shard.expand(sets.clone(), depth, &mut |to, s| outbox.add(to, s));
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

    #[test]
    fn an_outbox_keeps_its_lists_for_the_next_layer() {
        let push = |_: u32, states: &[u64]| -> Result<u64> { Ok(states.len() as u64) };
        let mut first = Outbox::new(3, 0, 1000, &push, OutboxBuffers::default());
        for i in 0..2500_u64 {
            first.add(1 + (i % 2) as u32, i);
        }
        assert_eq!(first.finish_range().unwrap().states, 2500);
        let buffers = first.into_buffers();
        let kept: Vec<*const u64> = buffers.lists.iter().map(Vec::as_ptr).collect();
        let mut second = Outbox::new(3, 0, 1000, &push, buffers);
        let held: Vec<*const u64> = second.lists.iter().map(Vec::as_ptr).collect();
        assert_eq!(held, kept, "the same buffers");
        assert!(
            second.lists[1..]
                .iter()
                .all(|l| l.is_empty() && l.capacity() == 1000)
        );
        second.add(2, 7);
        assert_eq!(second.finish_range().unwrap().states, 1);
        // A smaller table's lists are made again at its size.
        let third = Outbox::new(3, 0, 10, &push, second.into_buffers());
        assert!(third.lists[1..].iter().all(|l| l.capacity() == 10));
        assert_eq!(third.lists[0].capacity(), 0);
    }

    #[test]
    fn an_outbox_pushes_each_list_sorted_and_deduplicated_when_it_holds_its_states() {
        let pushed: Mutex<Vec<(u32, Vec<u64>)>> = Mutex::new(Vec::new());
        let push = |to: u32, states: &[u64]| -> Result<u64> {
            pushed.lock().unwrap().push((to, states.to_vec()));
            Ok(states.len() as u64)
        };
        let mut outbox = Outbox::new(3, 0, 1000, &push, OutboxBuffers::default());
        // 2,500 successors for shard 1 (each twice in its hundred), 10 for shard 2.
        for i in 0..2500_u64 {
            outbox.add(1, 7 * (i / 100 * 50 + i % 50) + 1);
        }
        for i in (0..10_u64).rev() {
            outbox.add(2, i);
        }
        assert!(outbox.lists.iter().all(|l| l.capacity() <= 1000));
        let sent = outbox.finish_range().unwrap();
        assert_eq!(sent.foreign, 2510);
        let pushed = pushed.into_inner().unwrap();
        // Two full lists of shard 1 at 1,000 and 2,000 states, then what was left, shard 2's.
        let sizes: Vec<(u32, usize)> = pushed.iter().map(|(to, l)| (*to, l.len())).collect();
        assert_eq!(sizes, [(1, 500), (1, 500), (1, 250), (2, 10)]);
        for (_, list) in &pushed {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(sent.states, 1260);
        assert_eq!(pushed[3].1, (0..10).collect::<Vec<_>>());
    }
}
