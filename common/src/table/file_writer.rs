//! A table file written in parts, in file order, holding one part in memory at a time: for a
//! table whose values are never whole in one place (a sharded build reads them from its
//! shards range by range).
//!
//! The file is byte for byte the one [`EncodedTable`](super::EncodedTable) writes from the
//! whole table: the header has a fixed length, so it is written last, over a placeholder,
//! once the payload's CRC-32 and the counts are known. Until [`TableFileWriter::finish`] the
//! file is a hidden temporary one, removed if the writer is dropped.
//!
//! ```
//! use tilepdb_common::table::file_writer::TableFileWriter;
//! use tilepdb_common::table::walk::manhattan_by_rank;
//! use tilepdb_common::table::{DepthCode, EncodedTable, Encoding, Pdb};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "4x4".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
//! let values = manhattan_by_rank(&space); // 240 entries
//! let dir = std::env::temp_dir().join(format!("tilepdb-file-writer-doc-{}", std::process::id()));
//! let path = dir.join("pattern-1-2.pdb");
//! let mut writer = TableFileWriter::create(&path, &space, Encoding::Byte, DepthCode::Byte).unwrap();
//! // Every part but the last: a multiple of 40 entries for a byte table.
//! let first = TableFileWriter::part_multiple(Encoding::Byte);
//! assert_eq!(first, 40);
//! writer.append(&space, &values[..40], first).unwrap();
//! writer.append(&space, &values[40..], 200).unwrap();
//! let header = writer.finish(&space, None).unwrap();
//! let whole = EncodedTable::new(&space, Encoding::Byte, &values).unwrap();
//! assert_eq!(header, whole.header);
//! assert_eq!(Pdb::open(&path).unwrap().header(), &whole.header);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::space::StateSpace;

use super::UNREACHED;
use super::encoding::Encoding;
use super::error::TableError;
use super::header::{HEADER_LEN, HISTOGRAM_SLOTS, Header};
use super::values::DepthCode;
use super::write::{
    fill_counts, pack_mod3, pack_mod3_codes, pack_nibbles, pack_one_bit, publish, temp_path,
};

/// Bytes the writer buffers: the header and small parts; a part at least this large goes to
/// the file without a copy.
pub const WRITE_BUFFER_BYTES: usize = 64 << 10;

/// A table file being written in parts.
pub struct TableFileWriter {
    path: PathBuf,
    temp: PathBuf,
    file: Option<BufWriter<File>>,
    header: Header,
    code: DepthCode,
    /// The next entry to append.
    next: u64,
    /// Entries of each value (byte parts only).
    counts: Vec<u64>,
    crc: crc32fast::Hasher,
    written: u64,
}

impl TableFileWriter {
    /// Starts the table file of `space` in `encoding` at `path`, whose parts will hold
    /// `code`: a byte per entry ([`DepthCode::Byte`], [`UNREACHED`] for entries never
    /// reached), or the packed codes of the encoding's own depth code.
    pub fn create(
        path: &Path,
        space: &StateSpace,
        encoding: Encoding,
        code: DepthCode,
    ) -> Result<TableFileWriter, TableError> {
        let header = Header::plan(space, encoding)?;
        if code != DepthCode::Byte && code.encoding() != Some(encoding) {
            return Err(TableError::PackedEncoding {
                kept: code.name(),
                encoding: encoding.to_string(),
            });
        }
        let temp = temp_path(path)?;
        let mut file = BufWriter::with_capacity(
            WRITE_BUFFER_BYTES,
            File::create(&temp).map_err(|e| TableError::io(&temp, e))?,
        );
        file.write_all(&[0u8; HEADER_LEN])
            .map_err(|e| TableError::io(&temp, e))?;
        Ok(TableFileWriter {
            path: path.to_path_buf(),
            temp,
            file: Some(file),
            header,
            code,
            next: 0,
            counts: vec![0; 256],
            crc: crc32fast::Hasher::new(),
            written: 0,
        })
    }

    /// Every part but the last holds a multiple of this many entries (whole bytes of every
    /// encoding's payload and of every packed code).
    pub fn part_multiple(encoding: Encoding) -> u64 {
        5 * 8u64.max(2 << encoding.parameter().min(32))
    }

