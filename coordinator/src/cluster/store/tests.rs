use std::sync::Arc;
use std::time::Instant;

use super::checkpoint::check_fields;
use super::*;
use crate::engine::kernel::RegionSetKernel;
use crate::engine::{Executor, Layer, SearchProgress, ThreadsExecutor, finish_table, search_table};
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

/// A searched table's values and histogram.
type Finished = (Vec<u8>, Vec<u64>);

/// Searches table 0 of `space` from `data`'s checkpoint until the layer `stop_at` is due (or
/// to the end), checkpointing every layer. Returns the arrays and the progress, or the table's
/// values and histogram at the end.
fn search_from_checkpoint(
    data: &DataDir,
    space: &StateSpace,
    stop_at: Option<u32>,
) -> (Arc<TableArrays>, SearchProgress, Option<Finished>) {
    let index = StateIndex::region(space).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut checkpoint = Checkpoint::open(data, "j", false, std::slice::from_ref(space)).unwrap();
    let (arrays, mut progress) = checkpoint.begin_table(0, space, &index).unwrap();
    let arrays = Arc::new(arrays);
    let kernel = RegionSetKernel::new(index.regions().clone());
    let mut executor = ThreadsExecutor::with_kernel(&pool, Some(1), kernel);
    let searched = search_table(
        0,
        space,
        &index,
        &arrays,
        &mut progress,
        &mut executor,
        &pool,
        &(),
        |p| {
            checkpoint.layer_done(0, space, &arrays, p)?;
            match stop_at {
                Some(d) if p.next_depth == d => Err(Error::Serve("stopped".into())),
                _ => Ok(()),
            }
        },
    );
    if searched.is_err() {
        return (arrays, progress, None);
    }
    let table = finish_table(
        space,
        &index,
        arrays.clone(),
        &progress,
        &pool,
        Instant::now(),
    );
    let values = table.values.bytes().unwrap().to_vec();
    (arrays, progress, Some((values, table.histogram)))
}

/// A coordinator stopped while finishing a layer (the layer expanded, part of its states
/// retired, the checkpoint still naming it) resumes by finishing that layer, not from the
/// goal, and ends with the values of an uninterrupted search; a state array changed beyond
/// what finishing does is still found damaged.
#[test]
fn a_stop_while_finishing_a_layer_resumes_by_finishing_it() {
    let space = StateSpace::new(
        "3x3".parse().unwrap(),
        Goal::BlankFirst,
        Pattern::new("3x3".parse().unwrap(), vec![1, 2, 3]).unwrap(),
        BlankRule::Minimized,
    )
    .unwrap();
    let root = std::env::temp_dir().join(format!("tilepdb-finishing-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let want = {
        let data = DataDir::open(&root.join("whole")).unwrap();
        search_from_checkpoint(&data, &space, None).2.unwrap()
    };
    let index = StateIndex::region(&space).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for (stop_at, damage) in [(1, false), (4, false), (7, false), (4, true)] {
        let dir = root.join(format!("stop-{stop_at}-{damage}"));
        {
            let data = DataDir::open(&dir).unwrap();
            let (arrays, progress, done) = search_from_checkpoint(&data, &space, Some(stop_at));
            assert!(done.is_none() && progress.next_depth == stop_at);
            // The layer expanded, then half of its finishing pass.
            let layer = Layer {
                table: 0,
                space: &space,
                index: &index,
                arrays: &arrays,
                depth: stop_at,
                states: progress.layer_states,
                states_found: progress.states_found,
            };
            let kernel = RegionSetKernel::new(index.regions().clone());
            ThreadsExecutor::with_kernel(&pool, None, kernel)
                .expand_layer(&layer, &())
                .unwrap();
            let current = StateCodes::code_of_depth(stop_at);
            let states = arrays.codes.states();
            assert!((0..states / 2).any(|s| arrays.codes.get(s) == current));
            arrays.codes.retire(0..states / 2, current);
            data.flush_arrays(0, &arrays).unwrap();
        }
        if damage {
            // A done state of an earlier layer turned unseen: not something finishing does.
            let data = DataDir::open(&dir).unwrap();
            let arrays = data.arrays(0, &space, &index, false).unwrap();
            let s = (0..arrays.codes.states())
                .find(|&s| arrays.codes.get(s) == tilepdb_common::layer::DONE)
                .unwrap();
            drop(arrays);
            let path = data.codes_path(0);
            let mut bytes = fs::read(&path).unwrap();
            bytes[usize::try_from(s / 4).unwrap()] &= !(3 << (2 * (s % 4)));
            fs::write(&path, bytes).unwrap();
        }
        let data = DataDir::open(&dir).unwrap();
        let mut checkpoint =
            Checkpoint::open(&data, "j", false, std::slice::from_ref(&space)).unwrap();
        let (_, progress) = checkpoint.begin_table(0, &space, &index).unwrap();
        if damage {
            assert_eq!(progress.next_depth, 0, "started again from the goal");
        } else {
            assert!(progress.layer_expanded && progress.next_depth == stop_at);
        }
        drop(checkpoint);
        let (_, _, done) = search_from_checkpoint(&data, &space, None);
        assert_eq!(done.unwrap(), want, "stopped finishing layer {stop_at}");
    }
    let _ = fs::remove_dir_all(&root);
}
