//! Downloading a finished table set from a coordinator (its table service,
//! `proto/tilepdb/v1/tables.proto`) into a local cache.
//!
//! The cache holds one directory per set and manifest, `<cache>/<set>-<key>` where `key` is
//! the CRC-32 of the set's manifest (which lists every file's checksum), so a rebuilt set
//! never mixes with an older copy. A download goes into `<cache>/.partial/<set>-<key>/`:
//! each file as `<file>.part`, appended chunk by checked chunk, so an interrupted download
//! resumes where it stopped. When every file is complete the set is opened and checked as a
//! whole ([`TableSet::open`]: sizes, CRC-32 of every header and payload, each file against
//! the manifest) and **proven** ([`tilepdb_proof::verify_deep`] on every file: each entry the
//! exact distance of its abstraction, or that distance's encoding, so a server that raises
//! entries and recomputes every checksum is found out); only then is the directory moved into
//! place, in one rename, and marked proven (`<cache>/.proven/<set>-<key>`). A partial, corrupt or forged file is
//! therefore never in a directory that can be opened as a set; a set that fails its check or
//! its proof is deleted, not kept. Fetching a set that is already cached checks the cached
//! copy, proves it if it was kept unproven ([`FetchOptions::prove`] off), and downloads
//! nothing.
//!
//! ```no_run
//! use tilepdb_common::wire::connect::Endpoint;
//! use tilepdb_solver::fetch::{default_cache_dir, fetch_set};
//! use tilepdb_common::table::TableSet;
//! let remote = Endpoint::new("http://coordinator:7878");
//! let report = fetch_set(&remote, "4x4-7-8-minimized-blank-first", &default_cache_dir(), |_| {})
//!     .unwrap();
//! let set = TableSet::open(&report.dir).unwrap();
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use tilepdb_common::table::manifest::MANIFEST_NAME;
use tilepdb_common::table::{Manifest, ManifestEntry, Pdb, TableSet};
use tilepdb_common::wire::MAX_CHUNK_BYTES;
use tilepdb_common::wire::chunk::decode_chunk;
use tilepdb_common::wire::connect::{Auth, Endpoint};
use tilepdb_common::wire::proto::tables_client::TablesClient;
use tilepdb_common::wire::proto::{Chunk, DownloadRequest, ListSetsRequest, Section, TableSetInfo};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::error::{Error, Result};

/// How long a download refused for now (`RESOURCE_EXHAUSTED`: the server's download slots
/// are taken) is tried again, with exponential backoff, before the fetch gives up.
const REFUSED_RETRY_FOR: Duration = Duration::from_secs(120);
/// Longest wait for the next chunk of a download.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);
/// Where downloads in progress live, inside the cache.
const PARTIAL_DIR: &str = ".partial";

/// The default cache: `$TILEPDB_CACHE`, else `$XDG_CACHE_HOME/tilepdb`, else
/// `$HOME/.cache/tilepdb`, else `.tilepdb-cache` in the current directory.
pub fn default_cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("TILEPDB_CACHE") {
        return dir.into();
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("tilepdb");
    }
    if let Some(home) = var("HOME") {
        return PathBuf::from(home).join(".cache/tilepdb");
    }
    PathBuf::from(".tilepdb-cache")
}

/// How far a fetch has come.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Bytes of the set present (resumed or downloaded).
    pub bytes: u64,
    /// Bytes of the whole set.
    pub total: u64,
}

/// How a fetch treats what it downloads.
#[derive(Clone, Copy, Debug)]
pub struct FetchOptions {
    /// Prove every table before the set is kept (on by default). Off, the set is kept after
    /// its checksums alone, and marked unproven.
    pub prove: bool,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions { prove: true }
    }
}

/// The directory of the cache that holds a mark, named by a set's key (its name and manifest
/// checksum), for each set whose every table was proven; the set's own directory holds the
/// server's files only.
pub const PROVEN_DIR: &str = ".proven";

