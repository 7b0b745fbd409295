//! Downloading a finished table set from a coordinator (its table service,
//! `proto/tilepdb/v1/tables.proto`) into a local cache.
//!
//! The cache holds one directory per set and manifest, `<cache>/<set>-<key>` where `key` is
//! the CRC-32 of the set's manifest (which lists every file's checksum), so a rebuilt set
//! never mixes with an older copy. A download goes into `<cache>/.partial/<set>-<key>/`:
//! each file as `<file>.part`, appended chunk by checked chunk, so an interrupted download
//! resumes where it stopped. When every file is complete the set is opened and checked as a
//! whole ([`tilepdb_common::table::TableSet::open`]: sizes, CRC-32 of every header and
//! payload, each file against the manifest) and **proven** ([`tilepdb_proof::verify_deep`] on every file: each entry the
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

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use tilepdb_common::wire::MAX_CHUNK_BYTES;
use tilepdb_common::wire::connect::{Auth, Endpoint};
use tilepdb_common::wire::proto::tables_client::TablesClient;
use tilepdb_common::wire::proto::{ListSetsRequest, TableSetInfo};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::error::{Error, Result};
use set::{SetFetch, cached_copy, create_dir, is_proven};

mod download;
mod set;

/// How long a download refused for now (`RESOURCE_EXHAUSTED`: the server's download slots
/// are taken) is tried again, with exponential backoff, before the fetch gives up.
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
    /// The set's directory in the cache: open it with
    /// [`tilepdb_common::table::TableSet::open`].
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

/// What a call to the table service failed with: the one place a status code decides what
/// the fetch does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RemoteFailure {
    /// The server could not be reached.
    Unreachable,
    /// The server refused for now (its download slots are taken): try again later.
    Busy,
    /// The server refused (or failed) for good.
    Refused,
}

impl RemoteFailure {
    fn of(status: &tonic::Status) -> RemoteFailure {
        match status.code() {
            tonic::Code::Unavailable => RemoteFailure::Unreachable,
            tonic::Code::ResourceExhausted => RemoteFailure::Busy,
            _ => RemoteFailure::Refused,
        }
    }
}

fn remote_error(remote: &Endpoint, what: &str, status: tonic::Status) -> Error {
    if RemoteFailure::of(&status) == RemoteFailure::Unreachable {
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
        let fetch = SetFetch::new(remote, find_set(&sets, name, remote)?, cache, options)?;
        let mut report = fetch.empty_report();
        // A complete, intact copy is used as it is, without taking the lock: a read-only
        // cache serves what it has.
        if report.dir.exists()
            && cached_copy(&report.dir, &fetch.info.manifest_json).is_ok()
            && (!options.prove || is_proven(cache, &fetch.key))
        {
            return Ok(fetch.present(report, started, &mut progress));
        }
        let partial = cache.join(PARTIAL_DIR);
        create_dir(&partial)?;
        let lock = fetch.lock(&partial)?;
        if fetch.check_cached(&mut report, &partial)? {
            return Ok(fetch.present(report, started, &mut progress));
        }
        let staging = partial.join(&fetch.key);
        create_dir(&staging)?;
        fetch
            .download(&mut client, &staging, &mut report, &mut progress)
            .await?;
        fetch.install(&staging, &mut report)?;
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

/// The set `name` among the `sets` that `remote` lists, its name checked to be a plain
/// directory name.
fn find_set<'a>(
    sets: &'a [TableSetInfo],
    name: &str,
    remote: &Endpoint,
) -> Result<&'a TableSetInfo> {
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
    Ok(info)
}
