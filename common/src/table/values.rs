//! A finished table's values as a build hands them to the encoder: one byte per entry, or only
//! what the table's encoding stores of each value ([`PackedValues`], the contents of a compact
//! depth store).
//!
//! A search that will write a `1-bit` or `mod3` table does not need the whole depth of each
//! entry: it keeps bit 1 of the depth (one bit per entry, which is the `1-bit` payload itself)
//! or `d mod 3 + 1` (two bits per entry, packed five per byte when written). Each code is
//! written once per entry, into a zeroed store, so a store written by many threads needs only
//! an atomic OR. The histogram of such a table cannot be read back from the codes; the search
//! counts it layer by layer and hands it over with them.
//!
//! ```
//! use tilepdb_common::table::values::DepthCode;
//! let mut store = vec![0u8; DepthCode::OneBit.bytes_for(10) as usize];
//! for (entry, depth) in [(0u64, 0u32), (1, 1), (2, 2), (3, 3), (9, 6)] {
//!     DepthCode::OneBit.put(&mut store, entry, DepthCode::OneBit.code(depth));
//! }
//! assert_eq!(store, vec![0b0000_1100, 0b10]); // bit 1 of 2, 3 and 6
//! assert_eq!(DepthCode::Mod3.code(7), 2); // 7 mod 3 + 1
//! assert_eq!(DepthCode::Mod3.bytes_for(10), 3); // four codes per byte
//! ```

use super::encoding::Encoding;
use crate::space::BlankRule;

/// What a depth store keeps of each entry's depth `d`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DepthCode {
    /// `d + 1` in a byte (0: not reached yet); what every table can be encoded from.
    #[default]
    Byte,
    /// `d mod 3 + 1` in two bits, four entries per byte (0: not reached): what `mod3` stores.
    Mod3,
    /// Bit 1 of `d`, eight entries per byte (entry `8i + j` is bit `j` of byte `i`; an entry
    /// never reached keeps 0): the `1-bit` payload.
    OneBit,
}

impl DepthCode {
    /// What a search of a `rule` table written in `encoding` needs to keep: the packed code of
    /// `1-bit` and `mod3` for the consistent rules, a byte otherwise (the byte and nibble
    /// encodings, and every minimized table, whose placements keep their first depth).
    pub fn for_encoding(encoding: Encoding, rule: BlankRule) -> DepthCode {
        match encoding {
            _ if !rule.is_consistent() => DepthCode::Byte,
            Encoding::OneBit => DepthCode::OneBit,
            Encoding::Mod3 => DepthCode::Mod3,
            _ => DepthCode::Byte,
        }
    }

    /// Bits per entry.
    pub fn bits(self) -> u64 {
        match self {
            DepthCode::Byte => 8,
            DepthCode::Mod3 => 2,
            DepthCode::OneBit => 1,
        }
    }

    /// Entries per byte.
    #[inline]
    fn per_byte(self) -> u64 {
        8 / self.bits()
    }

    /// Bytes of a store of `entries` entries.
    pub fn bytes_for(self, entries: u64) -> u64 {
        entries.div_ceil(self.per_byte())
    }

