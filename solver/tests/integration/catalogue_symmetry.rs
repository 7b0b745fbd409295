//! Symmetric reuse proven entry by entry: for small patterns on the 3x3 and 4x4 boards, the
//! table of `S` read through a symmetry σ ([`CatalogueHeuristic`]) gives, on every entry of
//! the table of `σ(S)` built directly, that table's value; and a symmetry that does not serve
//! (`Symmetry::serves` false) is shown to give a wrong value somewhere, so the condition is
//! needed, not only sufficient.

use std::collections::HashSet;
use std::path::Path;

use tilepdb_common::symmetry::Symmetry;
use tilepdb_common::table::{Encoding, Pdb};
use tilepdb_common::{BlankRule, Board, Goal, MAX_CELLS, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};
use tilepdb_coordinator::output::write_table;
use tilepdb_solver::heuristic::{CatalogueHeuristic, CatalogueSlot, Heuristic};

fn build(dir: &Path, board: Board, goal: Goal, tiles: &[u8], rule: BlankRule) -> Pdb {
    let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
    let space = StateSpace::new(board, goal, pattern, rule).unwrap();
    let options = BuildOptions {
        threads: 1,
        ..BuildOptions::default()
    };
    let table = build_table(&space, &options, &()).unwrap();
    let sub = dir.join(format!(
        "{board}-{goal}-{rule}-{}",
        tiles
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(".")
    ));
    std::fs::create_dir_all(&sub).unwrap();
    write_table(&sub, &space, Encoding::Byte, &table.values).unwrap()
}

/// Every placement of `tiles` with the blank on every free cell, as full states (the other
/// tiles on the cells left, in order): `cells[tile]`.
fn every_state(board: Board, tiles: &[u8]) -> Vec<[u8; MAX_CELLS]> {
    fn place(
        j: usize,
        used: u32,
        at: &mut [usize],
        n: usize,
        tiles: &[u8],
        out: &mut Vec<[u8; MAX_CELLS]>,
    ) {
        if j == tiles.len() {
            for blank in (0..n).filter(|b| used & (1 << b) == 0) {
                let mut cells = [0u8; MAX_CELLS];
                let mut taken = used | 1 << blank;
                cells[0] = u8::try_from(blank).unwrap();
                for (i, &t) in tiles.iter().enumerate() {
                    cells[t as usize] = u8::try_from(at[i]).unwrap();
                }
                for t in (1..n).filter(|t| !tiles.contains(&u8::try_from(*t).unwrap())) {
                    let c = (0..n).find(|c| taken & (1 << c) == 0).unwrap();
                    taken |= 1 << c;
                    cells[t] = u8::try_from(c).unwrap();
                }
                out.push(cells);
            }
            return;
        }
        for c in (0..n).filter(|c| used & (1 << c) == 0) {
            at[j] = c;
            place(j + 1, used | 1 << c, at, n, tiles, out);
        }
    }
    let n = board.cells();
    let k = tiles.len();
    let mut out = Vec::new();
    let mut at = vec![0usize; k];
    place(0, 0, &mut at, n, tiles, &mut out);
    out
}

/// Compares, on every entry of the directly built table of the image, the value read through
/// `sigma` from `source`'s table; the number of entries that differ.
fn differences(
    board: Board,
    goal: Goal,
    source: &Pdb,
    direct: &Pdb,
    sigma: Symmetry,
    covered: &mut HashSet<u64>,
) -> usize {
    let h = CatalogueHeuristic::new(
        board,
        goal,
        &[CatalogueSlot {
            set: 0,
            pdb: source,
            symmetry: sigma,
        }],
    )
    .unwrap();
    let image = direct.space().pattern().tiles().to_vec();
    let mut wrong = 0;
    for cells in every_state(board, &image) {
        let (index, _) = direct.index_of(&cells);
        let want = direct.value(index).unwrap();
        let (got, _) = h.evaluate(&cells).unwrap();
        covered.insert(index);
        if got != u32::from(want) {
            wrong += 1;
        }
    }
    wrong
}

