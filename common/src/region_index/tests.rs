use super::*;
use std::collections::{HashSet, VecDeque};

/// Regions of the free cells of `set` by a queue-based search on (row, column), sharing no
/// code with the index.
fn naive_region_count(w: usize, h: usize, set: u32) -> u64 {
    let n = w * h;
    let mut seen = vec![false; n];
    let mut count = 0;
    for start in 0..n {
        if set & (1 << start) != 0 || seen[start] {
            continue;
        }
        count += 1;
        seen[start] = true;
        let mut queue = VecDeque::from([start]);
        while let Some(c) = queue.pop_front() {
            let (r, col) = (c / w, c % w);
            let mut next = vec![];
            if r > 0 {
                next.push(c - w);
            }
            if r + 1 < h {
                next.push(c + w);
            }
            if col > 0 {
                next.push(c - 1);
            }
            if col + 1 < w {
                next.push(c + 1);
            }
            for d in next {
                if set & (1 << d) == 0 && !seen[d] {
                    seen[d] = true;
                    queue.push_back(d);
                }
            }
        }
    }
    count
}

/// `sum over k-subsets of R(S)` enumerated by recursion over cells, with naive regions.
fn naive_total(w: usize, h: usize, k: usize) -> u64 {
    fn go(w: usize, h: usize, from: usize, left: usize, set: u32, total: &mut u64) {
        if left == 0 {
            *total += naive_region_count(w, h, set);
            return;
        }
        for c in from..w * h {
            if w * h - c >= left {
                go(w, h, c + 1, left - 1, set | 1 << c, total);
            }
        }
    }
    let mut total = 0;
    go(w, h, 0, k, 0, &mut total);
    total
}

#[test]
fn counts_of_the_15_puzzle() {
    let board: Board = "15".parse().unwrap();
    for (k, want) in [
        (5, 874_080u64),
        (6, 11_816_640),
        (7, 139_849_920),
        (8, 1_425_191_040),
    ] {
        let index = RegionIndex::new(board, k).unwrap();
        assert_eq!(index.states(), want, "15-puzzle, {k} tiles");
        assert_eq!(
            naive_total(4, 4, k) * factorial(k),
            want,
            "naive, {k} tiles"
        );
    }
}

#[test]
fn counts_of_the_24_puzzle() {
    let board: Board = "24".parse().unwrap();
    for (k, want) in [(6, 181_008_000u64), (7, 4_066_655_040), (8, 87_358_400_640)] {
        let index = RegionIndex::new(board, k).unwrap();
        assert_eq!(index.states(), want, "24-puzzle, {k} tiles");
        assert_eq!(index.sets(), binomial(25, k));
    }
    // The 6-tile count checked by the naive enumeration too (177,100 sets).
    assert_eq!(naive_total(5, 5, 6) * 720, 181_008_000);
}

#[test]
fn set_ranks_are_the_gosper_order() {
    let board: Board = "3x4".parse().unwrap();
    for k in 1..12 {
        let index = RegionIndex::new(board, k).unwrap();
        for c in 0..index.sets() {
            assert_eq!(index.set_rank(index.set_mask(c)), c);
            assert_eq!(index.set_mask(c).count_ones() as usize, k);
        }
    }
}

#[test]
#[expect(clippy::cast_possible_truncation, reason = "k is below 25")]
fn orders_round_trip() {
    for k in 1..=7 {
        let mut seen = HashSet::new();
        let mut pi = [0u8; MAX_CELLS];
        for rank in 0..factorial(k) {
            order_unrank(k, rank, &mut pi);
            assert_eq!(order_rank(&pi[..k]), rank);
            let mut sorted = pi[..k].to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..k as u8).collect::<Vec<_>>());
            assert!(seen.insert(pi[..k].to_vec()));
        }
    }
}

#[test]
fn order_moves_agree_with_the_computation() {
    for k in [1, 2, 5, 9] {
        let moves = OrderMoves::new(k);
        let mut pi = [0u8; MAX_CELLS];
        for rank in (0..factorial(k)).step_by(7) {
            order_unrank(k, rank, &mut pi);
            for pa in 0..k {
                for pb in 0..k {
                    let mut v: Vec<u8> = pi[..k].to_vec();
                    let t = v.remove(pa);
                    v.insert(pb, t);
                    assert_eq!(moves.moved(pa, pb, rank), order_rank(&v));
                }
            }
        }
    }
}

/// Every (placement, free cell) of small boards maps to a state index in range; cells of
/// one region share it, different regions do not; every index is hit; decode inverts it.
#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's spaces are small: states and placements index vectors in memory"
)]
fn state_index_is_a_bijection_on_small_boards() {
    for (board, ks) in [
        ("3x3", vec![1, 2, 3, 4]),
        ("3x4", vec![2, 3]),
        ("2x2", vec![1, 2, 3]),
    ] {
        let board: Board = board.parse().unwrap();
        for k in ks {
            let index = RegionIndex::new(board, k).unwrap();
            let ranker = PlacementRanker::new(board.cells(), k).unwrap();
            let mut hit = vec![false; index.states() as usize];
            let mut placement_hit = vec![false; index.placements() as usize];
            let mut cells = [0u8; MAX_CELLS];
            for rank in 0..ranker.placements() {
                let occupied = ranker.unrank(rank, &mut cells);
                let p = index.placement_index(&cells) as usize;
                assert!(!placement_hit[p]);
                placement_hit[p] = true;
                let free = board.all_cells() & !occupied;
                let mut left = free;
                while left != 0 {
                    let least = left.trailing_zeros() as usize;
                    let region = board.region(least, free);
                    left &= !region;
                    let s = index.state_index(&cells, least);
                    let mut rest = region;
                    while rest != 0 {
                        assert_eq!(index.state_index(&cells, rest.trailing_zeros() as usize), s);
                        rest &= rest - 1;
                    }
                    assert!(!hit[s as usize], "{board} k {k}: index {s} twice");
                    hit[s as usize] = true;
                    let (back, back_region) = index.decode(s);
                    assert_eq!(&back[..k], &cells[..k]);
                    assert_eq!(back_region, region);
                }
            }
            assert!(
                hit.iter().all(|&h| h),
                "{board} k {k}: an index is never hit"
            );
            assert!(placement_hit.iter().all(|&h| h));
        }
    }
}

