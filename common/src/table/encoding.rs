//! The encodings of a table's values (DESIGN section 6).
//!
//! | encoding | stored per entry | lookup | tables |
//! |---|---|---|---|
//! | `byte` | the value h, 8 bits | one load | all |
//! | `nibble` | `(h - m) / 2` saturated at 15, 4 bits | one load + Manhattan m | all |
//! | `mod3` | `h mod 3`, five base-3 digits per byte (1.6 bits) | from the parent's value, or a descent to the goal | aware, ignored |
//! | `min-nibble:C` | least `(h - m) / 2` of each group of C entries, 4 bits per group | one load + Manhattan m | all (made for minimized and ignored) |
//! | `1-bit` | bit 1 of h, eight entries per byte | from the parent's value and m's parity, or a descent to the goal | zero-aware, aware, ignored |
//!
//! `m` is the Manhattan distance of the pattern's tiles. Every value satisfies `h >= m` with
//! `h - m` even, so `m + 2 * nibble` gives `h` back when it is below saturation, and a lower
//! bound otherwise; a group's least excess gives each member `m + 2 * least <= h`.
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! let e: Encoding = "min-nibble:4".parse().unwrap();
//! assert_eq!(e.group(), 4);
//! assert_eq!(e.units(10), 3); // three groups of at most four entries
//! assert_eq!(e.payload_len(10), 2); // two groups per byte
//! assert_eq!(Encoding::Mod3.payload_len(11), 3); // five entries per byte
//! // Nibble: a value 7 over a Manhattan distance of 3 is stored as (7 - 3) / 2 = 2.
//! assert_eq!(Encoding::Nibble.decode(2, 3), 7);
//! assert!("min-nibble:3".parse::<Encoding>().is_err()); // not a power of two
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::TableError;
use crate::space::BlankRule;

/// Largest nibble: excesses `(h - m) / 2` of 15 or more are stored as 15.
pub const NIBBLE_MAX: u8 = 15;

/// Largest group of `min-nibble`: 2^24 entries.
pub const MAX_GROUP_LOG2: u8 = 24;

/// How a table's values are stored in its payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[expect(
    clippy::unsafe_derive_deserialize,
    reason = "the unsafe is a prefetch hint that holds for any value"
)]
pub enum Encoding {
    /// One byte per entry: the value.
    #[default]
    Byte,
    /// Four bits per entry: `(h - m) / 2`, saturated at 15.
    Nibble,
    /// Five base-3 digits per byte: `h mod 3`. Aware and ignored tables only.
    Mod3,
    /// Four bits per group of `2^group_log2` consecutive entries: the group's least
    /// `(h - m) / 2`, saturated at 15. Lossy and admissible.
    MinNibble {
        /// Entries per group: `2^group_log2`.
        group_log2: u8,
    },
    /// One bit per entry, eight per byte: bit 1 of `h` (bit 0 is the parity of the Manhattan
    /// distance). Consistent tables only: zero-aware, aware and ignored.
    OneBit,
}

/// `DIGITS[b][i]` = the `i`-th base-3 digit of byte `b` (least significant first).
#[expect(clippy::cast_possible_truncation, reason = "`x % 3` is below 3")]
static DIGITS: [[u8; 5]; 256] = {
    let mut t = [[0u8; 5]; 256];
    let mut b = 0;
    while b < 256 {
        let mut x = b;
        let mut i = 0;
        while i < 5 {
            t[b][i] = (x % 3) as u8;
            x /= 3;
            i += 1;
        }
        b += 1;
    }
    t
};

/// Powers of three of the five digits of a byte.
pub const POW3: [u8; 5] = [1, 3, 9, 27, 81];

