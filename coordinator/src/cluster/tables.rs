//! The table service (`proto/tilepdb/v1/tables.proto`): the finished table sets in a
//! directory, listed and downloaded by solvers (`tilepdb-solve fetch`).
//!
//! A set is a directory with a `manifest.json` (written last by the builder, so a set being
//! built is not listed until it is complete). The service reads the manifests again on every
//! listing, so sets built or copied in later are served without a restart. A download is
//! one file of a set from an offset to its end, as checked chunks; the client verifies the
//! whole file against the manifest, so the service only makes sure it sends the file the
//! manifest lists (its size, and the checksum the client asks for).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tilepdb_common::table::manifest::MANIFEST_NAME;
use tilepdb_common::table::{Manifest, ManifestEntry};
use tilepdb_common::wire::MAX_CHUNK_BYTES;
use tilepdb_common::wire::chunk::encode_chunk;
use tilepdb_common::wire::proto::tables_server::Tables;
use tilepdb_common::wire::proto::{
    Chunk, DownloadRequest, ListSetsRequest, ListSetsResponse, Section, TableFileInfo, TableSetInfo,
};
use tokio::sync::OwnedSemaphorePermit;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

/// Chunks a download keeps in flight ahead of the client.
const CHUNKS_AHEAD: usize = 4;

/// Serves the sets found in a directory.
#[derive(Clone, Debug)]
pub struct TableService {
    root: PathBuf,
    /// Most bytes per second of one download (`None`: as fast as it goes).
    rate_limit: Option<u64>,
    zstd_level: i32,
}

/// A set found on disk.
#[derive(Clone, Debug)]
pub struct ServedSet {
    /// The set's name (its directory's).
    pub name: String,
    /// The set's directory.
    pub dir: PathBuf,
    /// The set's manifest, parsed.
    pub manifest: Manifest,
    /// The manifest's text, byte for byte.
    pub manifest_json: String,
}

impl TableService {
    /// Serves the sets in `root`: each subdirectory with a manifest, or `root` itself if it is
    /// a set. Downloads go at most `rate_limit` bytes per second each, if given (0: no
    /// limit).
    pub fn new(root: impl Into<PathBuf>, rate_limit: Option<u64>) -> TableService {
        TableService {
            root: root.into(),
            rate_limit: rate_limit.filter(|&r| r > 0),
            zstd_level: 1,
        }
    }

    /// The directory of the sets served.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The sets served now, by name. A directory whose manifest does not parse is skipped
    /// (and logged): it may be a set written by another version, or damaged.
    pub fn sets(&self) -> Vec<ServedSet> {
        let mut dirs = Vec::new();
        if self.root.join(MANIFEST_NAME).is_file() {
            dirs.push(self.root.clone());
        } else if let Ok(entries) = std::fs::read_dir(&self.root) {
            for entry in entries.flatten() {
                let hidden = entry.file_name().to_string_lossy().starts_with('.');
                if !hidden && entry.path().join(MANIFEST_NAME).is_file() {
                    dirs.push(entry.path());
                }
            }
        }
        let mut sets: Vec<ServedSet> = dirs.into_iter().filter_map(read_set).collect();
        sets.sort_by(|a, b| a.name.cmp(&b.name));
        sets
    }

    fn find(&self, name: &str) -> Result<ServedSet, Status> {
        let sets = self.sets();
        let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        let known = names.join(", ");
        sets.iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| {
                Status::not_found(format!(
                    "no table set {name:?} here; the sets served are: {}",
                    if known.is_empty() { "none" } else { &known }
                ))
            })
    }

    /// Chunk size of a download: small enough that a rate limit is kept smoothly.
    fn chunk_bytes(&self) -> usize {
        match self.rate_limit {
            Some(rate) => usize::try_from((rate / 4).clamp(4096, u64::from(MAX_CHUNK_BYTES)))
                .expect("a chunk fits memory"),
            None => MAX_CHUNK_BYTES as usize,
        }
    }
}

