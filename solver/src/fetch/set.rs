//! One set fetched into the cache: the copy there checked (and proven), the files
//! downloaded into the staging directory, the whole set checked and proven there and moved
//! into place in one rename.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tilepdb_common::table::manifest::MANIFEST_NAME;
use tilepdb_common::table::{Manifest, Pdb, TableSet};
use tilepdb_common::wire::connect::Endpoint;
use tilepdb_common::wire::proto::TableSetInfo;

use super::download::download_file;
use super::{Client, FetchOptions, FetchReport, PROVEN_DIR, Progress};
use crate::error::{Error, Result};

/// One set being fetched into a cache: what the server says of it, and where it goes.
pub(super) struct SetFetch<'a> {
    remote: &'a Endpoint,
    pub(super) info: &'a TableSetInfo,
    cache: &'a Path,
    options: FetchOptions,
    manifest: Manifest,
    /// The set's name and its manifest's CRC-32: its directory's name in the cache.
    pub(super) key: String,
    /// "set NAME from ADDRESS", for messages.
    from: String,
}

impl<'a> SetFetch<'a> {
    pub(super) fn new(
        remote: &'a Endpoint,
        info: &'a TableSetInfo,
        cache: &'a Path,
        options: FetchOptions,
    ) -> Result<SetFetch<'a>> {
        let name = &info.name;
        let origin = PathBuf::from(format!("{}/{name}/{MANIFEST_NAME}", remote.address));
        let manifest = Manifest::parse(&info.manifest_json, &origin)?;
        let key = format!(
            "{name}-{:08x}",
            crc32fast::hash(info.manifest_json.as_bytes())
        );
        Ok(SetFetch {
            remote,
            info,
            cache,
            options,
            manifest,
            key,
            from: format!("set {name} from {}", remote.address),
        })
    }

    /// The bytes of the set's files.
    fn total(&self) -> u64 {
        self.manifest.tables.iter().map(|t| t.size).sum()
    }

    /// The report of a fetch that has done nothing yet.
    pub(super) fn empty_report(&self) -> FetchReport {
        FetchReport {
            set: self.info.name.clone(),
            dir: self.cache.join(&self.key),
            files: self.manifest.tables.len(),
            bytes: self.total(),
            downloaded: 0,
            resumed: 0,
            already_present: false,
            proven: false,
            proof_seconds: 0.0,
            seconds: 0.0,
        }
    }

    /// `report` of a set found in the cache, intact: every byte present.
    pub(super) fn present(
        &self,
        mut report: FetchReport,
        started: Instant,
        progress: &mut impl FnMut(Progress),
    ) -> FetchReport {
        report.already_present = true;
        report.proven = is_proven(self.cache, &self.key);
        let total = self.total();
        progress(Progress {
            bytes: total,
            total,
        });
        report.seconds = started.elapsed().as_secs_f64();
        report
    }

    /// Takes the lock of this set's fetch in `partial` (another process may be fetching it).
    pub(super) fn lock(&self, partial: &Path) -> Result<File> {
        let lock_path = partial.join(format!("{}.lock", self.key));
        let lock = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        if lock.try_lock().is_err() {
            tracing::info!(
                "another fetch of {} is running; waiting for it",
                self.info.name
            );
            lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        }
        Ok(lock)
    }

    /// Under the lock: whether the cache holds the set, intact (and proven now, in place, if
    /// an earlier fetch kept it unproven and this one proves). A damaged copy is removed.
    pub(super) fn check_cached(&self, report: &mut FetchReport, partial: &Path) -> Result<bool> {
        if !report.dir.exists() {
            return Ok(false);
        }
        let dir = report.dir.clone();
        let checked = cached_copy(&dir, &self.info.manifest_json).and_then(|()| {
            if self.options.prove && !is_proven(self.cache, &self.key) {
                report.proof_seconds = prove_set(&dir, &self.manifest, &self.from)?;
                mark_proven(self.cache, &self.key)?;
            }
            Ok(())
        });
        match checked {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::warn!(
                    "the cached copy of {} is damaged ({e}); fetching it again",
                    self.info.name
                );
                let aside = partial.join(format!("{}.damaged-{}", self.key, std::process::id()));
                std::fs::rename(&dir, &aside).map_err(|e| Error::io(&dir, e))?;
                std::fs::remove_dir_all(&aside).map_err(|e| Error::io(&aside, e))?;
                Ok(false)
            }
        }
    }

    /// Downloads every file of the set into `staging`, resuming what is there.
    pub(super) async fn download(
        &self,
        client: &mut Client,
        staging: &Path,
        report: &mut FetchReport,
        progress: &mut impl FnMut(Progress),
    ) -> Result<()> {
        let total = self.total();
        let mut done = 0u64;
        for entry in &self.manifest.tables {
            let got = download_file(
                client,
                self.remote,
                &self.info.name,
                entry,
                staging,
                &mut |bytes| {
                    progress(Progress {
                        bytes: done + bytes,
                        total,
                    });
                },
            )
            .await?;
            report.downloaded += got.downloaded;
            report.resumed += got.resumed;
            done += entry.size;
        }
        Ok(())
    }

    /// Every byte is in `staging`: the set checked as a whole and proven before anyone can
    /// open it (deleted if it fails), then moved into place and marked proven.
    pub(super) fn install(&self, staging: &Path, report: &mut FetchReport) -> Result<()> {
        let manifest_path = staging.join(MANIFEST_NAME);
        write_synced(&manifest_path, self.info.manifest_json.as_bytes())?;
        if let Err(e) = TableSet::open(staging) {
            let _ = std::fs::remove_dir_all(staging);
            return Err(Error::Fetch(format!(
                "{} failed its check and was deleted: {e}",
                self.from
            )));
        }
        if self.options.prove {
            match prove_set(staging, &self.manifest, &self.from) {
                Ok(seconds) => report.proof_seconds = seconds,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(staging);
                    return Err(e);
                }
            }
            report.proven = true;
        }
        sync_dir(staging)?;
        // A set kept unproven over an earlier mark of the same key: the mark goes first.
        let _ = std::fs::remove_file(self.cache.join(PROVEN_DIR).join(&self.key));
        std::fs::rename(staging, &report.dir).map_err(|e| Error::io(&report.dir, e))?;
        sync_dir(self.cache)?;
        if report.proven {
            mark_proven(self.cache, &self.key)?;
        }
        Ok(())
    }
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
pub(super) fn is_proven(cache: &Path, key: &str) -> bool {
    cache.join(PROVEN_DIR).join(key).is_file()
}

/// Marks the set of `key` in `cache` proven.
fn mark_proven(cache: &Path, key: &str) -> Result<()> {
    let dir = cache.join(PROVEN_DIR);
    create_dir(&dir)?;
    write_synced(&dir.join(key), b"proven\n")
}

/// Checks a cached set: its manifest is the server's, byte for byte, and it opens.
pub(super) fn cached_copy(dir: &Path, manifest_json: &str) -> Result<()> {
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

pub(super) fn create_dir(dir: &Path) -> Result<()> {
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
