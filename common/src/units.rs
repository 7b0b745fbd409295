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

/// Most threads a program of tilepdb starts for one pool.
pub const MAX_THREADS: usize = 1024;

/// A thread count from the command line: `0` means every core, at most [`MAX_THREADS`].
///
/// ```
/// use tilepdb_common::units::parse_threads;
/// assert_eq!(parse_threads("4"), Ok(4));
/// assert_eq!(parse_threads("0"), Ok(0));
/// assert!(parse_threads("100000").unwrap_err().contains("at most 1024"));
/// assert!(parse_threads("-1").is_err());
/// ```
pub fn parse_threads(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a thread count (0 means every core)"))?;
    if n > MAX_THREADS {
        return Err(format!(
            "{n} threads is more than any machine here can use: at most {MAX_THREADS} (0 means every core)"
        ));
    }
    Ok(n)
}

/// Most random states a statistic of a set is taken over (`--random-states`): about a
/// minute of lookups.
pub const MAX_RANDOM_STATES: usize = 100_000_000;
/// Most moves of a random walk (`--walk`).
pub const MAX_WALK: usize = 100_000_000;
/// Most instances one `gen` writes (`--count`).
pub const MAX_COUNT: usize = 100_000_000;

/// A count from the command line, from 0 to `max`; `what` names it in the refusal.
///
/// ```
/// use tilepdb_common::units::parse_count;
/// assert_eq!(parse_count("12", 100, "random states"), Ok(12));
/// for bad in ["101", "-1", "NaN", "inf", "18446744073709551616", "many"] {
///     assert!(parse_count(bad, 100, "random states").is_err(), "{bad}");
/// }
/// ```
pub fn parse_count(text: &str, max: usize, what: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of {what} (a whole number from 0)"))?;
    if n > max {
        return Err(format!("{n} {what} is too many: at most {max}"));
    }
    Ok(n)
}

/// `--random-states`: a count of random states, at most [`MAX_RANDOM_STATES`].
pub fn parse_random_states(text: &str) -> Result<usize, String> {
    parse_count(text, MAX_RANDOM_STATES, "random states")
}

/// `--walk`: a number of moves, at most [`MAX_WALK`].
pub fn parse_walk(text: &str) -> Result<usize, String> {
    parse_count(text, MAX_WALK, "moves")
}

/// A number of seconds from the command line: finite, above zero, small enough for a
/// [`std::time::Duration`].
///
/// ```
/// use tilepdb_common::units::parse_seconds;
/// assert_eq!(parse_seconds("1.5").unwrap().as_millis(), 1500);
/// for bad in ["NaN", "inf", "1e300", "-1", "0", "soon"] {
///     assert!(parse_seconds(bad).is_err(), "{bad}");
/// }
/// ```
pub fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !s.is_finite() || s <= 0.0 {
        return Err(format!(
            "{text:?} is not a finite number of seconds above zero"
        ));
    }
    std::time::Duration::try_from_secs_f64(s)
        .map_err(|_| format!("{text:?} seconds is too long a time"))
}

/// A size such as `8G`, `512M` or `100` (bytes), for options that take one.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let mult: u64 = match s[i..]
                .to_ascii_uppercase()
                .trim_end_matches("IB")
                .trim_end_matches('B')
            {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                other => return Err(format!("unknown unit {other:?} in {s:?}; use K, M, G or T")),
            };
            (&s[..i], mult)
        }
        None => (s, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size such as 8G or 512M"))?;
    let bytes = n * mult as f64;
    if !(bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64) {
        return Err(format!("{s:?} is not a size such as 8G or 512M"));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked above: a finite size from 0 to below u64::MAX"
    )]
    Ok(bytes as u64)
}

/// Peak resident memory of this process (`VmHWM`), on Linux.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
