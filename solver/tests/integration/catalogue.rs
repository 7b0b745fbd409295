//! Catalogues: the maximum over additive sets equals the table set's heuristic with its
//! reflection when the catalogue is the set and its transposition (every encoding followed
//! along random walks); searches with symmetric tables find the optimal lengths (IDA* with
//! Manhattan distance is the oracle); bad catalogues and directories are refused with the
//! reason.

use std::path::Path;

use rand::{Rng, SeedableRng};
use tilepdb_common::catalogue::Catalogue;
use tilepdb_common::symmetry::Symmetry;
use tilepdb_common::table::{Encoding, Load};
use tilepdb_common::{BlankRule, Board, Goal, Partition, Pattern, PuzzleState};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::heuristic::{
    CatalogueHeuristic, CatalogueSlot, CatalogueStarted, CatalogueTables, Heuristic, Manhattan,
    PdbHeuristic,
};
use tilepdb_solver::search::{Limits, ida_star};

fn options() -> BuildOptions {
    BuildOptions {
        threads: 1,
        ..BuildOptions::default()
    }
}

/// Every distinct table of the catalogue `text` built into `dir`, one set each (as
/// `tilepdb-coordinator build --catalogue` does); the catalogue's file path.
fn build_catalogue(dir: &Path, text: &str, board: Board, encoding: Encoding) -> std::path::PathBuf {
    let file = dir.join("test.cat");
    std::fs::write(&file, text).unwrap();
    let catalogue = Catalogue::read(&file, board).unwrap();
    for table in catalogue.distinct_tables(Goal::BlankFirst) {
        let pattern = Pattern::new(board, table.tiles.clone()).unwrap();
        let partition = Partition::new(format!("{board}:one"), board, vec![pattern]).unwrap();
        open_or_build(
            dir,
            &partition,
            Goal::BlankFirst,
            table.rule,
            encoding,
            &options(),
        )
        .unwrap();
    }
    file
}

/// A random walk of `steps` moves from the goal, calling `visit(cells, tile, from)` after
/// each move.
fn walk(board: Board, seed: u64, steps: usize, mut visit: impl FnMut(&[u8], usize, usize)) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let n = board.cells();
    let mut cells = PuzzleState::goal(board, Goal::BlankFirst).cells();
    let mut tile_at: Vec<usize> = vec![0; n];
    for t in 0..n {
        tile_at[cells[t] as usize] = t;
    }
    for _ in 0..steps {
        let blank = cells[0] as usize;
        let around: Vec<usize> = (0..n).filter(|&c| board.distance(c, blank) == 1).collect();
        let from = around[rng.random_range(0..around.len())];
        let tile = tile_at[from];
        cells[tile] = u8::try_from(blank).unwrap();
        cells[0] = u8::try_from(from).unwrap();
        tile_at[blank] = tile;
        tile_at[from] = 0;
        visit(&cells, tile, from);
    }
}