/// What a fetch did.
#[derive(Clone, Debug, Serialize)]
pub struct FetchReport {
    /// The set's name.
    pub set: String,
    /// The set's directory in the cache: open it with [`TableSet::open`].
    pub dir: PathBuf,
    /// Files of the set.
    pub files: usize,
    /// Bytes of the set's files.
    pub bytes: u64,
    /// Bytes of file data downloaded by this fetch.
    pub downloaded: u64,
    /// Bytes an earlier, interrupted fetch had left, that this one kept.
    pub resumed: u64,
    /// The set was in the cache already, intact: nothing was downloaded.
    pub already_present: bool,
    /// Every table of the set is proven (by this fetch or an earlier one).
    pub proven: bool,
    /// Seconds this fetch spent proving tables.
    pub proof_seconds: f64,
    /// Seconds the fetch took.
    pub seconds: f64,
}

type Client = TablesClient<InterceptedService<Channel, Auth>>;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Fetch(format!("cannot start the async runtime: {e}")))
}

fn client(remote: &Endpoint) -> Result<Client> {
    Ok(
        TablesClient::with_interceptor(remote.channel()?, remote.auth()?)
            .max_decoding_message_size(2 * MAX_CHUNK_BYTES as usize + (1 << 16)),
    )
}

fn remote_error(remote: &Endpoint, what: &str, status: tonic::Status) -> Error {
    if status.code() == tonic::Code::Unavailable {
        return Error::Fetch(format!(
            "cannot reach {} ({what}): {}",
            remote.address,
            status.message()
        ));
    }
    Error::Remote {
        url: remote.address.clone(),
        what: what.to_string(),
        code: status.code(),
        message: status.message().to_string(),
    }
}

async fn list(client: &mut Client, remote: &Endpoint) -> Result<Vec<TableSetInfo>> {
    let response = client
        .list_sets(ListSetsRequest {})
        .await
        .map_err(|s| remote_error(remote, "listing the table sets", s))?;
    Ok(response.into_inner().sets)
}

/// The table sets `remote` serves. Blocks (on a runtime of its own): call it from a plain
/// thread, not from async code.
pub fn list_sets(remote: &Endpoint) -> Result<Vec<TableSetInfo>> {
    runtime()?.block_on(async {
        let mut client = client(remote)?;
        list(&mut client, remote).await
    })
}

/// Downloads the set `name` from `remote` into `cache` (resuming an interrupted download,
/// checking and proving everything; see the module's documentation), calling `progress` as
/// bytes arrive. A set already in the cache, intact and proven, is not downloaded again.
/// Blocks (on a runtime of its own): call it from a plain thread, not from async code.
pub fn fetch_set(
    remote: &Endpoint,
    name: &str,
    cache: &Path,
    progress: impl FnMut(Progress),
) -> Result<FetchReport> {
    fetch_set_with(remote, name, cache, FetchOptions::default(), progress)
}

