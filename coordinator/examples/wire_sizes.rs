//! Bytes of the wire encodings of task inputs and results, per state expanded, over a whole
//! build of one table (no network: the tasks are cut as the distributed coordinator cuts
//! them, encoded and merged in this process), against the alternatives measured when the
//! encoding was chosen, with the time to encode and decode each.
//!
//! `cargo run --release -p tilepdb-coordinator --example wire_sizes -- [tiles] [task ranks]`
//!
//! `tiles` defaults to 1,2,3,6,7 (the first table of the 15-puzzle 5-5-5 set); without `task
//! ranks` the layers are cut as the distributed coordinator cuts them by default (about 16
//! tasks a layer along blocks); otherwise into tasks of that many ranks.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "the encodings compared pack states into bytes and index bitmaps by u64 states"
)]

use std::ops::Range;
use std::time::{Duration, Instant};

use tilepdb_common::wire::states::{ListShape, StateEncoder, own_states, walk_states};
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateCodes, StateList, StateSpace};
use tilepdb_coordinator::engine::units::{cut_units, plan_tasks};
use tilepdb_coordinator::merge::{DepthBytes, LayerMerge};
use tilepdb_worker::ReachedSink;
use tilepdb_worker::task::run_task;

/// The bytes of `b` after zstd at `level`; adds the time it took to `time`.
fn zstd_len(b: &[u8], level: i32, time: &mut Duration) -> u64 {
    if b.is_empty() {
        return 0;
    }
    let started = Instant::now();
    let n = zstd::bulk::compress(b, level).unwrap().len() as u64;
    *time += started.elapsed();
    n
}

