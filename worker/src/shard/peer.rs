//! The data plane of a shard worker: the `ShardPeer` service. Other shards push the states
//! they reached that this shard owns; the coordinator reads the finished table's values.
//!
//! Every list is checked in full before any of it is merged: the CRC-32 of its bytes, their
//! declared sizes, the region list's decoding (every state of the layer's parity, in the
//! index), and every state one of this shard's ([`Shard::merge_received`]). A push for another
//! job, table, layer or shard is refused and logged; nothing of it is merged.
//! A push of the proof on the shards (`search` 1 or 2: a team's proof) goes to the prover of
//! that search only (`proof.rs`), checked the same way.

use std::cell::RefCell;
use std::sync::{Arc, RwLock};

use tilepdb_common::Error as DomainError;
use tilepdb_common::shard::{MAX_PUSH_STATES, Shard};
use tilepdb_common::wire::proto::shard_peer_server::ShardPeer;
use tilepdb_common::wire::proto::{
    PushRequest, PushResponse, ReadValuesRequest, ReadValuesResponse,
};
use tilepdb_common::wire::region_lists::{RegionListShape, walk_region_states};
use tilepdb_common::wire::zstd_frames;
use tonic::{Request, Response, Status};

/// Most file entries read in one call.
pub const MAX_READ_ENTRIES: u64 = 1 << 24;
/// Largest message the peer service takes.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The table a shard worker has open.
pub struct OpenShard {
    /// The table's number in the set.
    pub table: u32,
    /// The shard's arrays.
    pub shard: Arc<Shard>,
    /// The layer whose states pushes may carry now (the one being reached).
    pub accept_depth: u32,
}

/// What the peer service shares with the worker's step loop.
pub struct PeerState {
    /// The job joined (empty until joined: every push is refused).
    pub job_id: RwLock<String>,
    /// This worker's shard.
    pub shard: u32,
    /// The number of shards.
    pub shards: u32,
    /// The table open, if any.
    pub open: RwLock<Option<OpenShard>>,
    /// The prover of the proof on the shards, if one is open.
    pub proof: RwLock<Option<Arc<super::proof::ProofSlot>>>,
}

/// The `ShardPeer` service of a shard worker.
pub struct PeerService {
    state: Arc<PeerState>,
}

impl PeerService {
    /// The service over `state`.
    pub fn new(state: Arc<PeerState>) -> PeerService {
        PeerService { state }
    }

    /// Refuses a call for another job. A worker that has not joined yet (a replacement
    /// starting on a lost shard's address, say) answers `UNAVAILABLE`, as if it were not up:
    /// the caller treats it as unreachable, not as a refusal.
    fn check_job(&self, job_id: &str) -> Result<(), Status> {
        let ours = self.state.job_id.read().expect("job id lock");
        if ours.is_empty() {
            return Err(Status::unavailable(format!(
                "this shard has not joined a job yet (asked for job {job_id:?})"
            )));
        }
        if *ours != job_id {
            return Err(Status::failed_precondition(format!(
                "this shard works for job {:?}, not {job_id:?}",
                *ours
            )));
        }
        Ok(())
    }

    /// The open table `table`'s shard and the depth pushes may carry.
    fn open(&self, table: u32) -> Result<(Arc<Shard>, u32), Status> {
        let open = self.state.open.read().expect("open table lock");
        match &*open {
            Some(o) if o.table == table => Ok((o.shard.clone(), o.accept_depth)),
            Some(o) => Err(Status::failed_precondition(format!(
                "this shard has table {} open, not table {table}",
                o.table
            ))),
            // Between tables, or restoring one: not ready, rather than refusing.
            None => Err(Status::unavailable(format!(
                "this shard has no table open (asked for table {table})"
            ))),
        }
    }
}

pub(super) fn invalid(e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(e.to_string())
}

/// Checks a pushed list in full (its count, declared size, CRC-32, decompression, and the
/// decoding of every state, in `shape` and among `states`); its states.
pub(super) fn decode_push(
    r: &PushRequest,
    shape: &RegionListShape<'_>,
    states: std::ops::Range<u64>,
) -> Result<Vec<u64>, Status> {
    let mut decoded = Vec::new();
    decode_push_into(r, shape, states, &mut Vec::new(), &mut decoded)?;
    Ok(decoded)
}