fn read_set(dir: PathBuf) -> Option<ServedSet> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let path = dir.join(MANIFEST_NAME);
    let parsed = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            Manifest::parse(&text, &path)
                .map(|m| (m, text))
                .map_err(|e| e.to_string())
        });
    match parsed {
        Ok((manifest, manifest_json)) => Some(ServedSet {
            name,
            dir,
            manifest,
            manifest_json,
        }),
        Err(e) => {
            tracing::warn!("not serving {}: {e}", dir.display());
            None
        }
    }
}

impl ServedSet {
    /// The set as the wire lists it.
    pub fn info(&self) -> TableSetInfo {
        let m = &self.manifest;
        TableSetInfo {
            name: self.name.clone(),
            partition: m.partition.clone(),
            board: m.board.to_string(),
            goal: m.goal.to_string(),
            blank_rule: m.blank_rule.to_string(),
            encoding: m.encoding.to_string(),
            reflection: m.reflection,
            files: m
                .tables
                .iter()
                .map(|t| TableFileInfo {
                    name: t.file.clone(),
                    tiles: t.tiles.iter().map(|&x| u32::from(x)).collect(),
                    entries: t.entries,
                    size: t.size,
                    checksum: t.checksum.clone(),
                })
                .collect(),
            total_bytes: m.tables.iter().map(|t| t.size).sum(),
            manifest_json: self.manifest_json.clone(),
        }
    }

    fn entry(&self, file: &str) -> Result<&ManifestEntry, Status> {
        self.manifest
            .tables
            .iter()
            .find(|t| t.file == file)
            .ok_or_else(|| Status::not_found(format!("set {} has no file {file:?}", self.name)))
    }
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, Status>> + Send>>;

#[tonic::async_trait]
impl Tables for TableService {
    async fn list_sets(
        &self,
        _request: Request<ListSetsRequest>,
    ) -> Result<Response<ListSetsResponse>, Status> {
        let service = self.clone();
        let sets = tokio::task::spawn_blocking(move || service.sets())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(ListSetsResponse {
            sets: sets.iter().map(ServedSet::info).collect(),
            max_chunk_bytes: MAX_CHUNK_BYTES,
        }))
    }

    type DownloadStream = ChunkStream;

    async fn download(
        &self,
        request: Request<DownloadRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        self.download_holding(request.into_inner(), None)
    }
}

/// Longest wait for a client to take the next chunk of a download: past it the download is
/// dropped (its file closed, its reading slot freed) and the client, if it reads again, gets
/// `DEADLINE_EXCEEDED`.
pub const SEND_DEADLINE: Duration = Duration::from_secs(30);