/// For each pattern and rule, each symmetry that serves is proven on every entry of the image's
/// table, and each that does not is refused by the heuristic: how many of each.
fn check_board(board: Board, goal: Goal, patterns: &[&[u8]]) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut proven = 0;
    let mut refused = 0;
    for &tiles in patterns {
        for rule in [
            BlankRule::ZeroAware,
            BlankRule::Minimized,
            BlankRule::Ignored,
            BlankRule::Aware,
        ] {
            let source = build(dir.path(), board, goal, tiles, rule);
            for sigma in Symmetry::all(board) {
                let Some(image) = sigma.image(board, goal, tiles) else {
                    continue;
                };
                let direct = build(dir.path(), board, goal, &image, rule);
                if sigma.serves(board, goal, tiles, rule) {
                    let mut covered = HashSet::new();
                    let wrong = differences(board, goal, &source, &direct, sigma, &mut covered);
                    assert_eq!(
                        wrong, 0,
                        "{board} {goal} {rule} {tiles:?} through {sigma}: {wrong} entries differ"
                    );
                    assert_eq!(
                        covered.len() as u64,
                        direct.entries(),
                        "every entry of {image:?} is checked"
                    );
                    proven += 1;
                } else {
                    refused += 1;
                    assert!(
                        CatalogueHeuristic::new(
                            board,
                            goal,
                            &[CatalogueSlot {
                                set: 0,
                                pdb: &source,
                                symmetry: sigma,
                            }],
                        )
                        .is_err(),
                        "a symmetry that does not serve is refused"
                    );
                }
            }
        }
    }
    (proven, refused)
}

#[test]
fn a_table_read_through_a_symmetry_equals_the_image_built_directly_3x3() {
    let board: Board = "3x3".parse().unwrap();
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        // A corner pattern that walls the blank's corner in, one that leaves the blank's
        // region open to other corners, and one on the far side.
        let (proven, refused) = check_board(board, goal, &[&[1, 3], &[2, 5, 8], &[4, 7], &[6]]);
        assert!(proven > 20, "{goal}: {proven} proven");
        assert!(refused > 0, "{goal}: some symmetry does not serve");
    }
}

#[test]
fn a_table_read_through_a_symmetry_equals_the_image_built_directly_4x4() {
    let board: Board = "4x4".parse().unwrap();
    let (proven, refused) = check_board(board, Goal::BlankFirst, &[&[1, 4, 5], &[10, 11, 15]]);
    assert!(proven > 10, "{proven} proven");
    assert!(refused > 0);
}

/// The region condition is needed: the blank's corner walled in by tiles 1 and 3 on the 3x3
/// board, and the symmetry that takes corner 8 onto corner 0 (rotate-180) keeps the tiles'
/// image on the board, but the blank's goal region does not map onto itself. Read through
/// it anyway (the zero-aware table read as the ignored rule would allow), some entries
/// differ from the directly built table's.
#[test]
fn a_symmetry_outside_the_blanks_region_gives_wrong_values() {
    let board: Board = "3x3".parse().unwrap();
    let goal = Goal::BlankFirst;
    let dir = tempfile::tempdir().unwrap();
    let rotate = Symmetry::all(board)
        .into_iter()
        .find(|s| s.name() == "rotate-180")
        .unwrap();
    let tiles = [1u8, 3];
    assert!(!rotate.serves(board, goal, &tiles, BlankRule::ZeroAware));
    assert!(rotate.serves(board, goal, &tiles, BlankRule::Ignored));
    let image = rotate.image(board, goal, &tiles).unwrap();
    // The ignored tables agree (the rule the symmetry serves) ...
    let source = build(dir.path(), board, goal, &tiles, BlankRule::Ignored);
    let direct = build(dir.path(), board, goal, &image, BlankRule::Ignored);
    let mut covered = HashSet::new();
    assert_eq!(
        differences(board, goal, &source, &direct, rotate, &mut covered),
        0
    );
    // ... the zero-aware values, read by hand through the same map, do not.
    let source = build(dir.path(), board, goal, &tiles, BlankRule::ZeroAware);
    let direct = build(dir.path(), board, goal, &image, BlankRule::ZeroAware);
    let inverse = rotate.inverse();
    let mut wrong = 0;
    for cells in every_state(board, &image) {
        let (index, _) = direct.index_of(&cells);
        let mut mapped = [0u8; MAX_CELLS];
        mapped[0] = u8::try_from(inverse.cell(board, cells[0] as usize)).unwrap();
        for &t in &tiles {
            let source_tile = rotate.tile(board, goal, t as usize);
            mapped[t as usize] =
                u8::try_from(inverse.cell(board, cells[source_tile] as usize)).unwrap();
        }
        let (through, _) = source.index_of(&mapped);
        if source.value(through).unwrap() != direct.value(index).unwrap() {
            wrong += 1;
        }
    }
    assert!(wrong > 0, "the region condition is needed");
}