/// The encoding this one replaced: LEB128 varints of the differences (the first from 0).
fn deltas(states: &[u64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(states.len() * 2);
    let mut previous = 0;
    for &s in states {
        let mut d = s - previous;
        previous = s;
        while d >= 0x80 {
            bytes.push(d as u8 | 0x80);
            d >>= 7;
        }
        bytes.push(d as u8);
    }
    bytes
}

fn bitmap_bytes(states: &[u64], range: Range<u64>) -> Vec<u8> {
    let mut bytes = vec![0u8; (range.end - range.start).div_ceil(8) as usize];
    for &s in states.iter().filter(|s| range.contains(s)) {
        let i = s - range.start;
        bytes[(i / 8) as usize] |= 1 << (i % 8);
    }
    bytes
}

/// Per window of 2^16 states holding some: the window's distance from the last one (varint),
/// then a tag 0 and the window's bitmap, or a tag 1, the count and the differences,
/// whichever is shorter.
fn windows(states: &[u64]) -> Vec<u8> {
    const BITS: u32 = 16;
    let mut bytes = Vec::new();
    let (mut i, mut last) = (0, 0);
    while i < states.len() {
        let window = states[i] >> BITS;
        let j = i + states[i..].partition_point(|&s| s >> BITS == window);
        let first = window << BITS;
        bytes.extend(deltas(&[window - last]));
        last = window;
        let mut list = deltas(&[(j - i) as u64]);
        list.extend(deltas(
            &states[i..j].iter().map(|s| s - first).collect::<Vec<_>>(),
        ));
        if list.len() > 1 << (BITS - 3) {
            bytes.push(0);
            bytes.extend(bitmap_bytes(&states[i..j], first..first + (1 << BITS)));
        } else {
            bytes.push(1);
            bytes.extend(list);
        }
        i = j;
    }
    bytes
}

struct Row {
    name: &'static str,
    bytes: u64,
    time: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let board: Board = "4x4".parse().unwrap();
    let tiles: Vec<u8> = args
        .get(1)
        .map_or("1,2,3,6,7", |s| s.as_str())
        .split(',')
        .map(|t| t.parse().unwrap())
        .collect();
    let space = StateSpace::new(
        board,
        Goal::BlankFirst,
        Pattern::new(board, tiles).unwrap(),
        BlankRule::Minimized,
    )
    .unwrap();
    let task_ranks: Option<u64> = args.get(2).map(|s| s.parse().unwrap());
    let codes = StateCodes::new(space.states());
    let depths = DepthBytes::new(space.entries());
    LayerMerge::new(&codes, &depths, space.rule(), space.slots(), 0).reached(space.goal_state());
    let slots = space.slots();
    let mut rows: Vec<Row> = [
        "input: range-coded trie (sent)",
        "input: the same, then zstd 1",
        "input: varint differences, zstd 1",
        "input: bitmap of own states, zstd 1",
        "input: two-bit codes of own states, zstd 1",
        "result: range-coded trie (sent)",
        "result: the same, then zstd 1",
        "result: varint differences, zstd 1",
        "result: varint differences, zstd 3",
        "result: windows of bitmap|differences, zstd 1",
        "result: own bitmap + outside differences, zstd 1",
    ]
    .into_iter()
    .map(|name| Row {
        name,
        bytes: 0,
        time: Duration::ZERO,
    })
    .collect();
    let (mut expanded, mut reached, mut depth, mut tasks_run) = (0u64, 0u64, 0u32, 0usize);
    let mut decode_time = [Duration::ZERO; 2];
    let mut expand_time = Duration::ZERO;
    // One thread: times per state comparable with the encodings'.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    loop {
        let code = StateCodes::code_of_depth(depth);
        let count = |ranges: &[Range<u64>]| -> Vec<u64> {
            ranges
                .iter()
                .map(|r| codes.count_with_code(own_states(r, slots), code))
                .collect()
        };
        let tasks = match task_ranks {
            Some(t) => cut_units(&space, Some(t), 1),
            None => plan_tasks(&space, 16, count).0,
        };
        let (input_shape, result_shape) = (
            ListShape::new(&space, depth),
            ListShape::new(&space, depth + 1),
        );
        let mut results = Vec::new();
        for r in &tasks {
            let own = own_states(r, slots);
            let mut input = vec![];
            codes.for_each_with_code(own.clone(), code, |s| input.push(s));
            if input.is_empty() {
                continue;
            }
            tasks_run += 1;
            expanded += input.len() as u64;
            let t = &mut Duration::default();

            // The coordinator encodes as it scans the state array.
            let started = Instant::now();
            let mut encoder = StateEncoder::new(&input_shape, own.clone());
            codes.for_each_with_code(own.clone(), code, |s| encoder.push(s));
            let trie = encoder.finish().unwrap();
            rows[0].time += started.elapsed();
            rows[0].bytes += trie.len() as u64;
            let started = Instant::now();
            walk_states(&trie, input.len() as u64, &input_shape, own.clone(), |_| {}).unwrap();
            decode_time[0] += started.elapsed();
            rows[1].bytes += zstd_len(&trie, 1, &mut rows[1].time);
            rows[2].bytes += zstd_len(&deltas(&input), 1, &mut rows[2].time);
            rows[3].bytes += zstd_len(&bitmap_bytes(&input, own.clone()), 1, t);
            let mut two_bit = vec![0u8; (own.end - own.start).div_ceil(4) as usize];
            for s in own.clone() {
                let i = (s - own.start) as usize;
                two_bit[i / 4] |= codes.get(s) << (2 * (i % 4));
            }
            rows[4].bytes += zstd_len(&two_bit, 1, t);

            let started = Instant::now();
            let out = pool.install(|| run_task(&space, r.clone(), &StateList(input)));
            expand_time += started.elapsed();
            reached += out.reached.len() as u64;
            let all = 0..space.states();
            let started = Instant::now();
            let mut encoder = StateEncoder::new(&result_shape, all.clone());
            for &s in &out.reached {
                encoder.push(s);
            }
            let trie = encoder.finish().unwrap();
            rows[5].time += started.elapsed();
            rows[5].bytes += trie.len() as u64;
            let started = Instant::now();
            walk_states(&trie, out.reached.len() as u64, &result_shape, all, |_| {}).unwrap();
            decode_time[1] += started.elapsed();
            rows[6].bytes += zstd_len(&trie, 1, &mut rows[6].time);
            let list = deltas(&out.reached);
            rows[7].bytes += zstd_len(&list, 1, &mut rows[7].time);
            rows[8].bytes += zstd_len(&list, 3, &mut rows[8].time);
            rows[9].bytes += zstd_len(&windows(&out.reached), 1, t);
            let outside: Vec<u64> = out
                .reached
                .iter()
                .copied()
                .filter(|s| !own.contains(s))
                .collect();
            rows[10].bytes += zstd_len(&bitmap_bytes(&out.reached, own.clone()), 1, t)
                + zstd_len(&deltas(&outside), 1, t);
            results.push(out.reached);
        }
        let mut merge = LayerMerge::new(&codes, &depths, space.rule(), slots, depth + 1);
        for &s in results.iter().flatten() {
            merge.reached(s);
        }
        for r in &tasks {
            codes.retire(own_states(r, slots), code);
        }
        if merge.added == 0 {
            break;
        }
        depth += 1;
    }
    println!(
        "{{{}}}: {expanded} states expanded, {reached} reached, {} layers, {tasks_run} tasks \
         ({})",
        space.pattern(),
        depth + 1,
        task_ranks.map_or(
            "as the distributed coordinator cuts them".into(),
            |t| format!("of {t} ranks")
        ),
    );
    let per_state = |t: Duration| t.as_nanos() as f64 / expanded as f64;
    for row in &rows {
        let time = if row.time.is_zero() {
            String::new()
        } else {
            format!(", encoding {:.0} ns", per_state(row.time))
        };
        println!(
            "{:>48}: {:>9} bytes, {:.3} per state expanded{time}",
            row.name,
            row.bytes,
            row.bytes as f64 / expanded as f64,
        );
    }
    println!(
        "decoding the tries (checks included): input {:.0} ns, result {:.0} ns; expanding (one \
         thread) {:.0} ns; all per state expanded",
        per_state(decode_time[0]),
        per_state(decode_time[1]),
        per_state(expand_time),
    );
}
