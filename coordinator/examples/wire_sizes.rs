//! Bytes of the wire encodings of task inputs and results, per state expanded, over a whole
//! build of one table (no network: the tasks are cut, encoded and merged in this process),
//! against the alternatives measured when the encoding was chosen.
//!
//! `cargo run --release -p tilepdb-coordinator --example wire_sizes -- 1,2,3,6,7 [task ranks]`

use tilepdb_common::layer::CodeLayer;
use tilepdb_common::wire::states::{encode_deltas, own_states};
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateCodes, StateList, StateSpace};
use tilepdb_coordinator::build::layer_tasks;
use tilepdb_coordinator::merge::{DepthBytes, LayerMerge};
use tilepdb_worker::task::run_task;

fn zstd_len(b: &[u8], level: i32) -> u64 {
    if b.is_empty() {
        return 0;
    }
    zstd::bulk::compress(b, level).unwrap().len() as u64
}

fn bitmap_bytes(states: &[u64], range: std::ops::Range<u64>) -> Vec<u8> {
    let mut words = vec![0u64; (range.end - range.start).div_ceil(64) as usize];
    for &s in states.iter().filter(|s| range.contains(s)) {
        let i = s - range.start;
        words[(i / 64) as usize] |= 1 << (i % 64);
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
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
    let task_ranks = args
        .get(2)
        .map_or(space.ranker().block_len(), |s| s.parse().unwrap());
    let codes = StateCodes::new(space.states());
    let depths = DepthBytes::new(space.entries());
    LayerMerge::new(&codes, &depths, space.rule(), space.slots(), 0)
        .reached_goal(space.goal_state());
    let tasks = layer_tasks(&space, Some(task_ranks), 1);
    let slots = space.slots();
    let names = [
        "input: state list (sent)",
        "input: bitmap of own states",
        "input: two-bit codes of own states",
        "result: state list (sent)",
        "result: own bitmap + outside list",
    ];
    let mut sums = [0u64; 5];
    let (mut expanded, mut depth) = (0u64, 0u32);
    loop {
        let code = StateCodes::code_of_depth(depth);
        let mut results = Vec::new();
        for r in &tasks {
            let own = own_states(r, slots);
            let mut input = vec![];
            codes.for_each_with_code(own.clone(), code, |s| input.push(s));
            if input.is_empty() {
                continue;
            }
            expanded += input.len() as u64;
            sums[0] += zstd_len(&encode_deltas(&input), 1);
            sums[1] += zstd_len(&bitmap_bytes(&input, own.clone()), 1);
            let mut two_bit = vec![0u8; (own.end - own.start).div_ceil(4) as usize];
            for s in own.clone() {
                let i = (s - own.start) as usize;
                two_bit[i / 4] |= codes.get(s) << (2 * (i % 4));
            }
            sums[2] += zstd_len(&two_bit, 1);
            let out = run_task(&space, r.clone(), &StateList(input));
            sums[3] += zstd_len(&encode_deltas(&out.reached), 1);
            let outside: Vec<u64> = out
                .reached
                .iter()
                .copied()
                .filter(|s| !own.contains(s))
                .collect();
            sums[4] += zstd_len(&bitmap_bytes(&out.reached, own.clone()), 1)
                + zstd_len(&encode_deltas(&outside), 1);
            results.push(out.reached);
        }
        let _ = CodeLayer {
            codes: &codes,
            depth,
        };
        let mut merge = LayerMerge::new(&codes, &depths, space.rule(), slots, depth + 1);
        for reached in &results {
            merge.merge_list(reached);
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
        "{{{}}}: {expanded} states expanded, {} layers, {} tasks a layer of {task_ranks} ranks",
        space.pattern(),
        depth + 1,
        tasks.len()
    );
    for (name, bytes) in names.iter().zip(&sums) {
        println!(
            "{name:>36}: {bytes:>10} bytes, {:.3} bytes per state expanded",
            *bytes as f64 / expanded as f64
        );
    }
}
