//! The header round trip, and every corrupted header refused without a panic.

use super::layout::{
    OFF_ENCODING, OFF_GOAL, OFF_HEADER_LEN, OFF_MAJOR, OFF_MAX, OFF_TILES, OFF_WIDTH,
};
use super::*;
use proptest::prelude::*;

fn sample() -> Header {
    let board: Board = "3x3".parse().unwrap();
    let pattern = Pattern::new(board, vec![1, 2]).unwrap();
    let space = StateSpace::new(board, Goal::BlankLast, pattern, BlankRule::Ignored).unwrap();
    let mut h = Header::plan(&space, "min-nibble:4".parse().unwrap()).unwrap();
    h.histogram = vec![1, 4, 10, 20, 37];
    h.max_value = 4;
    h.payload_crc32 = 0xdead_beef;
    h
}

#[test]
fn round_trip() {
    let h = sample();
    let bytes = h.to_bytes();
    assert_eq!(bytes.len(), HEADER_LEN);
    assert_eq!(Header::parse(&bytes).unwrap(), h);
    assert_eq!(h.payload_len, 9); // 72 entries, 18 groups of 4, two per byte
}

#[test]
fn every_header_bit_flip_is_caught() {
    let bytes = sample().to_bytes();
    for bit in 0..HEADER_LEN * 8 {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        assert!(Header::parse(&b).is_err(), "bit {bit}");
    }
}

#[test]
fn fields_are_checked_even_with_a_good_checksum() {
    let reseal = |mut b: Vec<u8>| {
        let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
        b
    };
    let good = sample().to_bytes();
    let cases: [(usize, u8, &str); 6] = [
        (OFF_WIDTH, 4, "entries"), // 4x3 has more placements
        (OFF_WIDTH, 9, "board"),   // 9x3 is too large
        (OFF_GOAL, 7, "goal"),
        (OFF_ENCODING, 2, "mod3"),   // mod3 takes no parameter
        (OFF_TILES + 1, 1, "twice"), // tile 1 twice
        (OFF_MAX, 3, "max value"),
    ];
    for (off, value, needle) in cases {
        let mut b = good.clone();
        b[off] = value;
        let err = Header::parse(&reseal(b)).unwrap_err().to_string();
        assert!(err.contains(needle), "{off}: {err}");
    }
    let mut b = good.clone();
    b[OFF_MAJOR] = 2;
    let err = Header::parse(&b).unwrap_err().to_string();
    assert!(err.contains("version 2.0 is not supported"), "{err}");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
        let _ = Header::validate_file(&bytes);
    }

    #[test]
    #[expect(clippy::cast_possible_truncation, reason = "the header is 4096 bytes")]
    fn arbitrary_headers_with_good_magic_and_checksum_never_panic(
        fields in proptest::collection::vec(any::<u8>(), 2136), len in 0usize..200
    ) {
        let mut b = vec![0u8; HEADER_LEN];
        b[..2136].copy_from_slice(&fields);
        b[..8].copy_from_slice(&MAGIC);
        b[OFF_MAJOR..OFF_MAJOR + 2].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
        b[OFF_HEADER_LEN..OFF_HEADER_LEN + 4].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
        b.extend(std::iter::repeat_n(0u8, len));
        let _ = Header::validate_file(&b);
    }
}