impl Encoding {
    /// `min-nibble` with groups of `group` entries (a power of two up to 2^24).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the trailing-zero count is checked at most 24 before the cast"
    )]
    pub fn min_nibble(group: u64) -> Result<Encoding, TableError> {
        if !group.is_power_of_two() || group.trailing_zeros() > u32::from(MAX_GROUP_LOG2) {
            return Err(TableError::EncodingSyntax {
                text: format!("min-nibble:{group}"),
                reason: format!(
                    "the group size must be a power of two from 1 to 2^{MAX_GROUP_LOG2}"
                ),
            });
        }
        Ok(Encoding::MinNibble {
            group_log2: group.trailing_zeros() as u8,
        })
    }

    /// Every encoding, with `min-nibble:2` for the family.
    pub const ALL: [Encoding; 5] = [
        Encoding::Byte,
        Encoding::Nibble,
        Encoding::Mod3,
        Encoding::MinNibble { group_log2: 1 },
        Encoding::OneBit,
    ];

    /// The name without its parameter: `byte`, `nibble`, `mod3`, `min-nibble`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Byte => "byte",
            Encoding::Nibble => "nibble",
            Encoding::Mod3 => "mod3",
            Encoding::MinNibble { .. } => "min-nibble",
            Encoding::OneBit => "1-bit",
        }
    }

    /// The code of the header's encoding field.
    pub fn code(self) -> u8 {
        match self {
            Encoding::Byte => 0,
            Encoding::Nibble => 1,
            Encoding::Mod3 => 2,
            Encoding::MinNibble { .. } => 3,
            Encoding::OneBit => 4,
        }
    }

    /// The header's encoding parameter: log2 of the group for `min-nibble`, else 0.
    pub fn parameter(self) -> u8 {
        match self {
            Encoding::MinNibble { group_log2 } => group_log2,
            _ => 0,
        }
    }

    /// The encoding of a header's code and parameter.
    pub fn from_code(code: u8, parameter: u8) -> Result<Encoding, String> {
        let e = match code {
            0 => Encoding::Byte,
            1 => Encoding::Nibble,
            2 => Encoding::Mod3,
            4 => Encoding::OneBit,
            3 if parameter <= MAX_GROUP_LOG2 => {
                return Ok(Encoding::MinNibble {
                    group_log2: parameter,
                });
            }
            3 => {
                return Err(format!(
                    "min-nibble group 2^{parameter} is over the largest, 2^{MAX_GROUP_LOG2}"
                ));
            }
            other => return Err(format!("unknown encoding code {other}")),
        };
        if parameter != 0 {
            return Err(format!("{e} takes no parameter, found {parameter}"));
        }
        Ok(e)
    }

    /// Entries per stored value: the group size of `min-nibble`, else 1.
    pub fn group(self) -> u64 {
        1 << self.parameter()
    }

    /// Stored values for `entries` entries: the entries, or the groups of `min-nibble`.
    pub fn units(self, entries: u64) -> u64 {
        entries.div_ceil(self.group())
    }

    /// What one stored value is called: `entries` or `groups`.
    pub fn unit_name(self) -> &'static str {
        match self {
            Encoding::MinNibble { .. } => "groups",
            _ => "entries",
        }
    }

    /// Payload bytes for `entries` entries.
    pub fn payload_len(self, entries: u64) -> u64 {
        let units = self.units(entries);
        match self {
            Encoding::Byte => units,
            Encoding::Nibble | Encoding::MinNibble { .. } => units.div_ceil(2),
            Encoding::Mod3 => units.div_ceil(5),
            Encoding::OneBit => units.div_ceil(8),
        }
    }

    /// Bits per entry (averaged over a group for `min-nibble`).
    pub fn bits_per_entry(self) -> f64 {
        match self {
            Encoding::Byte => 8.0,
            Encoding::Nibble => 4.0,
            Encoding::Mod3 => 1.6,
            Encoding::MinNibble { .. } => 4.0 / self.group() as f64,
            Encoding::OneBit => 1.0,
        }
    }

    /// Whether decoding gives back the exact values (nibble: only below saturation).
    pub fn is_exact(self) -> bool {
        matches!(self, Encoding::Byte | Encoding::Mod3 | Encoding::OneBit)
    }

    /// Whether an entry's value follows from a neighbour's (mod3, 1-bit): a search takes it
    /// from the parent's, a lone state by a descent to the goal.
    pub fn needs_parent(self) -> bool {
        matches!(self, Encoding::Mod3 | Encoding::OneBit)
    }

    /// Whether decoding needs the pattern's Manhattan distance.
    pub fn needs_manhattan(self) -> bool {
        matches!(self, Encoding::Nibble | Encoding::MinNibble { .. })
    }

    /// Refuses `mod3` for minimized tables, which are not consistent.
    pub fn check_rule(self, rule: BlankRule) -> Result<(), TableError> {
        if self == Encoding::Mod3 && !rule.is_consistent() {
            return Err(TableError::Unsupported {
                encoding: self.to_string(),
                rule,
                reason: "mod3 stores h mod 3 and recovers h from a neighbour's value, which \
                         needs a consistent table (a move changes h by at most one); minimized \
                         tables are not consistent (a blank walled into a pocket can make the \
                         least value jump by up to 7). Use mod3 with zero-aware, aware or \
                         ignored tables, or min-nibble / nibble / byte for minimized tables",
            });
        }
        if self == Encoding::OneBit && !rule.is_consistent() {
            return Err(TableError::Unsupported {
                encoding: self.to_string(),
                rule,
                reason: "1-bit stores bit 1 of h and recovers h from a neighbour's value and \
                         the parity of the Manhattan distance, which needs a consistent table \
                         (every pattern-tile move changes h by exactly one); minimized tables \
                         are not consistent (a blank walled into a pocket can make the least \
                         value jump by up to 7). Use 1-bit for zero-aware, aware or ignored \
                         tables, or min-nibble / nibble / byte for minimized ones",
            });
        }
        Ok(())
    }

    /// What the encoding costs, in words.
    pub fn cost(self) -> String {
        match self {
            Encoding::Byte => "8 bits per entry; lookup: one load; lossless".into(),
            Encoding::Nibble => "4 bits per entry; lookup: one load plus the pattern's Manhattan \
                                 distance; lossless up to 30 moves over Manhattan, a lower bound above"
                .into(),
            Encoding::Mod3 => "1.6 bits per entry; lookup: one load plus the parent's value along \
                               a search path; a lone state needs a descent of h steps to the goal; lossless"
                .into(),
            Encoding::OneBit => "1 bit per entry; lookup: one load plus the parent's value along \
                                 a search path; a lone state needs a descent of h steps to the goal; lossless"
                .into(),
            Encoding::MinNibble { .. } => format!(
                "{} bits per entry (4 per group of {}); lookup: one load plus the pattern's \
                 Manhattan distance; lossy, admissible",
                self.bits_per_entry(),
                self.group()
            ),
        }
    }

    /// The raw value stored for entry `index`: the byte, the nibble (of the entry's group for
    /// `min-nibble`) or the base-3 digit. Panics if `index` is beyond the payload.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the byte holding entry `index` is below the payload's length, a usize; `index % 5` is below 5"
    )]
    pub fn stored(self, payload: &[u8], index: u64) -> u8 {
        match self {
            Encoding::Byte => payload[index as usize],
            Encoding::Nibble => nibble(payload, index),
            Encoding::MinNibble { group_log2 } => nibble(payload, index >> group_log2),
            Encoding::Mod3 => DIGITS[payload[(index / 5) as usize] as usize][(index % 5) as usize],
            Encoding::OneBit => (payload[(index >> 3) as usize] >> (index & 7)) & 1,
        }
    }

    /// The offset in the payload of the byte that stores entry `index`.
    #[inline]
    pub fn byte_of(self, index: u64) -> u64 {
        match self {
            Encoding::Byte => index,
            Encoding::Nibble => index >> 1,
            Encoding::MinNibble { group_log2 } => index >> (group_log2 + 1),
            Encoding::Mod3 => index / 5,
            Encoding::OneBit => index >> 3,
        }
    }

    /// Asks the processor to bring the byte that stores entry `index` into the cache, so that
    /// a [`Encoding::stored`] shortly after does not wait for memory. A hint: it never faults,
    /// whatever the index, and does nothing on other targets than x86-64.
    #[inline]
    pub fn prefetch(self, payload: &[u8], index: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            #[expect(
                clippy::cast_possible_truncation,
                reason = "an entry's byte is below the payload's length, a usize (and a prefetch never faults anyway)"
            )]
            let address = payload.as_ptr().wrapping_add(self.byte_of(index) as usize);
            // SAFETY: a prefetch is a hint that never faults nor reads into the program, even
            // for an address outside the payload.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    address.cast::<i8>(),
                );
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (payload, index);
    }

    /// The value of an entry from its stored value and Manhattan distance `m` (byte, nibble,
    /// min-nibble; for mod3 see [`super::mod3`]).
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the value is capped at 254 before the cast"
    )]
    pub fn decode(self, stored: u8, m: u32) -> u8 {
        match self {
            Encoding::Nibble | Encoding::MinNibble { .. } => {
                (m + 2 * u32::from(stored)).min(u32::from(super::UNREACHED) - 1) as u8
            }
            Encoding::Byte | Encoding::Mod3 | Encoding::OneBit => stored,
        }
    }

    /// The nibble that stores `value` over Manhattan distance `m`: `(value - m) / 2`, at most 15.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the excess is capped at 15 before the cast"
    )]
    pub fn excess(value: u8, m: u32) -> u8 {
        (u32::from(value).saturating_sub(m) / 2).min(u32::from(NIBBLE_MAX)) as u8
    }
}