/// [`fetch_set`] with `options` (whether to prove the tables).
pub fn fetch_set_with(
    remote: &Endpoint,
    name: &str,
    cache: &Path,
    options: FetchOptions,
    mut progress: impl FnMut(Progress),
) -> Result<FetchReport> {
    let started = Instant::now();
    let cache = &std::path::absolute(cache).map_err(|e| Error::io(cache, e))?;
    runtime()?.block_on(async {
        let mut client = client(remote)?;
        let sets = list(&mut client, remote).await?;
        let Some(info) = sets.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::Fetch(format!(
                "{} serves no set {name:?}; it serves: {}",
                remote.address,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && Path::new(name).file_name().is_some_and(|f| f == name);
        if !plain {
            return Err(Error::Fetch(format!(
                "{} lists a set named {name:?}, which is not a plain directory name",
                remote.address
            )));
        }
        let origin = PathBuf::from(format!("{}/{name}/{MANIFEST_NAME}", remote.address));
        let manifest = Manifest::parse(&info.manifest_json, &origin)?;
        let key = format!(
            "{name}-{:08x}",
            crc32fast::hash(info.manifest_json.as_bytes())
        );
        let total: u64 = manifest.tables.iter().map(|t| t.size).sum();
        let mut report = FetchReport {
            set: name.to_string(),
            dir: cache.join(&key),
            files: manifest.tables.len(),
            bytes: total,
            downloaded: 0,
            resumed: 0,
            already_present: false,
            proven: false,
            proof_seconds: 0.0,
            seconds: 0.0,
        };
        let from = format!("set {name} from {}", remote.address);

        // A complete, intact copy is used as it is, without taking the lock: a read-only
        // cache serves what it has.
        if report.dir.exists()
            && cached_copy(&report.dir, &info.manifest_json).is_ok()
            && (!options.prove || is_proven(cache, &key))
        {
            report.already_present = true;
            report.proven = is_proven(cache, &key);
            progress(Progress {
                bytes: total,
                total,
            });
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }

        let partial = cache.join(PARTIAL_DIR);
        create_dir(&partial)?;
        // One fetch of a set at a time (another process may be fetching it).
        let lock_path = partial.join(format!("{key}.lock"));
        let lock = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        if lock.try_lock().is_err() {
            tracing::info!("another fetch of {name} is running; waiting for it");
            lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        }

        if report.dir.exists() {
            let dir = report.dir.clone();
            let checked = cached_copy(&dir, &info.manifest_json).and_then(|()| {
                if options.prove && !is_proven(cache, &key) {
                    // Kept unproven by an earlier fetch: proven now, in place.
                    report.proof_seconds = prove_set(&dir, &manifest, &from)?;
                    mark_proven(cache, &key)?;
                }
                Ok(())
            });
            match checked {
                Ok(()) => {
                    report.already_present = true;
                    report.proven = is_proven(cache, &key);
                    progress(Progress {
                        bytes: total,
                        total,
                    });
                    report.seconds = started.elapsed().as_secs_f64();
                    return Ok(report);
                }
                Err(e) => {
                    tracing::warn!("the cached copy of {name} is damaged ({e}); fetching it again");
                    let aside = partial.join(format!("{key}.damaged-{}", std::process::id()));
                    std::fs::rename(&report.dir, &aside).map_err(|e| Error::io(&report.dir, e))?;
                    std::fs::remove_dir_all(&aside).map_err(|e| Error::io(&aside, e))?;
                }
            }
        }

        let staging = partial.join(&key);
        create_dir(&staging)?;
        let mut done = 0u64;
        for entry in &manifest.tables {
            let got = download_file(&mut client, remote, name, entry, &staging, &mut |bytes| {
                progress(Progress {
                    bytes: done + bytes,
                    total,
                });
            })
            .await?;
            report.downloaded += got.downloaded;
            report.resumed += got.resumed;
            done += entry.size;
        }

        // Every byte is here: check the set as a whole before anyone can open it.
        let manifest_path = staging.join(MANIFEST_NAME);
        write_synced(&manifest_path, info.manifest_json.as_bytes())?;
        if let Err(e) = TableSet::open(&staging) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(Error::Fetch(format!(
                "{from} failed its check and was deleted: {e}"
            )));
        }
        if options.prove {
            match prove_set(&staging, &manifest, &from) {
                Ok(seconds) => report.proof_seconds = seconds,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&staging);
                    return Err(e);
                }
            }
            report.proven = true;
        }
        sync_dir(&staging)?;
        // A set kept unproven over an earlier mark of the same key: the mark goes first.
        let _ = std::fs::remove_file(cache.join(PROVEN_DIR).join(&key));
        std::fs::rename(&staging, &report.dir).map_err(|e| Error::io(&report.dir, e))?;
        sync_dir(cache)?;
        if report.proven {
            mark_proven(cache, &key)?;
        }
        drop(lock); // the lock file stays: removing it could let two fetches hold "the" lock
        report.seconds = started.elapsed().as_secs_f64();
        tracing::info!(
            set = name,
            dir = %report.dir.display(),
            downloaded = report.downloaded,
            resumed = report.resumed,
            proven = report.proven,
            "fetched"
        );
        Ok(report)
    })
}

