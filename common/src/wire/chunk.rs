//! Sections of bytes on the wire: cut into zstd chunks, each with a CRC-32 and its declared
//! decompressed size, and put back together with every field checked.
//!
//! A receiver never trusts a size from the wire: a section's total size is known (or bounded)
//! before its chunks arrive, each chunk's declared size must be at most
//! [`MAX_CHUNK_BYTES`](super::MAX_CHUNK_BYTES) and fit the section, and the decoder is given
//! exactly that much room, so a "zstd bomb" fails instead of allocating.
//!
//! ```
//! use tilepdb_common::wire::chunk::{SectionReader, encode_section};
//! use tilepdb_common::wire::proto::Section;
//! let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 7) as u8).collect();
//! let chunks = encode_section(Section::ReachedStates, &bytes, 1 << 20, 1);
//! assert_eq!(chunks.len(), 3);
//! let mut reader = SectionReader::new(Section::ReachedStates, bytes.len() as u64, 1 << 20);
//! for c in &chunks {
//!     reader.push(c).unwrap();
//! }
//! assert_eq!(reader.finish().unwrap(), bytes);
//! ```

use super::proto::{Chunk, Section};
use super::zstd_frames;
use crate::error::{Error, Result};

/// Cuts `bytes` into chunks of at most `max_chunk` decompressed bytes, each a zstd frame of
/// compression `level`. An empty section has no chunks.
pub fn encode_section(section: Section, bytes: &[u8], max_chunk: u32, level: i32) -> Vec<Chunk> {
    let max_chunk = max_chunk.max(1) as usize;
    bytes
        .chunks(max_chunk)
        .enumerate()
        .map(|(i, piece)| encode_chunk(section, (i * max_chunk) as u64, piece, level))
        .collect()
}

/// One chunk: `piece`, at `offset` of its section, as a zstd frame of compression `level`.
pub fn encode_chunk(section: Section, offset: u64, piece: &[u8], level: i32) -> Chunk {
    let data = zstd_frames::compress(piece, level).expect("zstd compresses to memory");
    Chunk {
        section: section as i32,
        offset,
        decompressed_size: u32::try_from(piece.len()).expect("a piece fits a chunk"),
        crc32: crc32fast::hash(&data),
        data,
    }
}

/// Checks a chunk that must be of `section`, start at `offset`, hold at most `max_chunk`
/// bytes and end by `end`; its bytes.
///
/// ```
/// use tilepdb_common::wire::chunk::{decode_chunk, encode_chunk};
/// use tilepdb_common::wire::proto::Section;
/// let c = encode_chunk(Section::TableFile, 4096, &[7; 100], 1);
/// assert_eq!(decode_chunk(&c, Section::TableFile, 4096, 4196, 1 << 20).unwrap(), [7; 100]);
/// assert!(decode_chunk(&c, Section::TableFile, 0, 4196, 1 << 20).is_err()); // wrong offset
/// assert!(decode_chunk(&c, Section::TableFile, 4096, 4150, 1 << 20).is_err()); // past the end
/// ```
pub fn decode_chunk(
    chunk: &Chunk,
    section: Section,
    offset: u64,
    end: u64,
    max_chunk: u32,
) -> Result<Vec<u8>> {
    let name = section.as_str_name();
    if chunk.section != section as i32 {
        return Err(wire(format!(
            "chunk of section {} where {name} was expected",
            chunk.section
        )));
    }
    if chunk.offset != offset {
        return Err(wire(format!(
            "chunk of {name} at offset {} where {offset} was expected",
            chunk.offset
        )));
    }
    let size = chunk.decompressed_size;
    if size == 0 || size > max_chunk {
        return Err(wire(format!(
            "chunk of {name} declares {size} decompressed bytes; chunks hold 1 to {max_chunk}"
        )));
    }
    if offset.saturating_add(u64::from(size)) > end {
        return Err(wire(format!(
            "chunk of {name} at offset {offset} declares {size} bytes, past the end at {end}"
        )));
    }
    let crc = crc32fast::hash(&chunk.data);
    if crc != chunk.crc32 {
        return Err(wire(format!(
            "chunk of {name} at offset {offset}: CRC-32 {crc:08x} of its data, {:08x} declared",
            chunk.crc32
        )));
    }
    // Room for exactly the declared size: a frame that decompresses to more fails.
    let out = zstd_frames::decompress(&chunk.data, size as usize).map_err(|e| {
        wire(format!(
            "chunk of {name} at offset {offset}: not a zstd frame of at most {size} bytes: {e}"
        ))
    })?;
    if out.len() != size as usize {
        return Err(wire(format!(
            "chunk of {name} at offset {offset} decompresses to {} bytes, {size} declared",
            out.len()
        )));
    }
    Ok(out)
}

