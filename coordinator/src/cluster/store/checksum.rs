//! The checksums of a table's array files as a layer found them, recorded in the checkpoint
//! and taken again on resume.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;
use tilepdb_common::StateCodes;
use tilepdb_common::layer::DONE;

/// Which array a file holds, for `array_checksum`.
pub(super) enum ArrayKind {
    /// Two-bit state codes.
    Codes,
    /// Two-bit state codes as the layer's finishing pass leaves them at any point: its
    /// current states read as done too, since the pass retires them.
    FinishedCodes,
    /// Depth bytes (`depth + 1`, 0 unreached).
    Depths,
}

/// Bytes per checksummed piece of an array file.
const CHECKSUM_PIECE: usize = 8 << 20;

/// The checksums of an array file as the layer `depth` found it, one for each of `kinds`,
/// from one read of the file: what expanding that layer changes (unseen states marked with
/// the next layer's code, their depths recorded as `depth + 1`) reads as unseen, so that a
/// coordinator stopped in the middle of the layer finds the checksum of the layer's start.
/// With [`ArrayKind::FinishedCodes`] the layer's current states also read as done, so that a
/// coordinator stopped while finishing the layer finds that checksum too. Each is the CRC-32
/// of each 8 MiB piece (in parallel), then CRC-32 of those, with the file's length.
#[expect(
    clippy::cast_possible_truncation,
    reason = "8 MiB pieces: every length fits a usize"
)]
pub(super) fn array_checksums<const N: usize>(
    path: &Path,
    kinds: [ArrayKind; N],
    depth: u32,
) -> std::io::Result<[String; N]> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let readings = kinds.map(|k| reading(&k, depth));
    let pieces = len.div_ceil(CHECKSUM_PIECE as u64);
    let crcs = (0..pieces)
        .into_par_iter()
        .map(|i| {
            let start = i * CHECKSUM_PIECE as u64;
            let mut buf = vec![0u8; (len - start).min(CHECKSUM_PIECE as u64) as usize];
            file.read_exact_at(&mut buf, start)?;
            let mut read = vec![0u8; buf.len()];
            Ok(readings.map(|r| {
                for (out, &b) in read.iter_mut().zip(&buf) {
                    *out = r[usize::from(b)];
                }
                crc32fast::hash(&read)
            }))
        })
        .collect::<std::io::Result<Vec<[u32; N]>>>()?;
    Ok(std::array::from_fn(|k| {
        let mut all = crc32fast::Hasher::new();
        for piece in &crcs {
            all.update(&piece[k].to_le_bytes());
        }
        format!("{:08x}-{len}", all.finalize())
    }))
}

/// How a byte of an array file of `kind` reads for the layer `depth`'s checksum.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the index of a 256-entry table fits a byte"
)]
fn reading(kind: &ArrayKind, depth: u32) -> [u8; 256] {
    match kind {
        ArrayKind::Codes | ArrayKind::FinishedCodes => {
            let next = StateCodes::code_of_depth(depth + 1);
            let current = match kind {
                ArrayKind::FinishedCodes => Some(StateCodes::code_of_depth(depth)),
                _ => None,
            };
            std::array::from_fn(|b| {
                (0..4).fold(0u8, |out, i| {
                    let code = (b as u8 >> (2 * i)) & 3;
                    let read = if code == next {
                        0
                    } else if Some(code) == current {
                        DONE
                    } else {
                        code
                    };
                    out | read << (2 * i)
                })
            })
        }
        ArrayKind::Depths => {
            let next = depth + 2;
            std::array::from_fn(|b| if b as u32 == next { 0 } else { b as u8 })
        }
    }
}
