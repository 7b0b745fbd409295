//! Forged table files: one entry changed and every checksum and histogram recomputed to match
//! (the file is written by the ordinary writer), so only a check of the values themselves can
//! tell. `verify --deep`'s Bellman check finds the entry in every exact encoding.

#![expect(
    clippy::cast_possible_truncation,
    reason = "the forger indexes tables by u64 entries, which index arrays in memory, and packs values below 255 into bytes"
)]

use tilepdb_common::table::{Encoding, UNREACHED};
use tilepdb_common::{BlankRule, Board, Goal, MAX_CELLS, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};
use tilepdb_coordinator::output::write_table;
use tilepdb_proof::facts::check_consistent;
use tilepdb_proof::verify_deep;

fn space(board: &str, goal: Goal, tiles: &[u8], rule: BlankRule) -> StateSpace {
    let b: Board = board.parse().unwrap();
    StateSpace::new(b, goal, Pattern::new(b, tiles.to_vec()).unwrap(), rule).unwrap()
}

/// The entries of an ignored table whose every neighbour is one less: lowering one of them by
/// two keeps the table consistent, with the parity of the Manhattan distance.
fn local_maxima(space: &StateSpace, values: &[u8]) -> Vec<u64> {
    let mut found = vec![];
    for rank in 0..space.placements() {
        let mut cells = [0u8; MAX_CELLS];
        let occupied = space.ranker().unrank(rank, &mut cells);
        let free = space.board().all_cells() & !occupied;
        let h = values[rank as usize];
        let mut moved = cells;
        let mut all_below = true;
        for i in 0..space.k() {
            let mut t = space.board().neighbours(cells[i] as usize) & free;
            while t != 0 {
                moved[i] = t.trailing_zeros() as u8;
                t &= t - 1;
                all_below &= values[space.ranker().rank(&moved[..space.k()]) as usize] + 1 == h;
            }
            moved[i] = cells[i];
        }
        let m = space.manhattan(&cells[..space.k()]);
        if all_below && h != UNREACHED && u32::from(h) >= m + 2 {
            found.push(rank);
        }
    }
    found
}

#[test]
fn verify_deep_finds_a_forged_entry_in_every_exact_encoding() {
    let dir = tempfile::tempdir().unwrap();
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        let space = space("3x4", goal, &[1, 2, 3, 4], BlankRule::Ignored);
        let values = build_table(&space, &BuildOptions::default(), &())
            .unwrap()
            .values
            .into_bytes()
            .expect("a byte per entry");
        let maxima = local_maxima(&space, &values);
        assert!(
            !maxima.is_empty(),
            "the table has a local maximum above Manhattan + 2"
        );
        let mut forged = values.clone();
        forged[maxima[0] as usize] -= 2;
        // The older checks cannot tell: every move still changes the value by at most one.
        check_consistent(&space, &forged).unwrap();
        for encoding in [Encoding::Byte, Encoding::Mod3] {
            let good = write_table(dir.path(), &space, encoding, &values).unwrap();
            verify_deep(&good).unwrap();
            let bad = write_table(dir.path(), &space, encoding, &forged).unwrap();
            let err = verify_deep(&bad).unwrap_err().to_string();
            assert!(
                err.contains("should have") || err.contains("neighbour"),
                "{goal:?} {encoding}: {err}"
            );
        }
    }
}

#[test]
fn verify_deep_finds_a_raised_region_of_an_aware_table() {
    // An aware table's entries of one (placement, region) raised by 2 together: all cells of
    // the region still agree, the parity holds; the rule does not.
    let dir = tempfile::tempdir().unwrap();
    let space = space("3x3", Goal::BlankFirst, &[1, 2, 3], BlankRule::Aware);
    let values = build_table(&space, &BuildOptions::default(), &())
        .unwrap()
        .values
        .into_bytes()
        .expect("a byte per entry");
    let slots = space.slots();
    let rank = space.placements() / 2;
    let mut forged = values.clone();
    let mut cells = [0u8; MAX_CELLS];
    let free = space.board().all_cells() & !space.ranker().unrank(rank, &mut cells);
    let least = free.trailing_zeros() as usize;
    let region = space.board().region(least, free);
    for slot in 0..slots {
        let cell = tilepdb_common::rank::select_bit(free, slot as u32);
        if region & (1 << cell) != 0 {
            forged[(rank * slots + slot) as usize] += 2;
        }
    }
    let bad = write_table(dir.path(), &space, Encoding::Byte, &forged).unwrap();
    assert!(verify_deep(&bad).is_err());
}

