//! The checksums of a table's array files as a layer found them, recorded in the checkpoint
//! and taken again on resume.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;
use tilepdb_common::StateCodes;

/// Which array a file holds, for `array_checksum`.
pub(super) enum ArrayKind {
    /// Two-bit state codes.
    Codes,
    /// Depth bytes (`depth + 1`, 0 unreached).
    Depths,
}

/// Bytes per checksummed piece of an array file.
const CHECKSUM_PIECE: usize = 8 << 20;

/// The checksum of an array file as the layer `depth` found it: what expanding that layer
/// changes (unseen states marked with the next layer's code, their depths recorded as
/// `depth + 1`) reads as unseen, so that a coordinator stopped in the middle of the layer
/// finds the checksum of the layer's start. CRC-32 of each 8 MiB piece (in parallel), then
/// CRC-32 of those, with the file's length.
#[expect(
    clippy::cast_possible_truncation,
    reason = "bytes of a 256-entry table and 8 MiB pieces: every value fits its type"
)]
pub(super) fn array_checksum(path: &Path, kind: &ArrayKind, depth: u32) -> std::io::Result<String> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let unseen: [u8; 256] = match kind {
        ArrayKind::Codes => {
            let next = StateCodes::code_of_depth(depth + 1);
            std::array::from_fn(|b| {
                (0..4).fold(0u8, |out, i| {
                    let code = (b as u8 >> (2 * i)) & 3;
                    out | if code == next { 0 } else { code << (2 * i) }
                })
            })
        }
        ArrayKind::Depths => {
            let next = depth + 2;
            std::array::from_fn(|b| if b as u32 == next { 0 } else { b as u8 })
        }
    };
    let pieces = len.div_ceil(CHECKSUM_PIECE as u64);
    let crcs = (0..pieces)
        .into_par_iter()
        .map(|i| {
            let start = i * CHECKSUM_PIECE as u64;
            let mut buf = vec![0u8; (len - start).min(CHECKSUM_PIECE as u64) as usize];
            file.read_exact_at(&mut buf, start)?;
            for b in &mut buf {
                *b = unseen[*b as usize];
            }
            Ok(crc32fast::hash(&buf))
        })
        .collect::<std::io::Result<Vec<u32>>>()?;
    let mut all = crc32fast::Hasher::new();
    for crc in crcs {
        all.update(&crc.to_le_bytes());
    }
    Ok(format!("{:08x}-{len}", all.finalize()))
}
