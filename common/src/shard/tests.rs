//! The shard's expansion, merge and layers against a whole-table search.

use super::*;
use crate::{Board, Goal, Pattern};

/// Shard `p` of `shards` of the 3x4 puzzle's tiles {1,2,3} under `rule`, nothing searched.
fn shard_of(rule: BlankRule, p: u32, shards: u32) -> Shard {
    let board: Board = "3x4".parse().unwrap();
    let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, rule).unwrap();
    let index = space.region_index().unwrap();
    let moves = Arc::new(OrderMoves::new(index.k()));
    let layout = ShardLayout::new(index.orders(), shards).unwrap();
    Shard::new(&space, index, moves, layout, p, DepthCode::Byte).unwrap()
}

/// Shard 1 of 2 of the 3x4 puzzle's tiles {1,2,3} under `rule`, nothing searched.
fn second_of_two(rule: BlankRule) -> Shard {
    shard_of(rule, 1, 2)
}

fn layer(shard: &Shard, depth: u32) -> Vec<u64> {
    let mut states = Vec::new();
    shard.for_each_state_of_layer(0..shard.index.sets(), depth, |s| states.push(s));
    states
}

/// States merged in any order and any cut are the states merged sorted at once; a list
/// with one foreign state is refused whole.
#[test]
fn received_states_merge_in_any_order() {
    for rule in [
        BlankRule::ZeroAware,
        BlankRule::Minimized,
        BlankRule::Aware,
        BlankRule::Ignored,
    ] {
        let (sorted, shuffled) = (second_of_two(rule), second_of_two(rule));
        let own: Vec<u64> = (0..sorted.index_states())
            .filter(|&s| sorted.owns(s))
            .step_by(5)
            .collect();
        assert!(own.len() > 100);
        sorted.merge_received(&own, 1).unwrap();
        let mut reversed = own.clone();
        reversed.reverse();
        for piece in reversed.chunks(37) {
            shuffled.merge_received(piece, 1).unwrap();
        }
        assert_eq!(layer(&sorted, 1), layer(&shuffled, 1), "{rule}");
        let merged = layer(&sorted, 1);
        assert!(merged.len() >= own.len() - 1, "{rule}");
        sorted.finish_layer(0..sorted.index.sets(), 0);
        shuffled.finish_layer(0..shuffled.index.sets(), 0);
        let entries = 0..sorted.space.entries();
        assert_eq!(
            sorted.own_codes(entries.clone()),
            shuffled.own_codes(entries),
            "{rule}"
        );

        let fresh = second_of_two(rule);
        let foreign = (0..fresh.index_states()).find(|&s| !fresh.owns(s)).unwrap();
        for list in [
            vec![own[0], own[1], foreign],
            vec![foreign, own[0]],
            vec![own[0], fresh.index_states()],
        ] {
            assert!(fresh.merge_received(&list, 1).is_err(), "{rule} {list:?}");
        }
        assert!(layer(&fresh, 1).is_empty(), "{rule}");
    }
}

/// A layer's blocks hold its states, block by block, and its states are those blocks'.
#[test]
fn a_layers_blocks_hold_its_states() {
    for rule in [BlankRule::ZeroAware, BlankRule::Ignored] {
        let shard = second_of_two(rule);
        let own: Vec<u64> = (0..shard.index_states())
            .filter(|&s| shard.owns(s))
            .step_by(3)
            .collect();
        shard.merge_received(&own, 1).unwrap();
        let f = shard.index.orders();
        let sets = shard.index.sets();
        let mut blocks = Vec::new();
        for range in [0..sets / 2, sets / 2..sets] {
            shard.for_each_block_of_layer(range, 1, |block, orders| {
                assert!(!orders.is_empty());
                blocks.extend(orders.iter().map(|o| block * f + o));
            });
        }
        // Every state merged was unseen: the layer is exactly the list merged.
        assert_eq!(blocks, own, "{rule}");
        assert_eq!(layer(&shard, 1), own, "{rule}");
    }
}

/// Whether every block holding a state of `code` has its flag raised for `code`.
fn flags_cover(shard: &Shard, code: u8) -> bool {
    let width = shard.own.end - shard.own.start;
    let blocks = shard.index_states() / shard.index.orders();
    (0..blocks).all(|block| {
        let local = block * width..(block + 1) * width;
        shard.live.is_raised(code, block) || shard.codes.count_with_code(local, code) == 0
    })
}

/// Through a whole search on three shards, every block holding states of a live code has
/// that code's flag raised, and a layer's finish lowers the flags of the codes it retires;
/// the layers end with every state reached.
#[test]
fn live_flags_cover_every_block_of_a_live_code() {
    for rule in [
        BlankRule::ZeroAware,
        BlankRule::Minimized,
        BlankRule::Aware,
        BlankRule::Ignored,
    ] {
        let parts: Vec<Shard> = (0..3).map(|p| shard_of(rule, p, 3)).collect();
        let index = parts[0].index.clone();
        let sets = 0..index.sets();
        let mut reached = 1;
        for depth in 0.. {
            let (current, next) = (
                StateCodes::code_of_depth(depth),
                StateCodes::code_of_depth(depth + 1),
            );
            let mut outbox = vec![Vec::new(); 3];
            for shard in &parts {
                assert!(flags_cover(shard, current), "{rule} depth {depth}");
                shard.expand_states(sets.clone(), depth, &mut |to: u32, s| {
                    outbox[to as usize].push(s);
                });
            }
            for (to, mut states) in outbox.into_iter().enumerate() {
                states.sort_unstable();
                states.dedup();
                parts[to].merge_received(&states, depth + 1).unwrap();
            }
            let mut added = 0;
            for shard in &parts {
                assert!(flags_cover(shard, next), "{rule} depth {depth}");
                added += shard.finish_layer(sets.clone(), depth).0;
                let blocks = shard.index_states() / shard.index.orders();
                assert!((0..blocks).all(|b| !shard.live.is_raised(current, b)));
                assert!(flags_cover(shard, next), "{rule} depth {depth}");
            }
            if added == 0 {
                break;
            }
            reached += added;
        }
        let states = if rule == BlankRule::Ignored {
            index.placements()
        } else {
            index.states()
        };
        // The 3x4 board's 3 tiles: every placement, with every region of the blank, is reached.
        assert_eq!(reached, states, "{rule}");
    }
}
