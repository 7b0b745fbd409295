use super::checkpoint::check_fields;
use super::*;
use tilepdb_common::{BlankRule, Board, Goal, Pattern};

/// The minimized space of tiles 1 and 2 on the 3x3 board.
fn small_space() -> StateSpace {
    let board: Board = "3x3".parse().unwrap();
    StateSpace::new(
        board,
        Goal::BlankFirst,
        Pattern::new(board, vec![1, 2]).unwrap(),
        BlankRule::Minimized,
    )
    .unwrap()
}

#[test]
fn arrays_and_manifest_survive_a_reopen() {
    let dir = std::env::temp_dir().join(format!("tilepdb-store-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let space = small_space();
    {
        let data = DataDir::open(&dir).unwrap();
        assert!(DataDir::open(&dir).is_err(), "locked");
        assert_eq!(data.read_checkpoint().unwrap(), None);
        let index = StateIndex::region(&space).unwrap();
        let arrays = data.arrays(0, &space, &index, true).unwrap();
        arrays.codes.try_mark(17, 2);
        arrays.depths.record_first(3, 4);
        data.flush_arrays(0, &arrays).unwrap();
        let m = JobCheckpoint {
            format: CHECKPOINT_FORMAT,
            job_id: "j".into(),
            search_index: SEARCH_INDEX.into(),
            tables_written: 0,
            table: Some(TableCheckpoint::default()),
            checksum: String::new(),
        };
        data.write_checkpoint(&m, true).unwrap();
    }
    let data = DataDir::open(&dir).unwrap();
    assert_eq!(data.read_checkpoint().unwrap().unwrap().job_id, "j");
    // An edited field no longer matches the checkpoint's checksum.
    let path = dir.join("checkpoint.json");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        text.replace("\"tables_written\": 0", "\"tables_written\": 1"),
    )
    .unwrap();
    let e = data.read_checkpoint().unwrap_err().to_string();
    assert!(
        e.contains("checksum") && e.contains("checkpoint.json"),
        "{e}"
    );
    let index = StateIndex::region(&space).unwrap();
    let arrays = data.arrays(0, &space, &index, false).unwrap();
    assert_eq!(arrays.codes.get(17), 2);
    assert_eq!(arrays.depths.get(3), 5);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn fields_that_do_not_fit_the_job_are_refused_even_with_their_checksum() {
    let dir = std::env::temp_dir().join(format!("tilepdb-fields-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let data = DataDir::open(&dir).unwrap();
    let space = small_space();
    let spaces = vec![space.clone(), space.clone()];
    let good = JobCheckpoint {
        format: CHECKPOINT_FORMAT,
        job_id: "j".into(),
        search_index: SEARCH_INDEX.to_string(),
        tables_written: 1,
        table: Some(TableCheckpoint {
            table: 1,
            ..TableCheckpoint::default()
        }),
        checksum: String::new(),
    };
    check_fields(&data, &good, &spaces).unwrap();
    let mut bad = vec![];
    bad.push(JobCheckpoint {
        tables_written: 99,
        table: None,
        ..good.clone()
    });
    bad.push(JobCheckpoint {
        tables_written: 0,
        ..good.clone()
    });
    let mut deep = good.clone();
    deep.table.as_mut().unwrap().progress.next_depth = 1000;
    bad.push(deep);
    let mut found = good.clone();
    found.table.as_mut().unwrap().progress.states_found = space.states() + 1;
    bad.push(found);
    for c in bad {
        // Sealed: the checksum matches, the fields do not fit.
        data.write_checkpoint(&c, false).unwrap();
        let read = data.read_checkpoint().unwrap().unwrap();
        let e = check_fields(&data, &read, &spaces).unwrap_err().to_string();
        assert!(
            e.contains("checkpoint.json") && e.contains("remove the data directory"),
            "{e}"
        );
    }
    drop(data);
    let _ = fs::remove_dir_all(&dir);
}
