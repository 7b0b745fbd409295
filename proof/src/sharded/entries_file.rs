//! [`EntriesFile`]: a proof shard's packed file entries kept in a file (the worker's data
//! directory) instead of memory. Written once, in the shard's entry order, a part at a time,
//! with each part's CRC-32 kept in memory; read back a part at a time into one reused buffer,
//! each part's CRC-32 checked again, so a part changed on disk is an error, never entries.
//! The file is removed when the [`EntriesFile`] is dropped.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A file of packed entries in parts of a fixed size (the last one may be shorter).
pub(super) struct EntriesFile {
    path: PathBuf,
    file: File,
    /// Bytes of a part.
    part_bytes: usize,
    /// Bytes written so far.
    len: u64,
    /// The CRC-32 of each part written.
    crcs: Vec<u32>,
    /// The part last read back.
    buffer: Vec<u8>,
}

fn failed(path: &Path, reason: String) -> Error {
    Error::EntriesFile {
        path: path.to_path_buf(),
        reason,
    }
}

impl EntriesFile {
    /// A new file at `path` (an error if one is there already) of parts of `part_bytes`
    /// bytes; `buffer_bytes` (at most a part) is the largest part it will hold in memory.
    pub(super) fn create(path: &Path, part_bytes: usize, buffer_bytes: usize) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| failed(path, format!("cannot create it: {e}")))?;
        Ok(EntriesFile {
            path: path.to_path_buf(),
            file,
            part_bytes: part_bytes.max(1),
            len: 0,
            crcs: Vec::new(),
            buffer: Vec::with_capacity(buffer_bytes.min(part_bytes)),
        })
    }

    /// Appends the next part, `bytes` (a whole part, or the last one); its CRC-32 kept.
    pub(super) fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if !self.len.is_multiple_of(self.part_bytes as u64) || bytes.len() > self.part_bytes {
            return Err(failed(
                &self.path,
                format!(
                    "a part of {} bytes appended after {} bytes, in parts of {}",
                    bytes.len(),
                    self.len,
                    self.part_bytes
                ),
            ));
        }
        self.file
            .write_all(bytes)
            .map_err(|e| failed(&self.path, format!("cannot write it: {e}")))?;
        self.crcs.push(crc32fast::hash(bytes));
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Bytes the file takes on disk.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Bytes of memory it holds (the part read back).
    pub(super) fn memory_bytes(&self) -> u64 {
        self.buffer.capacity() as u64
    }

    /// Part `part` read back into the buffer, its CRC-32 checked against the one kept when
    /// it was written.
    pub(super) fn read_part(&mut self, part: usize) -> Result<&[u8]> {
        let Some(&crc) = self.crcs.get(part) else {
            return Err(failed(
                &self.path,
                format!("part {part} of {} read", self.crcs.len()),
            ));
        };
        let start = part as u64 * self.part_bytes as u64;
        let end = (start + self.part_bytes as u64).min(self.len);
        // A part is at most `part_bytes`, a usize.
        let bytes = usize::try_from(end - start).unwrap_or(self.part_bytes);
        self.buffer.resize(bytes, 0);
        self.file
            .read_exact_at(&mut self.buffer, start)
            .map_err(|e| failed(&self.path, format!("cannot read part {part} back: {e}")))?;
        let read = crc32fast::hash(&self.buffer);
        if read != crc {
            return Err(failed(
                &self.path,
                format!(
                    "part {part} (bytes {start}..{end}) reads back with CRC-32 {read:08x}, not the {crc:08x} written: it was changed on disk"
                ),
            ));
        }
        Ok(&self.buffer)
    }
}

impl Drop for EntriesFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}