/// The `i`-th nibble of `payload`: the low half of byte `i / 2` for even `i`, the high half
/// for odd `i`.
#[inline]
pub fn nibble(payload: &[u8], i: u64) -> u8 {
    (payload[(i >> 1) as usize] >> ((i & 1) * 4)) & 0x0f
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Encoding::MinNibble { .. } => write!(f, "min-nibble:{}", self.group()),
            e => f.write_str(e.name()),
        }
    }
}

impl FromStr for Encoding {
    type Err = TableError;

    /// `byte`, `nibble`, `mod3`, `min-nibble:C` (C a power of two; `min-nibble` alone is C = 2).
    fn from_str(s: &str) -> Result<Encoding, TableError> {
        let s = s.trim();
        let syntax = |reason: &str| TableError::EncodingSyntax {
            text: s.to_string(),
            reason: reason.to_string(),
        };
        match s {
            "byte" => Ok(Encoding::Byte),
            "nibble" => Ok(Encoding::Nibble),
            "mod3" | "mod-3" => Ok(Encoding::Mod3),
            "1-bit" => Ok(Encoding::OneBit),
            "min-nibble" => Encoding::min_nibble(2),
            _ => match s.strip_prefix("min-nibble:") {
                Some(c) => Encoding::min_nibble(c.trim().parse().map_err(|_| {
                    syntax("the group size after min-nibble: must be a number, e.g. min-nibble:2")
                })?),
                None => Err(syntax(
                    "expected byte, nibble, mod3, 1-bit or min-nibble:C (C a power of two)",
                )),
            },
        }
    }
}