impl TableService {
    /// A download (`Download`) that holds `slot`, if given, until its last chunk is taken or
    /// its client takes none for [`SEND_DEADLINE`] (then the download is dropped). Its file
    /// is read on a blocking thread a chunk at a time; waiting for the client holds none.
    /// Call it within a tokio runtime (the download runs on a task of its own).
    pub fn download_holding(
        &self,
        r: DownloadRequest,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<Response<ChunkStream>, Status> {
        let (file, path, size) = self.open_download(&r)?;
        let (tx, rx) = tokio::sync::mpsc::channel(CHUNKS_AHEAD);
        let stalled = Arc::new(AtomicBool::new(false));
        let sender = ChunkSender {
            path,
            range: r.offset..size,
            chunk_bytes: self.chunk_bytes(),
            rate: self.rate_limit,
            level: self.zstd_level,
            gave_up: stalled.clone(),
        };
        tokio::spawn(async move {
            let _slot = slot;
            sender.send(file, tx).await;
        });
        // A download dropped for its slowness ends with an error, not as if complete.
        let chunks = tokio_stream::wrappers::ReceiverStream::new(rx).chain(
            tokio_stream::once(()).filter_map(move |()| {
                stalled.load(Ordering::Acquire).then(|| {
                    Err::<Chunk, Status>(Status::deadline_exceeded(
                        "the download was dropped: no chunk taken for too long",
                    ))
                })
            }),
        );
        Ok(Response::new(Box::pin(chunks)))
    }

    /// The file that `r` asks for, checked against its set's manifest (the checksum the
    /// client knows, the offset, a regular file of the listed size) and opened at `r`'s
    /// offset: the file, its path and its size.
    fn open_download(&self, r: &DownloadRequest) -> Result<(std::fs::File, PathBuf, u64), Status> {
        let set = self.find(&r.set)?;
        let entry = set.entry(&r.file)?.clone();
        if !r.checksum.is_empty() && r.checksum != entry.checksum {
            return Err(Status::failed_precondition(format!(
                "{} of set {} is now {}, not {}: the set was rebuilt; list the sets again",
                entry.file, set.name, entry.checksum, r.checksum
            )));
        }
        if r.offset > entry.size {
            return Err(Status::out_of_range(format!(
                "offset {} is past the end of {} ({} bytes)",
                r.offset, entry.file, entry.size
            )));
        }
        let path = set.dir.join(&entry.file);
        let unavailable =
            |e: std::io::Error| Status::unavailable(format!("{}: {e}", path.display()));
        let mut file = std::fs::File::open(&path).map_err(unavailable)?;
        let meta = file.metadata().map_err(unavailable)?;
        if !meta.is_file() {
            return Err(Status::failed_precondition(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        let len = meta.len();
        if len != entry.size {
            return Err(Status::failed_precondition(format!(
                "{} has {len} bytes, its manifest lists {}: the set is being replaced",
                path.display(),
                entry.size
            )));
        }
        file.seek(SeekFrom::Start(r.offset)).map_err(unavailable)?;
        tracing::info!(
            set = %set.name,
            file = %entry.file,
            offset = r.offset,
            bytes = entry.size - r.offset,
            "download"
        );
        Ok((file, path, entry.size))
    }
}

/// One download's chunks read and sent: the file's `range`, a chunk at a time, at most
/// `rate` bytes a second.
struct ChunkSender {
    path: PathBuf,
    range: std::ops::Range<u64>,
    chunk_bytes: usize,
    rate: Option<u64>,
    level: i32,
    /// Raised when the client took no chunk for [`SEND_DEADLINE`].
    gave_up: Arc<AtomicBool>,
}

impl ChunkSender {
    /// Reads `file` (at the range's start) on a blocking thread a chunk at a time and sends
    /// each chunk to `tx`; stops when the client goes away, the file cannot be read, or the
    /// client takes no chunk for [`SEND_DEADLINE`].
    #[expect(
        clippy::cast_precision_loss,
        reason = "a pace: bytes below 2^53 are exact, and a pace needs no more"
    )]
    async fn send(self, file: std::fs::File, tx: tokio::sync::mpsc::Sender<Result<Chunk, Status>>) {
        let (chunk_bytes, level) = (self.chunk_bytes, self.level);
        let (mut offset, end) = (self.range.start, self.range.end);
        let started = Instant::now();
        let mut file = Some((file, vec![0u8; chunk_bytes]));
        while offset < end {
            let n = usize::try_from(end - offset).map_or(chunk_bytes, |left| left.min(chunk_bytes));
            let (mut f, mut piece) = file.take().expect("the file between reads");
            let read_path = self.path.clone();
            let Ok((f, piece, message)) = tokio::task::spawn_blocking(move || {
                let message = match f.read_exact(&mut piece[..n]) {
                    Ok(()) => Ok(encode_chunk(Section::TableFile, offset, &piece[..n], level)),
                    Err(e) => Err(Status::unavailable(format!("{}: {e}", read_path.display()))),
                };
                (f, piece, message)
            })
            .await
            else {
                return;
            };
            file = Some((f, piece));
            let failed = message.is_err();
            match tokio::time::timeout(SEND_DEADLINE, tx.send(message)).await {
                Ok(Ok(())) if !failed => {}
                // The client went away, or the file could not be read.
                Ok(_) => return,
                Err(_) => {
                    tracing::warn!(
                        file = %self.path.display(),
                        offset,
                        "a download's client took no chunk for {} s: dropped",
                        SEND_DEADLINE.as_secs()
                    );
                    self.gave_up.store(true, Ordering::Release);
                    return;
                }
            }
            offset += n as u64;
            if let Some(rate) = self.rate {
                let due = Duration::from_secs_f64((offset - self.range.start) as f64 / rate as f64);
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}
