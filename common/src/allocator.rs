//! How the C allocator keeps large blocks, set once at a program's start.
//!
//! glibc's `malloc` gives a block above its mmap threshold (128 KiB at first) a mapping of its
//! own, returned to the system when the block is freed. By default it also raises that
//! threshold to the size of each such block freed, up to 32 MiB on 64-bit machines. After one
//! table's arrays are freed, the next table's blocks of up to that size then come from the
//! heap, and stay resident after they are freed: each later table of a set would hold up to
//! that much more than its memory plan says. A threshold set by the program does not move.
//!
//! ```
//! tilepdb_common::allocator::keep_large_blocks_mapped();
//! let block = vec![0u8; 1 << 20];
//! drop(block); // its own mapping, returned to the system
//! ```

/// The size from which a block gets a mapping of its own: glibc's initial threshold.
pub const MMAP_THRESHOLD_BYTES: std::ffi::c_int = 128 * 1024;

/// Gives every block of at least [`MMAP_THRESHOLD_BYTES`] a mapping of its own, returned to the
/// system when the block is freed, for the rest of the program (with glibc; elsewhere it does
/// nothing). Call it at the start of `main`, before any thread is started.
pub fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets one of the allocator's parameters; it is called before
        // the program starts threads, and any value it refuses leaves the default in place.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        }
    }
}