    /// The code stored for depth `depth`.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the layer loop refuses depths above 253, so a byte table's `depth + 1` fits in a byte; the other codes are a remainder below 3 or one bit"
    )]
    pub fn code(self, depth: u32) -> u8 {
        match self {
            DepthCode::Byte => depth as u8 + 1,
            DepthCode::Mod3 => (depth % 3) as u8 + 1,
            DepthCode::OneBit => ((depth >> 1) & 1) as u8,
        }
    }

    /// The byte of a store that holds `entry`, and the shift of its code in that byte.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an entry's byte is below the length of a payload held in memory, so it fits in usize; a shift is below 8"
    )]
    pub fn position(self, entry: u64) -> (usize, u32) {
        match self {
            DepthCode::Byte => (entry as usize, 0),
            DepthCode::Mod3 => ((entry >> 2) as usize, 2 * (entry & 3) as u32),
            DepthCode::OneBit => ((entry >> 3) as usize, (entry & 7) as u32),
        }
    }

    /// The mask of one code (before its shift).
    #[inline]
    pub fn mask(self) -> u8 {
        match self {
            DepthCode::Byte => 0xff,
            DepthCode::Mod3 => 3,
            DepthCode::OneBit => 1,
        }
    }

    /// The code of `entry` in `store`.
    #[inline]
    pub fn get(self, store: &[u8], entry: u64) -> u8 {
        let (byte, shift) = self.position(entry);
        (store[byte] >> shift) & self.mask()
    }

    /// ORs `code` into the (zero) code of `entry` in `store`.
    #[inline]
    pub fn put(self, store: &mut [u8], entry: u64, code: u8) {
        let (byte, shift) = self.position(entry);
        store[byte] |= code << shift;
    }

    /// ORs the `n` codes of the entries `from..from + n` of a store, whose byte `i` is
    /// `byte(i)`, into the entries `to..to + n` of the store `dst` (zero there): eight bits a
    /// step, whatever the two runs' places in their bytes.
    ///
    /// ```
    /// use tilepdb_common::table::DepthCode;
    ///
    /// let code = DepthCode::OneBit;
    /// let src = [0b1011_0110u8, 0b0000_0001];
    /// let mut dst = [0u8; 2];
    /// // Entries 1..10 of `src` (bits 1 to 9) to entries 5..14 of `dst`.
    /// code.copy_codes(|i| src[i], 1, &mut dst, 5, 9);
    /// for e in 0..9 {
    ///     assert_eq!(code.get(&dst, 5 + e), code.get(&src, 1 + e));
    /// }
    /// assert_eq!(dst[0] & 0b1_1111, 0);
    /// ```
    #[expect(
        clippy::cast_possible_truncation,
        reason = "byte positions of stores held in memory fit in usize; a step's bits are \
                  masked to at most 8 and shifted by less than 8, so they fit in 16"
    )]
    pub fn copy_codes(
        self,
        byte: impl Fn(usize) -> u8,
        from: u64,
        dst: &mut [u8],
        to: u64,
        n: u64,
    ) {
        let bits = self.bits();
        let (mut s, mut d, end) = (from * bits, to * bits, (from + n) * bits);
        while s < end {
            let take = (end - s).min(8) as u32;
            let (at, shift) = ((s >> 3) as usize, (s & 7) as u32);
            let mut v = u16::from(byte(at)) >> shift;
            if shift + take > 8 {
                v |= u16::from(byte(at + 1)) << (8 - shift);
            }
            let v = (v & ((1 << take) - 1)) << (d & 7);
            let at = (d >> 3) as usize;
            dst[at] |= v as u8;
            if v >> 8 != 0 {
                dst[at + 1] |= (v >> 8) as u8;
            }
            s += u64::from(take);
            d += u64::from(take);
        }
    }

    /// The encoding whose payload this code packs (`None` for a byte).
    pub fn encoding(self) -> Option<Encoding> {
        match self {
            DepthCode::Byte => None,
            DepthCode::Mod3 => Some(Encoding::Mod3),
            DepthCode::OneBit => Some(Encoding::OneBit),
        }
    }

    /// The name used in messages: `byte`, `mod3` or `1-bit`.
    pub fn name(self) -> &'static str {
        match self {
            DepthCode::Byte => "byte",
            DepthCode::Mod3 => "mod3",
            DepthCode::OneBit => "1-bit",
        }
    }
}

/// The codes of a table's entries in entry order ([`DepthCode::Mod3`] or
/// [`DepthCode::OneBit`]), with the histogram the search counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedValues {
    /// What `data` holds of each value.
    pub code: DepthCode,
    /// The codes, [`DepthCode::bytes_for`] `entries` bytes.
    pub data: Vec<u8>,
    /// Entries of the table.
    pub entries: u64,
    /// `histogram[v]` = entries of value `v` (reached entries only).
    pub histogram: Vec<u64>,
    /// Entries never reached.
    pub unreached: u64,
}

/// A finished table's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableValues {
    /// One byte per entry: the value, [`super::UNREACHED`] for entries never reached.
    Bytes(Vec<u8>),
    /// Only what one encoding stores of each value.
    Packed(PackedValues),
}