#[test]
fn verify_deep_finds_a_raised_entry_of_every_kind_in_every_encoding() {
    // One entry raised by two (its parity kept), in turn the first entry of each kind whose
    // raise changes the encoded payload, written with checksums and histogram to match. Every
    // pair is proven exact, and the entry is found.
    let dir = tempfile::tempdir().unwrap();
    let encodings = [
        Encoding::Byte,
        Encoding::Nibble,
        Encoding::min_nibble(4).unwrap(),
        Encoding::Mod3,
        Encoding::OneBit,
    ];
    let mut proven = 0;
    for rule in [
        BlankRule::Aware,
        BlankRule::ZeroAware,
        BlankRule::Minimized,
        BlankRule::Ignored,
    ] {
        let space = space("3x4", Goal::BlankFirst, &[1, 2, 3, 4], rule);
        let values = build_table(&space, &BuildOptions::default(), &())
            .unwrap()
            .values
            .into_bytes()
            .expect("a byte per entry");
        for encoding in encodings {
            if encoding.check_rule(rule).is_err() {
                continue;
            }
            let good = write_table(dir.path(), &space, encoding, &values).unwrap();
            verify_deep(&good).unwrap();
            let good_payload = good.payload().to_vec();
            let forged = (0..values.len())
                .filter(|&e| values[e] < 200)
                .find_map(|e| {
                    let mut forged = values.clone();
                    forged[e] += 2;
                    let bad = write_table(dir.path(), &space, encoding, &forged).unwrap();
                    (bad.payload() != good_payload).then_some(bad)
                })
                .expect("an entry whose raise shows in the payload");
            let err = verify_deep(&forged).unwrap_err().to_string();
            assert!(
                err.contains("entry") || err.contains("placement"),
                "{rule} {encoding}: {err}"
            );
            proven += 1;
        }
    }
    // aware 5, zero-aware 5, minimized 3 (no mod3 or 1-bit), ignored 5.
    assert_eq!(proven, 18);
}

/// Raises the deepest entry of the table file at `path` by two and writes it again with its
/// checksums and histogram recomputed, and the set's manifest in `dir` with them: a forged
/// file that passes every check but a proof.
fn forge_file(dir: &std::path::Path, path: &std::path::Path) {
    use tilepdb_common::table::{EncodedTable, Manifest, Pdb};
    let (space, encoding, mut values) = {
        let pdb = Pdb::open(path).unwrap();
        (
            pdb.space().clone(),
            pdb.encoding(),
            pdb.decode_all().unwrap(),
        )
    };
    let (at, _) = values.iter().enumerate().max_by_key(|&(_, v)| *v).unwrap();
    values[at] += 2;
    std::fs::remove_file(path).unwrap();
    EncodedTable::new(&space, encoding, &values)
        .unwrap()
        .write(path)
        .unwrap();
    let m = Manifest::read(dir).unwrap();
    let mut manifest = Manifest::new(
        m.partition.clone(),
        m.board,
        m.goal,
        m.blank_rule,
        m.encoding,
    );
    for entry in &m.tables {
        manifest.push(&Pdb::open(dir.join(&entry.file)).unwrap());
    }
    manifest.write(dir).unwrap();
}

/// `build` on an output directory where a forged table was planted (every checksum matching):
/// the file is proven before it is reused, fails, and is built again; the set ends byte for
/// byte the honest one.
#[test]
fn build_never_reuses_a_planted_table() {
    let out = tempfile::tempdir().unwrap();
    let build = || {
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
            .args(["build", "--partition", "8:4-4", "--out"])
            .arg(out.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        String::from_utf8_lossy(&status.stderr).into_owned()
    };
    build();
    let dir = out.path().join("3x3-4-4-minimized-blank-first");
    let file = dir.join("pattern-1-2-3-4.pdb");
    let honest = std::fs::read(&file).unwrap();
    forge_file(&dir, &file);
    assert_ne!(std::fs::read(&file).unwrap(), honest);
    let log = build();
    assert!(log.contains("failed its proof"), "{log}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        honest,
        "the planted table was kept"
    );
    tilepdb_common::table::TableSet::open(&dir).unwrap();
}