/// Proves every table of the set in `dir` ([`tilepdb_proof::verify_deep`]); the seconds it
/// took. The error names the first table that fails and says the set is not kept.
fn prove_set(dir: &Path, manifest: &Manifest, from: &str) -> Result<f64> {
    let started = Instant::now();
    for entry in &manifest.tables {
        let path = dir.join(&entry.file);
        let pdb = Pdb::open(&path)?;
        if let Err(e) = tilepdb_proof::verify_deep(&pdb) {
            return Err(Error::Fetch(format!(
                "{from}: {} failed its proof, so the set was deleted, not kept (its entries are \
                 not the exact distances of their abstraction, whatever its checksums say): {e}",
                entry.file
            )));
        }
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Whether the set of `key` in `cache` is marked proven.
fn is_proven(cache: &Path, key: &str) -> bool {
    cache.join(PROVEN_DIR).join(key).is_file()
}

/// Marks the set of `key` in `cache` proven.
fn mark_proven(cache: &Path, key: &str) -> Result<()> {
    let dir = cache.join(PROVEN_DIR);
    create_dir(&dir)?;
    write_synced(&dir.join(key), b"proven\n")
}

/// Checks a cached set: its manifest is the server's, byte for byte, and it opens.
fn cached_copy(dir: &Path, manifest_json: &str) -> Result<()> {
    let path = dir.join(MANIFEST_NAME);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    if text != manifest_json {
        return Err(Error::Fetch(format!(
            "{} differs from the server's manifest",
            path.display()
        )));
    }
    TableSet::open(dir)?;
    Ok(())
}

struct FileFetch {
    downloaded: u64,
    resumed: u64,
}

/// Downloads `entry` into `staging/<file>` (through `<file>.part`), resuming from what a
/// `.part` file holds. `progress` gets the bytes of this file present so far.
async fn download_file(
    client: &mut Client,
    remote: &Endpoint,
    set: &str,
    entry: &ManifestEntry,
    staging: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<FileFetch> {
    let complete = staging.join(&entry.file);
    if std::fs::metadata(&complete).is_ok_and(|m| m.len() == entry.size) {
        progress(entry.size);
        return Ok(FileFetch {
            downloaded: 0,
            resumed: entry.size,
        });
    }
    let part = staging.join(format!("{}.part", entry.file));
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&part)
        .map_err(|e| Error::io(&part, e))?;
    let mut offset = file.metadata().map_err(|e| Error::io(&part, e))?.len();
    if offset > entry.size {
        tracing::warn!(
            "{} is longer than the file; starting it again",
            part.display()
        );
        file.set_len(0).map_err(|e| Error::io(&part, e))?;
        offset = 0;
    }
    let resumed = offset;
    if resumed > 0 {
        tracing::info!(file = %entry.file, "resuming at byte {resumed} of {}", entry.size);
    }
    progress(offset);
    let interrupted = |offset: u64, why: String| {
        Error::Fetch(format!(
            "the download of {} was interrupted at byte {offset} of {} ({why}); run the same \
             fetch again to resume",
            entry.file, entry.size
        ))
    };
    if offset < entry.size {
        let request = DownloadRequest {
            set: set.to_string(),
            file: entry.file.clone(),
            offset,
            checksum: entry.checksum.clone(),
        };
        let mut stream = download_retrying(client, request)
            .await
            .map_err(|s| remote_error(remote, &format!("downloading {}", entry.file), s))?
            .into_inner();
        while offset < entry.size {
            let chunk = match tokio::time::timeout(CHUNK_TIMEOUT, stream.message()).await {
                Err(_) => return Err(interrupted(offset, "no data for 60 s".into())),
                Ok(Err(status)) => return Err(interrupted(offset, status.message().to_string())),
                Ok(Ok(None)) => return Err(interrupted(offset, "the stream ended early".into())),
                Ok(Ok(Some(chunk))) => chunk,
            };
            let bytes = decode_chunk(
                &chunk,
                Section::TableFile,
                offset,
                entry.size,
                MAX_CHUNK_BYTES,
            )?;
            file.write_all(&bytes).map_err(|e| Error::io(&part, e))?;
            offset += bytes.len() as u64;
            progress(offset);
        }
    }
    file.sync_all().map_err(|e| Error::io(&part, e))?;
    drop(file);
    std::fs::rename(&part, &complete).map_err(|e| Error::io(&complete, e))?;
    Ok(FileFetch {
        downloaded: entry.size - resumed,
        resumed,
    })
}

/// Opens a download, trying again with exponential backoff (100 ms to 5 s, for
/// [`REFUSED_RETRY_FOR`] in all) while the server refuses it for now.
async fn download_retrying(
    client: &mut Client,
    request: DownloadRequest,
) -> std::result::Result<tonic::Response<tonic::Streaming<Chunk>>, tonic::Status> {
    let started = Instant::now();
    let mut delay = Duration::from_millis(100);
    loop {
        match client.download(request.clone()).await {
            Err(status)
                if status.code() == tonic::Code::ResourceExhausted
                    && started.elapsed() + delay < REFUSED_RETRY_FOR =>
            {
                tracing::info!(
                    file = %request.file,
                    retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "download refused for now: {}",
                    status.message()
                );
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.sync_all().map_err(|e| Error::io(path, e))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}
