//! zstd frames made and read with one compression and one decompression context per thread:
//! a context's tables cost more to allocate and clear than a list of a few hundred KiB costs
//! to code, and each allocation above the allocator's mmap threshold is a mapping of its own
//! ([`crate::allocator`]), whose pages are faulted in and zeroed anew each time.
//!
//! The bytes are those of [`zstd::bulk::compress`] at the same level.
//!
//! ```
//! use tilepdb_common::wire::zstd_frames::{compress, decompress, decompress_into};
//! let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 13) as u8).collect();
//! let frame = compress(&bytes, 1).unwrap();
//! assert_eq!(frame, zstd::bulk::compress(&bytes, 1).unwrap());
//! assert_eq!(decompress(&frame, bytes.len()).unwrap(), bytes);
//! // No room for more than the declared size: a larger frame fails.
//! assert!(decompress(&frame, bytes.len() - 1).is_err());
//! // A buffer kept from frame to frame.
//! let mut out = Vec::new();
//! decompress_into(&frame, bytes.len(), &mut out).unwrap();
//! assert_eq!(out, bytes);
//! assert!(decompress_into(&frame, 10, &mut out).is_err());
//! ```

use std::cell::RefCell;
use std::io;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// `data` as one zstd frame of compression `level`, made with this thread's context.
pub fn compress(data: &[u8], level: i32) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        let compressor = match c.as_mut() {
            Some(compressor) => {
                compressor.set_compression_level(level)?;
                compressor
            }
            None => c.insert(zstd::bulk::Compressor::new(level)?),
        };
        compressor.compress(data)
    })
}

/// The bytes of the zstd frame `frame`, of at most `capacity` bytes (a frame that holds more
/// fails instead of allocating), read with this thread's context.
pub fn decompress(frame: &[u8], capacity: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    decompress_into(frame, capacity, &mut out)?;
    Ok(out)
}

/// [`decompress`] into `out`, whose old bytes are dropped and whose buffer is kept: a caller
/// that keeps `out` from frame to frame allocates once.
pub fn decompress_into(frame: &[u8], capacity: usize, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    out.reserve_exact(capacity);
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        let decompressor = match d.as_mut() {
            Some(decompressor) => decompressor,
            None => d.insert(zstd::bulk::Decompressor::new()?),
        };
        decompressor.decompress_to_buffer(frame, out)
    })?;
    // A buffer kept from a larger frame has room beyond `capacity`.
    if out.len() > capacity {
        out.clear();
        return Err(io::Error::other(format!(
            "the frame holds more than {capacity} bytes"
        )));
    }
    Ok(())
}