/// Puts a section back together from its chunks, checking each.
pub struct SectionReader {
    section: Section,
    expected: u64,
    max_chunk: u32,
    bytes: Vec<u8>,
}

impl SectionReader {
    /// A reader of `expected` bytes of `section`, from chunks of at most `max_chunk` bytes.
    /// The caller bounds `expected` before; memory grows with the chunks that arrive.
    pub fn new(section: Section, expected: u64, max_chunk: u32) -> SectionReader {
        SectionReader {
            section,
            expected,
            max_chunk,
            bytes: Vec::new(),
        }
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Whether every byte of the section has arrived.
    pub fn is_complete(&self) -> bool {
        self.received() == self.expected
    }

    /// Checks `chunk` ([`decode_chunk`]) and appends its bytes.
    pub fn push(&mut self, chunk: &Chunk) -> Result<()> {
        let out = decode_chunk(
            chunk,
            self.section,
            self.received(),
            self.expected,
            self.max_chunk,
        )?;
        // Memory follows the bytes that arrive, not the declared size: a list's bound on its
        // bytes is far above what lists take.
        self.bytes.extend_from_slice(&out);
        Ok(())
    }

    /// The section's bytes, if all arrived.
    pub fn finish(self) -> Result<Vec<u8>> {
        if !self.is_complete() {
            return Err(wire(format!(
                "section {} ended after {} of its {} bytes",
                self.section.as_str_name(),
                self.received(),
                self.expected
            )));
        }
        Ok(self.bytes)
    }
}

fn wire(message: String) -> Error {
    Error::Wire(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_chunk(bytes: &[u8]) -> Chunk {
        encode_section(Section::ReachedStates, bytes, 1 << 20, 1).remove(0)
    }

    #[test]
    fn refuses_a_bad_checksum() {
        let mut c = one_chunk(&[1, 2, 3]);
        c.crc32 ^= 1;
        let mut r = SectionReader::new(Section::ReachedStates, 3, 1 << 20);
        let e = r.push(&c).unwrap_err().to_string();
        assert!(e.contains("CRC-32"), "{e}");
    }

    #[test]
    fn refuses_a_bomb() {
        // 64 MiB of zeros compress to a few KiB; declared as 1 KiB it must fail without
        // allocating the 64 MiB.
        let zeros = vec![0u8; 64 << 20];
        let data = zstd::bulk::compress(&zeros, 1).unwrap();
        let c = Chunk {
            section: Section::ReachedStates as i32,
            offset: 0,
            decompressed_size: 1024,
            crc32: crc32fast::hash(&data),
            data,
        };
        let mut r = SectionReader::new(Section::ReachedStates, 1024, 1 << 20);
        assert!(r.push(&c).is_err());
        // Declaring the true size is refused too: over the chunk limit.
        let mut c2 = c.clone();
        c2.decompressed_size = 64 << 20;
        let mut r = SectionReader::new(Section::ReachedStates, 64 << 20, 1 << 20);
        assert!(r.push(&c2).unwrap_err().to_string().contains("declares"));
    }

    #[test]
    fn refuses_wrong_offsets_sections_and_sizes() {
        let c = one_chunk(&[1, 2, 3]);
        let mut r = SectionReader::new(Section::InputStates, 3, 1 << 20);
        assert!(r.push(&c).is_err());
        let mut r = SectionReader::new(Section::ReachedStates, 2, 1 << 20);
        assert!(r.push(&c).is_err());
        let mut c2 = c.clone();
        c2.offset = 1;
        let mut r = SectionReader::new(Section::ReachedStates, 4, 1 << 20);
        assert!(r.push(&c2).is_err());
        let mut c3 = c.clone();
        c3.decompressed_size = 2;
        let mut r = SectionReader::new(Section::ReachedStates, 3, 1 << 20);
        assert!(r.push(&c3).is_err());
        let r = SectionReader::new(Section::ReachedStates, 3, 1 << 20);
        assert!(r.finish().is_err());
    }
}