#[test]
fn a_set_and_its_transposition_equal_the_set_with_reflection() {
    let dir = tempfile::tempdir().unwrap();
    let board: Board = "4x4".parse().unwrap();
    let patterns: Vec<String> = ["1,2,3", "4,5,8", "6,7,9", "10,11,12", "13,14,15"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let partition = Partition::custom(board, &patterns).unwrap();
    for (rule, encoding) in [
        (BlankRule::ZeroAware, Encoding::OneBit),
        (BlankRule::ZeroAware, Encoding::Byte),
        (BlankRule::Minimized, Encoding::Nibble),
        (BlankRule::Ignored, Encoding::Mod3),
        (BlankRule::Aware, Encoding::OneBit),
    ] {
        let (set, _) = open_or_build(
            dir.path(),
            &partition,
            Goal::BlankFirst,
            rule,
            encoding,
            &options(),
        )
        .unwrap();
        let pdb = PdbHeuristic::new(&set, true).unwrap();
        let transpose = Symmetry::all(board)
            .into_iter()
            .find(|s| s.name() == "transpose")
            .unwrap();
        let mut slots = Vec::new();
        for (set_no, symmetry) in [(0, Symmetry::IDENTITY), (1, transpose)] {
            for t in set.tables() {
                slots.push(CatalogueSlot {
                    set: set_no,
                    pdb: t,
                    symmetry,
                });
            }
        }
        let catalogue = CatalogueHeuristic::new(board, Goal::BlankFirst, &slots).unwrap();
        let start = PuzzleState::goal(board, Goal::BlankFirst).cells();
        let (mut pm, mut cm) = (
            pdb.evaluate(&start).unwrap().1,
            catalogue.evaluate(&start).unwrap().1,
        );
        let mut steps = 0;
        walk(board, 7, 400, |cells, tile, from| {
            let (ph, pn) = pdb.after_move(cells, tile, from, &pm);
            let (ch, cn) = catalogue.after_move(cells, tile, from, &cm);
            assert_eq!(ph, ch, "{rule} {encoding}: step {steps}");
            assert_eq!(
                ch,
                catalogue.evaluate(cells).unwrap().0,
                "{rule} {encoding}: from scratch"
            );
            (pm, cm) = (pn, cn);
            steps += 1;
        });
        assert_eq!(steps, 400);
    }
}

/// A child's evaluation with a limit ([`Heuristic::finish_move_within`]) is the exact value
/// and memo when the value is at most the limit, and else a value above the limit and at most
/// the exact one: along a random walk, for every limit up to one above the exact value.
#[test]
fn a_limited_evaluation_is_exact_within_the_limit_and_a_bound_above() {
    let dir = tempfile::tempdir().unwrap();
    let board: Board = "4x4".parse().unwrap();
    // Four sets, two of them transpositions of the others; tables shared between sets.
    let text = "0,1,2,3\n0,4,5,8\n0,6,7,9\n0,10,11,12\n0,13,14,15\n\n                0,4,8,12\n0,1,2,5\n0,6,9,10\n0,3,7,11\n0,13,14,15\n\n                0,1,2,5,6\n0,3,4,7,8\n0,9,10,13,14\n0,11,12,15\n\n                0,1,4,5,6\n0,2,3,7,8\n0,9,10,13,14\n0,11,12,15\n";
    let file = build_catalogue(dir.path(), text, board, Encoding::OneBit);
    let tables = CatalogueTables::open(&file, dir.path(), None, None, Load::Map).unwrap();
    let h = tables.heuristic().unwrap();
    let start = PuzzleState::goal(board, Goal::BlankFirst).cells();
    let mut parent = h.evaluate(&start).unwrap().1;
    let (mut stopped, mut steps) = (0, 0);
    walk(board, 5, 600, |cells, tile, from| {
        let mut started = CatalogueStarted::default();
        h.start_move(cells, tile, from, &parent, &mut started);
        let mut memo = parent;
        let exact = h.finish_move(cells, tile, from, &started, &parent, &mut memo);
        for limit in 0..=exact + 1 {
            let mut within = parent;
            let got =
                h.finish_move_within(cells, tile, from, &started, &parent, &mut within, limit);
            if exact <= limit {
                assert_eq!((got, within), (exact, memo), "step {steps}, limit {limit}");
            } else {
                assert!(
                    limit < got && got <= exact,
                    "step {steps}: {got} for {exact} within {limit}"
                );
                stopped += 1;
            }
        }
        parent = memo;
        steps += 1;
    });
    assert_eq!(steps, 600);
    assert!(stopped > 0);
}

/// A 3x3 catalogue whose patterns share tables through symmetries: fewer tables than
/// patterns, and IDA* finds Manhattan-IDA*'s optimal lengths on random states.
#[test]
fn symmetric_tables_solve_at_the_optimal_length() {
    let dir = tempfile::tempdir().unwrap();
    let board: Board = "3x3".parse().unwrap();
    // Zero-aware patterns with the blank's corner open (served by rotations too), an
    // ignored set, and a set and its transposition.
    let text = "0,5,7,8\n0,1,2\n0,3,6\n\n0,2,5,8\n0,6,7\n0,1,3,4\n\n1,2,3\n4,5,6,7,8\n\n\
                0,1,2,4\n0,3,5,6,7,8\n\n0,3,6,4\n0,1,2,5,7,8\n";
    for encoding in [Encoding::OneBit, Encoding::Byte] {
        let file = build_catalogue(dir.path(), text, board, encoding);
        let tables = CatalogueTables::open(&file, dir.path(), None, None, Load::Map).unwrap();
        assert!(tables.tables().len() < tables.served().len());
        assert!(
            tables
                .served()
                .iter()
                .any(|s| s.symmetry != Symmetry::IDENTITY),
            "some pattern is served through a symmetry"
        );
        let h = tables.heuristic().unwrap();
        let manhattan = Manhattan::new(board, Goal::BlankFirst);
        for seed in 0..25 {
            let mut last = Vec::new();
            walk(board, 100 + seed, 60, |cells, _, _| last = cells.to_vec());
            let mut tiles = [0u8; 9];
            for (t, &c) in last.iter().enumerate() {
                tiles[c as usize] = u8::try_from(t).unwrap();
            }
            let text: Vec<String> = tiles.iter().map(ToString::to_string).collect();
            let state = PuzzleState::parse(board, &text.join(" ")).unwrap();
            let want = ida_star(&state, Goal::BlankFirst, &manhattan, &Limits::default()).unwrap();
            let got = ida_star(&state, Goal::BlankFirst, &h, &Limits::default()).unwrap();
            assert_eq!(got.length(), want.length(), "{encoding} seed {seed}");
            assert!(got.expanded <= want.expanded);
        }
    }
}

#[test]
fn bad_catalogues_and_directories_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let board: Board = "3x3".parse().unwrap();
    let file = build_catalogue(dir.path(), "0,1,2\n0,3,6\n", board, Encoding::Byte);
    let open = |text: &str, board: Option<&str>, goal: Option<Goal>| {
        std::fs::write(&file, text).unwrap();
        let board = board.map(|b| b.parse::<Board>().unwrap());
        match CatalogueTables::open(&file, dir.path(), board, goal, Load::Map) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    };
    assert_eq!(open("0,1,2\n0,3,6\n", None, None), "");
    // Served by a symmetry: 1,2 and 3,6 are each other's transposition.
    assert_eq!(open("0,3,6\n", None, None), "");
    for (text, board, goal, words) in [
        ("0,4,5\n", None, None, "no table serves the pattern 0,4,5"),
        ("4,5\n", None, None, "no ignored table"),
        (
            "0,1,2\n",
            Some("4x4"),
            None,
            "holds no table set of the 4x4 board",
        ),
        ("0,1,2\n", None, Some(Goal::BlankLast), "blank-last goal"),
        ("0,1,9\n", None, None, "tile 9 is not on a 3x3 board"),
        ("0,1,2\n0,2,3\n", None, None, "must be disjoint"),
        ("0,1,a\n", None, None, "\"a\" is not a tile number"),
    ] {
        let e = open(text, board, goal);
        assert!(e.contains(words), "{text:?}: {e:?} lacks {words:?}");
    }
    // A directory without sets.
    let empty = tempfile::tempdir().unwrap();
    let e = CatalogueTables::open(&file, empty.path(), None, None, Load::Map)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no table set"), "{e}");
}