    /// Appends the next `entries` entries, whose values in the writer's code are `values`.
    /// Refuses a part of the wrong length, one past the table's end, and a part after one
    /// that was not a multiple of [`TableFileWriter::part_multiple`].
    pub fn append(
        &mut self,
        space: &StateSpace,
        values: &[u8],
        entries: u64,
    ) -> Result<(), TableError> {
        let encoding = self.header.encoding;
        let multiple = Self::part_multiple(encoding);
        if !self.next.is_multiple_of(multiple) {
            return Err(TableError::Value {
                value: 0,
                reason: format!(
                    "a part after entry {}, which is not a multiple of {multiple}: only the \
                     last part may end there",
                    self.next
                ),
            });
        }
        if values.len() as u64 != self.code.bytes_for(entries)
            || self.next + entries > self.header.entries
        {
            return Err(TableError::ValueCount {
                values: self.next + entries,
                entries: self.header.entries,
            });
        }
        // Values already in the payload's form are written as they are, not copied.
        let payload: Cow<'_, [u8]> = match self.code {
            DepthCode::Byte => {
                for &v in values {
                    self.counts[usize::from(v)] += 1;
                }
                match encoding {
                    Encoding::Byte => Cow::Borrowed(values),
                    Encoding::Mod3 => Cow::Owned(pack_mod3(values)),
                    Encoding::OneBit => Cow::Owned(pack_one_bit(values)),
                    Encoding::Nibble | Encoding::MinNibble { .. } => {
                        Cow::Owned(pack_nibbles(space, encoding, self.next, values)?)
                    }
                }
            }
            DepthCode::OneBit => Cow::Borrowed(values),
            DepthCode::Mod3 => Cow::Owned(pack_mod3_codes(values, entries)),
        };
        self.crc.update(&payload);
        self.written += payload.len() as u64;
        self.next += entries;
        let file = self.file.as_mut().expect("open until finished");
        file.write_all(&payload)
            .map_err(|e| TableError::io(&self.temp, e))
    }

    /// Writes the header and publishes the file under its name (synced, renamed); the header.
    /// `packed`: for packed codes, the counts they cannot give (reached entries by value, and
    /// unreached ones); byte parts are counted as they come. Refuses a table not appended in
    /// full and the counts [`EncodedTable`](super::EncodedTable) refuses.
    pub fn finish(
        mut self,
        space: &StateSpace,
        packed: Option<(&[u64], u64)>,
    ) -> Result<Header, TableError> {
        let entries = self.header.entries;
        if self.next != entries || self.written != self.header.payload_len {
            return Err(TableError::ValueCount {
                values: self.next,
                entries,
            });
        }
        let mut header = self.header.clone();
        match (self.code, packed) {
            (DepthCode::Byte, _) => fill_counts(
                space,
                &mut header,
                &self.counts[..HISTOGRAM_SLOTS],
                self.counts[usize::from(UNREACHED)],
            )?,
            (_, Some((histogram, unreached))) => {
                let counted = histogram.iter().sum::<u64>() + unreached;
                if counted != entries {
                    return Err(TableError::ValueCount {
                        values: counted,
                        entries,
                    });
                }
                fill_counts(space, &mut header, histogram, unreached)?;
            }
            (_, None) => {
                return Err(TableError::Value {
                    value: 0,
                    reason: "packed codes were written without their counts".into(),
                });
            }
        }
        header.payload_crc32 = self.crc.clone().finalize();
        let temp = self.temp.clone();
        let mut file = self.file.take().expect("open until finished");
        let result = (|| -> std::io::Result<()> {
            file.flush()?;
            let mut file = file
                .into_inner()
                .map_err(std::io::IntoInnerError::into_error)?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&header.to_bytes())?;
            file.sync_all()?;
            drop(file);
            publish(&temp, &self.path)
        })();
        result.map_err(|e| TableError::io(&self.path, e))?;
        self.temp = PathBuf::new();
        Ok(header)
    }
}

impl Drop for TableFileWriter {
    /// A table not finished leaves no file.
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::EncodedTable;
    use crate::table::values::{PackedValues, ValuesRef};
    use crate::{BlankRule, Board, Goal, Pattern};

    fn space_of(rule: BlankRule) -> StateSpace {
        let board: Board = "3x3".parse().unwrap();
        let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
        StateSpace::new(board, Goal::BlankFirst, pattern, rule).unwrap()
    }

    /// Plausible values: Manhattan plus an even excess that varies, some entries unreached
    /// where the pattern allows it (it never does here).
    fn values(space: &StateSpace) -> Vec<u8> {
        let mut v = vec![0u8; usize::try_from(space.entries()).unwrap()];
        crate::table::walk::for_each_entry(space, |e, _, m| {
            v[usize::try_from(e).unwrap()] = u8::try_from(m + 2 * (e % 3) as u32).unwrap();
        });
        v
    }

    fn read(path: &Path) -> Vec<u8> {
        std::fs::read(path).unwrap()
    }

    /// Writes `values` in parts of `part` entries (the last shorter) as `encoding`.
    fn written_in_parts(
        space: &StateSpace,
        encoding: Encoding,
        code: DepthCode,
        parts: &[u8],
        part: u64,
        packed: Option<(&[u64], u64)>,
        path: &Path,
    ) -> Result<Header, TableError> {
        let mut w = TableFileWriter::create(path, space, encoding, code)?;
        let entries = space.entries();
        let mut at = 0;
        while at < entries {
            let n = part.min(entries - at);
            let first = usize::try_from(code.bytes_for(at)).unwrap();
            let len = usize::try_from(code.bytes_for(n)).unwrap();
            w.append(space, &parts[first..first + len], n)?;
            at += n;
        }
        w.finish(space, packed)
    }

