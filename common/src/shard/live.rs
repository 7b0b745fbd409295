//! Which blocks of a shard hold states of each live code ([`LiveBlocks`]).

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use crate::atomic_array::AtomicArray;

/// A flag per block and live code (1 and 2, the codes of the two layers in flight): raised
/// when a state of the block takes the code, lowered when the block's states of that code
/// are retired. A raised flag may stand for a block without such states (never the other
/// way), so a scan of a layer's states need look only at its raised blocks. Safe to raise
/// from many threads.
///
/// ```
/// use tilepdb_common::shard::LiveBlocks;
/// let live = LiveBlocks::new(10);
/// live.raise(2, 7);
/// assert!(live.is_raised(2, 7) && !live.is_raised(1, 7) && !live.is_raised(2, 6));
/// assert!(live.lower(2, 7));
/// assert!(!live.is_raised(2, 7) && !live.lower(2, 7));
/// ```
pub struct LiveBlocks {
    /// Bit `code - 1` of block `b`'s byte.
    flags: AtomicArray<AtomicU8>,
}

impl LiveBlocks {
    /// Flags of `blocks` blocks, all lowered.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a flag per block is held in memory, so the blocks' count fits in usize"
    )]
    pub fn new(blocks: u64) -> LiveBlocks {
        LiveBlocks {
            flags: AtomicArray::zeroed(blocks as usize),
        }
    }

    /// Bytes of memory the flags hold (one a block).
    pub fn bytes_for(blocks: u64) -> u64 {
        blocks
    }

    /// Bytes of memory the flags hold.
    pub fn bytes(&self) -> u64 {
        Self::bytes_for(self.flags.len() as u64)
    }

    #[inline(always)]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a block number is below the flags' length, a usize"
    )]
    fn flag(&self, block: u64) -> &AtomicU8 {
        &self.flags.as_slice()[block as usize]
    }

    /// The bit of live code `code` (1 or 2).
    #[inline(always)]
    fn bit(code: u8) -> u8 {
        debug_assert!(code == 1 || code == 2);
        code
    }

    /// Raises the flag of `code` for `block` (written only when it is down, so that threads
    /// meeting states of one block do not take its cache line from each other).
    #[inline]
    pub fn raise(&self, code: u8, block: u64) {
        let (flag, bit) = (self.flag(block), Self::bit(code));
        if flag.load(Relaxed) & bit == 0 {
            flag.fetch_or(bit, Relaxed);
        }
    }

    /// Whether the flag of `code` for `block` is raised.
    #[inline]
    pub fn is_raised(&self, code: u8, block: u64) -> bool {
        self.flag(block).load(Relaxed) & Self::bit(code) != 0
    }

    /// Lowers the flag of `code` for `block`; whether it was raised.
    #[inline]
    pub fn lower(&self, code: u8, block: u64) -> bool {
        let (flag, bit) = (self.flag(block), Self::bit(code));
        flag.load(Relaxed) & bit != 0 && flag.fetch_and(!bit, Relaxed) & bit != 0
    }
}
