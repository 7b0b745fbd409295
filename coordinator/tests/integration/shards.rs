//! Shards of a search (`tilepdb_common::shard`) driven in one process: P shards expand each
//! layer, hand their foreign successors to the owners, finish the layer each on its own, and
//! the file's values assembled from their parts are the single-machine build's, byte for byte.

use tilepdb_common::region_index::OrderMoves;
use tilepdb_common::shard::{OwnCodes, Shard, ShardLayout, assemble_values};
use tilepdb_common::table::{DepthCode, Encoding, TableValues};
use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};

use std::sync::Arc;

/// The values of the table of `space` searched on `shards` shards in this process.
fn sharded_values(space: &StateSpace, shards: u32, encoding: Encoding) -> Vec<u8> {
    let index = space.region_index().unwrap();
    let moves = Arc::new(OrderMoves::new(index.k()));
    let layout = ShardLayout::new(index.orders(), shards).unwrap();
    let code = BuildOptions {
        encoding: Some(encoding),
        ..BuildOptions::default()
    }
    .depth_code(space);
    let parts: Vec<Shard> = (0..shards)
        .map(|p| Shard::new(space, index.clone(), moves.clone(), layout, p, code).unwrap())
        .collect();
    let sets = 0..index.sets();
    for depth in 0.. {
        let mut outbox = vec![Vec::new(); shards as usize];
        for shard in &parts {
            shard.expand_states(sets.clone(), depth, &mut |to: u32, s| {
                outbox[to as usize].push(s);
            });
        }
        for (to, mut states) in outbox.into_iter().enumerate() {
            states.sort_unstable();
            states.dedup();
            parts[to].merge_received(&states, depth + 1).unwrap();
            // A list sent to the wrong shard is refused.
            if let Some(&s) = states.first() {
                let other = &parts[(to + 1) % parts.len()];
                assert_eq!(other.merge_received(&[s], depth + 1).is_err(), shards > 1);
            }
        }
        let added: u64 = parts
            .iter()
            .map(|shard| shard.finish_layer(sets.clone(), depth).0)
            .sum();
        if added == 0 {
            break;
        }
    }
    // Read in ranges of a whole number of bytes of every code that start and end inside
    // blocks, as the writer reads them.
    let mut values = Vec::new();
    let entries = space.entries();
    let starts = std::iter::successors(Some(0), |s| Some(s + RANGE_ENTRIES));
    for start in starts.take_while(|&s| s < entries) {
        let range = start..(start + RANGE_ENTRIES).min(entries);
        let own: Vec<OwnCodes> = parts.iter().map(|s| s.own_codes(range.clone())).collect();
        values.extend(assemble_values(space, &index, layout, code, range, &own).unwrap());
    }
    values
}

/// The blank-first state space of the first pattern of the partition named `partition` under
/// `rule`.
pub(crate) fn first_pattern_space(partition: &str, rule: BlankRule) -> StateSpace {
    let partition = Partition::named(partition).unwrap();
    StateSpace::new(
        partition.board(),
        Goal::BlankFirst,
        partition.patterns()[0].clone(),
        rule,
    )
    .unwrap()
}

/// Entries read at once in [`sharded_values`]: eight times an odd number.
const RANGE_ENTRIES: u64 = 8 * 131;

#[test]
fn values_assembled_from_parts_of_another_code_or_length_are_refused() {
    let space = first_pattern_space("8:4-4", BlankRule::ZeroAware);
    let index = space.region_index().unwrap();
    let moves = Arc::new(OrderMoves::new(index.k()));
    let layout = ShardLayout::new(index.orders(), 2).unwrap();
    let code = DepthCode::OneBit;
    let parts: Vec<Shard> = (0..2)
        .map(|p| Shard::new(&space, index.clone(), moves.clone(), layout, p, code).unwrap())
        .collect();
    let entries = 0..space.entries();
    let own: Vec<OwnCodes> = parts.iter().map(|s| s.own_codes(entries.clone())).collect();
    let assemble = |own: &[OwnCodes], code| {
        assemble_values(&space, &index, layout, code, entries.clone(), own)
            .unwrap_err()
            .to_string()
    };
    assert!(assemble_values(&space, &index, layout, code, entries.clone(), &own).is_ok());
    assert!(assemble(&own, DepthCode::Mod3).contains("1-bit codes for a mod3 store"));
    let (bytes, count) = (own[1].codes().to_vec(), own[1].count());
    let short = OwnCodes::new(code, bytes[..bytes.len() - 1].to_vec(), count - 8).unwrap();
    let msg = assemble(&[own[0].clone(), short], code);
    assert!(msg.contains("shard 1 sent too few values"), "{msg}");
    let mut longer = bytes.clone();
    longer.push(0xff);
    let long = OwnCodes::new(code, longer, count + 8).unwrap();
    let msg = assemble(&[own[0].clone(), long], code);
    assert!(msg.contains("shard 1 sent"), "{msg}");
    assert!(msg.contains("were asked for"), "{msg}");
    let msg = OwnCodes::new(code, bytes, count + 8)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("take"), "{msg}");
}

fn check_set(partition: &str, rule: BlankRule, encoding: Encoding) {
    let partition = Partition::named(partition).unwrap();
    for pattern in partition.patterns() {
        let space =
            StateSpace::new(partition.board(), Goal::BlankFirst, pattern.clone(), rule).unwrap();
        let options = BuildOptions {
            encoding: Some(encoding),
            ..BuildOptions::default()
        };
        let single = match build_table(&space, &options, &()).unwrap().values {
            TableValues::Bytes(v) => v,
            TableValues::Packed(p) => p.data,
        };
        for shards in 1..=3 {
            assert!(
                sharded_values(&space, shards, encoding) == single,
                "{pattern} {rule} {encoding} on {shards} shards"
            );
        }
    }
}

#[test]
fn shards_give_the_single_machine_values_on_small_boards() {
    for rule in [
        BlankRule::Minimized,
        BlankRule::Aware,
        BlankRule::ZeroAware,
        BlankRule::Ignored,
    ] {
        check_set("8:4-4", rule, Encoding::Byte);
    }
    check_set("8:4-4", BlankRule::ZeroAware, Encoding::OneBit);
    check_set("8:4-4", BlankRule::Aware, Encoding::Mod3);
}

#[test]
fn shards_give_the_single_machine_values_of_the_15_puzzle_5_5_5_set() {
    check_set("15:5-5-5", BlankRule::Minimized, Encoding::Byte);
    check_set("15:5-5-5", BlankRule::ZeroAware, Encoding::OneBit);
}

#[test]
fn a_layout_refuses_more_shards_than_orders() {
    assert!(ShardLayout::new(6, 7).is_err());
    assert!(ShardLayout::new(6, 0).is_err());
    let layout = ShardLayout::new(6, 4).unwrap();
    let owners: Vec<u32> = (0..6).map(|o| layout.owner(o)).collect();
    assert_eq!(owners, [0, 1, 1, 2, 3, 3]);
    for p in 0..4 {
        assert!(layout.orders_of(p).all(|o| layout.owner(o) == p));
    }
}
