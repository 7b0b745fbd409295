//! Whether a job fits before anything of it is created: the memory of each table's build
//! (the same check as a single-machine build's) and the disk of the data directory (the
//! largest table's arrays, less the arrays already there) and of the output directory (the
//! table files).

use std::path::{Path, PathBuf};

use tilepdb_common::StateCodes;
use tilepdb_common::table::header::HEADER_LEN;

use super::job::Job;
use crate::build::human_bytes;
use crate::error::{Error, Result};

impl Job {
    /// Refuses, with the figures, a job whose tables do not fit in `memory_limit` bytes
    /// (`None`: no limit) or whose files do not fit on the disks of its data and output
    /// directories. Creates nothing.
    pub fn check_room(&self, memory_limit: Option<u64>) -> Result<()> {
        let encoding = self.config.spec.encoding;
        for space in &self.spaces {
            crate::engine::build_memory::check_build_memory(space, Some(encoding), memory_limit)?;
        }
        let data = &self.config.data_dir;
        let arrays = self
            .spaces
            .iter()
            .zip(&self.indexes)
            .map(|(space, index)| {
                StateCodes::file_bytes(index.states(space))
                    .saturating_add(index.depth_entries(space))
            })
            .max()
            .unwrap_or(0);
        // A resumed job's arrays are allocated already.
        let present = existing_arrays(data);
        let data_needed = arrays.saturating_sub(present);
        let tables: u64 = self
            .spaces
            .iter()
            .map(|s| (HEADER_LEN as u64).saturating_add(encoding.payload_len(s.entries())))
            .fold(0, u64::saturating_add);
        let out = self.config.spec.dir(&self.config.out);
        let same_disk = device(&existing_ancestor(data)) == device(&existing_ancestor(&out));
        if same_disk {
            check_disk(
                data,
                data_needed.saturating_add(tables),
                "the largest table's arrays and the table files",
            )
        } else {
            check_disk(
                data,
                data_needed,
                "the largest table's two-bit array and depths",
            )?;
            check_disk(&out, tables, "the table files")
        }
    }
}

/// Bytes of the arrays files already in the data directory `dir`.
fn existing_arrays(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("table-") && (name.ends_with(".codes") || name.ends_with(".depths"))
        })
        .filter_map(|e| e.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .fold(0, u64::saturating_add)
}

/// `path` or its nearest existing ancestor (`.` for a relative path with none).
fn existing_ancestor(path: &Path) -> PathBuf {
    let mut p = path;
    loop {
        if p.exists() {
            return p.to_path_buf();
        }
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => return PathBuf::from("."),
        }
    }
}

/// The device of `path`, if known.
fn device(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| m.dev())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Bytes an unprivileged writer may still write on the file system of `path`, if known.
#[allow(
    clippy::useless_conversion,
    reason = "the fields' types are u64 on Linux, other types elsewhere"
)]
fn free_bytes(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: an all-zero statvfs is a valid value to be overwritten.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: statvfs reads the C string and writes the struct given, nothing else.
        if unsafe { libc::statvfs(c.as_ptr(), &raw mut st) } != 0 {
            return None;
        }
        Some(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Refuses when the file system of `path` has less than `needed` bytes free.
fn check_disk(path: &Path, needed: u64, what: &str) -> Result<()> {
    let at = existing_ancestor(path);
    match free_bytes(&at) {
        Some(free) if free < needed => Err(Error::NoRoom {
            path: at,
            free: human_bytes(free),
            needed: human_bytes(needed),
            what: what.to_string(),
        }),
        _ => Ok(()),
    }
}