/// [`decode_push`] into `decoded`, with `bytes` for the list's decompressed bytes: both
/// cleared first, their buffers kept for the caller's next list.
fn decode_push_into(
    r: &PushRequest,
    shape: &RegionListShape<'_>,
    states: std::ops::Range<u64>,
    bytes: &mut Vec<u8>,
    decoded: &mut Vec<u64>,
) -> Result<(), Status> {
    decoded.clear();
    if r.count == 0 || r.count > MAX_PUSH_STATES {
        return Err(invalid(format!(
            "a list of {} states: a push holds 1 to {MAX_PUSH_STATES}",
            r.count
        )));
    }
    if r.list_bytes > shape.max_bytes(r.count) {
        return Err(invalid(format!(
            "{} bytes declared for {} states",
            r.list_bytes, r.count
        )));
    }
    if crc32fast::hash(&r.list) != r.crc32 {
        return Err(invalid("the list's CRC-32 does not match its bytes"));
    }
    let declared = usize::try_from(r.list_bytes).map_err(invalid)?;
    zstd_frames::decompress_into(&r.list, declared, bytes)
        .map_err(|e| invalid(format!("the list does not decompress: {e}")))?;
    if bytes.len() != declared {
        return Err(invalid(format!(
            "the list has {} bytes where {declared} were declared",
            bytes.len(),
        )));
    }
    decoded.reserve(usize::try_from(r.count).map_err(invalid)?);
    walk_region_states(bytes, r.count, shape, states, |s| {
        decoded.push(s);
    })
    .map_err(|e| {
        decoded.clear();
        invalid(e)
    })
}

thread_local! {
    /// A merging thread's buffers, kept from list to list: the list's bytes and its states.
    static MERGE_BUFFERS: RefCell<(Vec<u8>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Checks a pushed list in full and merges it; the states merged.
fn merge_push(shard: &Shard, r: &PushRequest) -> Result<u64, Status> {
    let shape = super::list_shape(shard, r.depth);
    MERGE_BUFFERS.with(|buffers| {
        let (bytes, states) = &mut *buffers.borrow_mut();
        decode_push_into(r, &shape, 0..shard.index_states(), bytes, states)?;
        shard
            .merge_received(states, r.depth)
            .map_err(|e: DomainError| invalid(e))
    })?;
    Ok(r.count)
}

#[tonic::async_trait]
impl ShardPeer for PeerService {
    async fn push(&self, request: Request<PushRequest>) -> Result<Response<PushResponse>, Status> {
        let from = request.remote_addr();
        let r = request.into_inner();
        if r.search != 0 {
            let result = match self.check_job(&r.job_id) {
                Ok(()) => super::proof::push(&self.state, r).await,
                Err(e) => Err(e),
            };
            if let Err(e) = &result {
                tracing::warn!(peer = ?from, "refused a pushed proof list: {}", e.message());
            }
            return result.map(|()| Response::new(PushResponse {}));
        }
        let checked = (|| {
            self.check_job(&r.job_id)?;
            if r.to_shard != self.state.shard
                || r.from_shard >= self.state.shards
                || r.from_shard == self.state.shard
            {
                return Err(invalid(format!(
                    "a list from shard {} to shard {}, sent to shard {} of {}",
                    r.from_shard, r.to_shard, self.state.shard, self.state.shards
                )));
            }
            let (shard, accept) = self.open(r.table)?;
            if r.depth != accept {
                return Err(Status::failed_precondition(format!(
                    "a list of layer {} where this shard takes layer {accept}",
                    r.depth
                )));
            }
            Ok(shard)
        })();
        let result = match checked {
            Ok(shard) => tokio::task::spawn_blocking(move || merge_push(&shard, &r).map(|_| ()))
                .await
                .unwrap_or_else(|e| Err(Status::internal(format!("the merge stopped: {e}")))),
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            tracing::warn!(peer = ?from, "refused a pushed list: {}", e.message());
        }
        result.map(|()| Response::new(PushResponse {}))
    }

    async fn read_values(
        &self,
        request: Request<ReadValuesRequest>,
    ) -> Result<Response<ReadValuesResponse>, Status> {
        let r = request.into_inner();
        self.check_job(&r.job_id)?;
        let (shard, _) = self.open(r.table)?;
        let entries = shard.space().entries();
        if r.start >= r.end || r.end > entries || r.end - r.start > MAX_READ_ENTRIES {
            return Err(invalid(format!(
                "entries {}..{}: a read takes 1 to {MAX_READ_ENTRIES} of the table's {entries}",
                r.start, r.end
            )));
        }
        tokio::task::spawn_blocking(move || {
            let own = shard.own_codes(r.start..r.end);
            let packed = zstd_frames::compress(own.codes(), 1)
                .map_err(|e| Status::internal(e.to_string()))?;
            Ok(Response::new(ReadValuesResponse {
                crc32: crc32fast::hash(&packed),
                values: packed,
                count: own.count(),
            }))
        })
        .await
        .unwrap_or_else(|e| Err(Status::internal(format!("the read stopped: {e}"))))
    }
}

/// Lets in calls that carry the shared token (every call when there is none).
#[derive(Clone)]
pub struct TokenCheck(Option<std::sync::Arc<str>>);

impl TokenCheck {
    /// Checks for `token`, if any.
    pub fn new(token: Option<&str>) -> TokenCheck {
        TokenCheck(token.map(std::sync::Arc::from))
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.0 else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get(tilepdb_common::wire::AUTH_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // The same work whatever the bytes given.
        let (a, b) = (given.as_bytes(), token.as_bytes());
        let mut diff = a.len() ^ b.len();
        for (i, &x) in b.iter().enumerate() {
            diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
        }
        if diff != 0 {
            return Err(Status::unauthenticated("missing or wrong token"));
        }
        Ok(request)
    }
}