impl TableValues {
    /// The values, one byte per entry, when the table has them.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            TableValues::Bytes(v) => Some(v),
            TableValues::Packed(_) => None,
        }
    }

    /// The byte per entry, when the table has them.
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            TableValues::Bytes(v) => Some(v),
            TableValues::Packed(_) => None,
        }
    }

    /// Entries of the table.
    pub fn entries(&self) -> u64 {
        match self {
            TableValues::Bytes(v) => v.len() as u64,
            TableValues::Packed(p) => p.entries,
        }
    }

    /// Bytes of memory the values hold.
    pub fn memory_bytes(&self) -> u64 {
        match self {
            TableValues::Bytes(v) => v.len() as u64,
            TableValues::Packed(p) => p.data.len() as u64,
        }
    }

    /// What is kept of each value.
    pub fn code(&self) -> DepthCode {
        match self {
            TableValues::Bytes(_) => DepthCode::Byte,
            TableValues::Packed(p) => p.code,
        }
    }
}

/// Values to encode, borrowed: a byte per entry or packed codes.
#[derive(Clone, Copy, Debug)]
pub enum ValuesRef<'a> {
    /// One byte per entry.
    Bytes(&'a [u8]),
    /// Packed codes with their histogram.
    Packed(&'a PackedValues),
}

impl<'a> From<&'a [u8]> for ValuesRef<'a> {
    fn from(v: &'a [u8]) -> Self {
        ValuesRef::Bytes(v)
    }
}

impl<'a> From<&'a Vec<u8>> for ValuesRef<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        ValuesRef::Bytes(v)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for ValuesRef<'a> {
    fn from(v: &'a [u8; N]) -> Self {
        ValuesRef::Bytes(v)
    }
}

impl<'a> From<&'a TableValues> for ValuesRef<'a> {
    fn from(v: &'a TableValues) -> Self {
        match v {
            TableValues::Bytes(b) => ValuesRef::Bytes(b),
            TableValues::Packed(p) => ValuesRef::Packed(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::cast_possible_truncation, reason = "a test's store is small")]
    fn codes_round_trip_at_every_position() {
        for code in [DepthCode::Byte, DepthCode::Mod3, DepthCode::OneBit] {
            let depths: Vec<u32> = (0..37).map(|e| (e * 7 + 3) % 40).collect();
            let mut store = vec![0u8; code.bytes_for(depths.len() as u64) as usize];
            for (e, &d) in depths.iter().enumerate() {
                code.put(&mut store, e as u64, code.code(d));
            }
            for (e, &d) in depths.iter().enumerate() {
                assert_eq!(code.get(&store, e as u64), code.code(d), "{code:?} {e}");
            }
        }
    }

    /// Runs copied at every pair of places in their bytes and of every length up to three
    /// words: each code where `put` one by one would put it, nothing around it touched.
    #[test]
    #[expect(clippy::cast_possible_truncation, reason = "a test's store is small")]
    fn copied_runs_are_the_codes_put_one_by_one() {
        for code in [DepthCode::Byte, DepthCode::Mod3, DepthCode::OneBit] {
            let entries = 230u64;
            let mut src = vec![0u8; code.bytes_for(entries) as usize];
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for e in 0..entries {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                code.put(&mut src, e, (x as u8) & code.mask());
            }
            for from in 0..17 {
                for to in 0..17 {
                    for n in 0..=200 {
                        let mut dst = vec![0u8; code.bytes_for(to + n + 9) as usize];
                        code.copy_codes(|i| src[i], from, &mut dst, to, n);
                        let mut expected = vec![0u8; dst.len()];
                        for e in 0..n {
                            code.put(&mut expected, to + e, code.get(&src, from + e));
                        }
                        assert_eq!(dst, expected, "{code:?} {from} {to} {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn what_each_encoding_keeps() {
        use BlankRule::*;
        assert_eq!(
            DepthCode::for_encoding(Encoding::OneBit, ZeroAware),
            DepthCode::OneBit
        );
        assert_eq!(
            DepthCode::for_encoding(Encoding::Mod3, Aware),
            DepthCode::Mod3
        );
        assert_eq!(
            DepthCode::for_encoding(Encoding::Mod3, Minimized),
            DepthCode::Byte
        );
        assert_eq!(
            DepthCode::for_encoding(Encoding::Nibble, Ignored),
            DepthCode::Byte
        );
        assert_eq!(
            DepthCode::for_encoding(Encoding::Byte, ZeroAware),
            DepthCode::Byte
        );
    }
}