#[test]
fn refuses_bad_sizes() {
    let board: Board = "3x3".parse().unwrap();
    assert!(RegionIndex::new(board, 0).is_err());
    assert!(
        RegionIndex::new(board, 9)
            .unwrap_err()
            .to_string()
            .contains("between 1 and 8")
    );
}

/// The incremental walk gives every rank's (set, bitboard, order) as the plain unrank and
/// `set_and_order` do, over every rank of small spaces and over ranges that start and end
/// inside a prefix.
#[test]
fn set_and_order_walk_matches_unrank() {
    for (board, ks) in [("2x2", 1..4), ("3x3", 1..9), ("4x3", 1..5), ("5x5", 1..3)] {
        let board: Board = board.parse().unwrap();
        for k in ks {
            let index = RegionIndex::new(board, k).unwrap();
            let ranker = PlacementRanker::new(board.cells(), k).unwrap();
            let total = ranker.placements();
            let ranges = [
                0..total,
                1..total,
                3..(total - 2).max(3),
                0..0,
                total / 2..total / 2 + 1,
            ];
            for range in ranges {
                let mut cells = [0u8; MAX_CELLS];
                let mut next = range.start;
                index.for_each_set_and_order(&ranker, range.clone(), |rank, c, set, order| {
                    assert_eq!(rank, next, "{board} k={k}");
                    next += 1;
                    ranker.unrank(rank, &mut cells);
                    assert_eq!(
                        index.set_and_order(&cells),
                        (c, set, order),
                        "{board} k={k} rank {rank}"
                    );
                });
                assert_eq!(next, range.end.max(range.start), "{board} k={k} {range:?}");
            }
        }
    }
}

/// One index per board and size while someone holds it; freed when the last holder lets go.
#[test]
fn a_shared_index_lives_while_it_is_held() {
    // A board and size no other test of this crate uses, so that no one else holds it.
    let board: Board = "5x2".parse().unwrap();
    let a = RegionIndex::shared(board, 7).unwrap();
    let b = RegionIndex::shared(board, 7).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let other = RegionIndex::shared(board, 6).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a, &other));
    assert_eq!(other.k(), 6);
    assert_eq!(a.states(), RegionIndex::new(board, 7).unwrap().states());
    let weak = std::sync::Arc::downgrade(&a);
    drop((a, b));
    assert!(
        weak.upgrade().is_none(),
        "no holder is left, so the index is freed"
    );
    // Refused sizes are refused as `new` refuses them.
    assert!(RegionIndex::shared(board, 10).is_err());
}

/// The set of every block found from every set, earlier or later, is the set whose blocks
/// hold it, counted by walking the sets' regions one by one.
#[test]
fn a_blocks_set_is_found_from_any_set() {
    let index = RegionIndex::new("4x4".parse().unwrap(), 3).unwrap();
    let mut owner = Vec::new();
    for c in 0..index.sets() {
        owner.extend(std::iter::repeat_n(c, index.regions_of(c).len()));
    }
    assert_eq!(owner.len() as u64, index.region_count());
    for (block, &c) in owner.iter().enumerate() {
        for from in 0..index.sets() {
            assert_eq!(
                index.set_of_block_from(block as u64, from),
                c,
                "block {block} from {from}"
            );
        }
    }
}

#[test]
fn set_ranges_cover_the_sets_in_parts_of_about_equal_states() {
    let board = Board::new(4, 4).unwrap();
    let index = RegionIndex::new(board, 5).unwrap();
    let sets = index.sets();
    for ignored in [false, true] {
        let weight = |c: u64| if ignored { c } else { index.first_block(c) };
        for parts in [1, 2, 3, 7, 64, sets, 2 * sets] {
            let ranges = set_ranges(&index, ignored, parts);
            // Contiguous, non-empty, from the first set to the last.
            assert_eq!(ranges.first().map(|r| r.start), Some(0));
            assert_eq!(ranges.last().map(|r| r.end), Some(sets));
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            assert!(ranges.iter().all(|r| r.start < r.end));
            // Each range ends at the first set that reaches its share past its start.
            let per = (weight(sets) / parts).max(1);
            for r in &ranges[..ranges.len() - 1] {
                assert!(weight(r.end) >= weight(r.start) + per, "{r:?} of {parts}");
                assert!(
                    weight(r.end - 1) < weight(r.start) + per,
                    "{r:?} of {parts}"
                );
            }
        }
    }
}
