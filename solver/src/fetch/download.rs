//! One file of a set downloaded into the staging directory, chunk by checked chunk, resuming
//! what an interrupted download left.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use tilepdb_common::table::ManifestEntry;
use tilepdb_common::wire::MAX_CHUNK_BYTES;
use tilepdb_common::wire::chunk::decode_chunk;
use tilepdb_common::wire::connect::Endpoint;
use tilepdb_common::wire::proto::{Chunk, DownloadRequest, Section};

use super::{Client, RemoteFailure, remote_error};
use crate::error::{Error, Result};

/// How long a download refused for now (`RESOURCE_EXHAUSTED`: the server's download slots
/// are taken) is tried again, with exponential backoff, before the fetch gives up.
const REFUSED_RETRY_FOR: Duration = Duration::from_secs(120);
/// Longest wait for the next chunk of a download.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);

/// What a file's download did.
pub(super) struct FileFetch {
    /// Bytes downloaded.
    pub(super) downloaded: u64,
    /// Bytes an earlier download had left.
    pub(super) resumed: u64,
}

/// Downloads `entry` into `staging/<file>` (through `<file>.part`), resuming from what a
/// `.part` file holds. `progress` gets the bytes of this file present so far.
pub(super) async fn download_file(
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
                if RemoteFailure::of(&status) == RemoteFailure::Busy
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
