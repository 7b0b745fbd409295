//! Figures for people: sizes in binary units.

/// `bytes` in B, KiB, MiB, GiB or TiB with one decimal.
///
/// ```
/// use tilepdb_common::human_bytes;
/// assert_eq!(human_bytes(1000), "1000 B");
/// assert_eq!(human_bytes(181_440 * 2), "354.4 KiB"); // a 3x3 table of two-byte entries
/// assert_eq!(human_bytes(3 << 30), "3.0 GiB");
/// ```
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