impl TryFrom<String> for Encoding {
    type Error = TableError;
    fn try_from(s: String) -> Result<Encoding, TableError> {
        s.parse()
    }
}

impl From<Encoding> for String {
    fn from(e: Encoding) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for text in [
            "byte",
            "nibble",
            "mod3",
            "min-nibble:1",
            "min-nibble:2",
            "min-nibble:64",
            "1-bit",
        ] {
            let e: Encoding = text.parse().unwrap();
            assert_eq!(e.to_string(), text);
            assert_eq!(Encoding::from_code(e.code(), e.parameter()).unwrap(), e);
        }
        assert!("min-nibble:0".parse::<Encoding>().is_err());
        assert!("min-nibble:x".parse::<Encoding>().is_err());
        assert!("zstd".parse::<Encoding>().is_err());
        assert!(Encoding::from_code(0, 1).is_err());
        assert!(Encoding::from_code(5, 0).is_err());
        assert!(Encoding::from_code(4, 1).is_err());
        assert!(Encoding::from_code(3, MAX_GROUP_LOG2 + 1).is_err());
    }

    #[test]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the test's values are below 243 and its payload is 64 bytes"
    )]
    fn byte_of_is_the_byte_stored_reads() {
        let payload: Vec<u8> = (0..64u32).map(|b| (b * 37 + 11) as u8 % 243).collect();
        for e in [
            Encoding::Byte,
            Encoding::Nibble,
            Encoding::Mod3,
            Encoding::MinNibble { group_log2: 0 },
            Encoding::MinNibble { group_log2: 3 },
            Encoding::OneBit,
        ] {
            for index in 0..300 {
                let byte = e.byte_of(index) as usize;
                if byte >= payload.len() {
                    break;
                }
                // Only that byte matters to the entry.
                let mut alone = vec![0u8; payload.len()];
                alone[byte] = payload[byte];
                assert_eq!(
                    e.stored(&alone, index),
                    e.stored(&payload, index),
                    "{e} {index}"
                );
                e.prefetch(&payload, index);
            }
        }
        // A hint never faults, even far outside the payload.
        Encoding::Byte.prefetch(&payload, 1 << 40);
    }

    #[test]
    fn sizes_of_the_design() {
        // 24-puzzle, 6 tiles: 127,512,000 placements; aware has 19 blank cells each.
        assert_eq!(Encoding::Mod3.payload_len(127_512_000 * 19), 484_545_600);
        let mn2: Encoding = "min-nibble:2".parse().unwrap();
        assert_eq!(mn2.units(127_512_000), 63_756_000);
        assert_eq!(mn2.payload_len(127_512_000), 31_878_000);
    }

    #[test]
    fn digits() {
        let payload = [20u8, 242];
        let d: Vec<u8> = (0..10)
            .map(|i| Encoding::Mod3.stored(&payload, i))
            .collect();
        // 20 = 2 + 3 * 0 + 9 * 2; 242 = 2 * (1 + 3 + 9 + 27 + 81)
        assert_eq!(d, [2, 0, 2, 0, 0, 2, 2, 2, 2, 2]);
        assert_eq!(nibble(&[0xa5], 0), 5);
        assert_eq!(nibble(&[0xa5], 1), 10);
    }

    #[test]
    fn mod3_refused_for_minimized() {
        let msg = Encoding::Mod3
            .check_rule(BlankRule::Minimized)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("minimized") && msg.contains("consistent"),
            "{msg}"
        );
        assert!(Encoding::Mod3.check_rule(BlankRule::Aware).is_ok());
    }

    #[test]
    fn one_bit_refused_for_minimized() {
        let msg = Encoding::OneBit
            .check_rule(BlankRule::Minimized)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("minimized") && msg.contains("consistent") && msg.contains("1-bit"),
            "{msg}"
        );
        for rule in [BlankRule::ZeroAware, BlankRule::Aware, BlankRule::Ignored] {
            assert!(Encoding::OneBit.check_rule(rule).is_ok());
        }
        assert_eq!(Encoding::OneBit.payload_len(17), 3);
        assert_eq!(Encoding::OneBit.stored(&[0b1000_0010, 1], 1), 1);
        assert_eq!(Encoding::OneBit.stored(&[0b1000_0010, 1], 2), 0);
        assert_eq!(Encoding::OneBit.stored(&[0b1000_0010, 1], 8), 1);
    }
}