    #[test]
    fn every_encoding_in_parts_is_the_whole_tables_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut tried = 0;
        for rule in [
            BlankRule::Ignored,
            BlankRule::Aware,
            BlankRule::ZeroAware,
            BlankRule::Minimized,
        ] {
            let space = space_of(rule);
            let values = values(&space);
            for encoding in [
                Encoding::Byte,
                Encoding::Nibble,
                Encoding::MinNibble { group_log2: 2 },
                Encoding::Mod3,
                Encoding::OneBit,
            ] {
                let Ok(whole) = EncodedTable::new(&space, encoding, &values) else {
                    continue;
                };
                tried += 1;
                let expected = dir.path().join("whole.pdb");
                whole.write(&expected).unwrap();
                let m = TableFileWriter::part_multiple(encoding);
                for part in [m, 3 * m, space.entries()] {
                    let path = dir.path().join(format!("{rule:?}-{encoding}-{part}.pdb"));
                    let header = written_in_parts(
                        &space,
                        encoding,
                        DepthCode::Byte,
                        &values,
                        part,
                        None,
                        &path,
                    )
                    .unwrap();
                    assert_eq!(
                        header, whole.header,
                        "{rule:?} {encoding} in parts of {part}"
                    );
                    assert_eq!(
                        read(&path),
                        read(&expected),
                        "{rule:?} {encoding} in parts of {part}"
                    );
                }
            }
        }
        // Mod3 is refused for minimized tables, and the nibbles for zero-aware ones.
        assert!(
            tried >= 14,
            "only {tried} pairs of rule and encoding were written"
        );
    }

    #[test]
    fn packed_codes_in_parts_are_the_whole_tables_file() {
        let dir = tempfile::tempdir().unwrap();
        let space = space_of(BlankRule::ZeroAware);
        let values = values(&space);
        for (code, encoding) in [
            (DepthCode::OneBit, Encoding::OneBit),
            (DepthCode::Mod3, Encoding::Mod3),
        ] {
            let mut data = vec![0u8; usize::try_from(code.bytes_for(space.entries())).unwrap()];
            let mut histogram = vec![0u64; 64];
            for (e, &v) in values.iter().enumerate() {
                code.put(&mut data, e as u64, code.code(u32::from(v)));
                histogram[usize::from(v)] += 1;
            }
            let packed = PackedValues {
                code,
                data: data.clone(),
                entries: space.entries(),
                histogram: histogram.clone(),
                unreached: 0,
            };
            let whole =
                EncodedTable::from_values(&space, encoding, ValuesRef::Packed(&packed)).unwrap();
            let expected = dir.path().join("whole.pdb");
            whole.write(&expected).unwrap();
            let path = dir.path().join(format!("{encoding}.pdb"));
            let m = TableFileWriter::part_multiple(encoding);
            let header = written_in_parts(
                &space,
                encoding,
                code,
                &data,
                m,
                Some((&histogram, 0)),
                &path,
            )
            .unwrap();
            assert_eq!(header, whole.header);
            assert_eq!(read(&path), read(&expected));
        }
    }

    #[test]
    fn bad_parts_are_refused_and_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let space = space_of(BlankRule::Minimized);
        let values = values(&space);
        let path = dir.path().join("t.pdb");
        // A part of the wrong length.
        let mut w =
            TableFileWriter::create(&path, &space, Encoding::Byte, DepthCode::Byte).unwrap();
        assert!(w.append(&space, &values[..10], 11).is_err());
        // A short part in the middle.
        assert!(w.append(&space, &values[..10], 10).is_ok());
        assert!(w.append(&space, &values[10..20], 10).is_err());
        drop(w);
        // Not every entry appended.
        let mut w =
            TableFileWriter::create(&path, &space, Encoding::Byte, DepthCode::Byte).unwrap();
        w.append(&space, &values[..40], 40).unwrap();
        assert!(matches!(
            w.finish(&space, None),
            Err(TableError::ValueCount { .. })
        ));
        // Past the end.
        let mut w =
            TableFileWriter::create(&path, &space, Encoding::Byte, DepthCode::Byte).unwrap();
        let mut longer = values.clone();
        longer.extend([1; 40]);
        assert!(w.append(&space, &longer, space.entries() + 40).is_err());
        drop(w);
        // A value below its Manhattan distance in a nibble table.
        let mut low = values.clone();
        let goal = usize::try_from(space.goal_rank()).unwrap() ^ 1;
        low[goal] = 0;
        let e = written_in_parts(
            &space,
            Encoding::Nibble,
            DepthCode::Byte,
            &low,
            40,
            None,
            &path,
        );
        assert!(matches!(e, Err(TableError::Value { .. })), "{e:?}");
        // Packed codes whose counts do not add up.
        let data = vec![
            0u8;
            usize::try_from(
                DepthCode::OneBit.bytes_for(space_of(BlankRule::ZeroAware).entries())
            )
            .unwrap()
        ];
        let za = space_of(BlankRule::ZeroAware);
        let e = written_in_parts(
            &za,
            Encoding::OneBit,
            DepthCode::OneBit,
            &data,
            40,
            Some((&[1, 2], 0)),
            &path,
        );
        assert!(matches!(e, Err(TableError::ValueCount { .. })), "{e:?}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no file is left"
        );
    }
}
