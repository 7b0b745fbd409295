//! A cache that cannot be written (read-only, or its `.partial` directory impossible to
//! make) still serves the complete, intact sets it holds: a second fetch uses them without
//! taking the lock (issue 21). The tables are served by the coordinator's table service on a
//! real socket on 127.0.0.1, run in this test's process.

use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::wire::connect::Endpoint;
use tilepdb_common::{BlankRule, Board, Goal, Partition};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::fetch::fetch_set;

use crate::fetch_cli::{TOKEN, serve};

#[test]
fn a_cache_that_cannot_be_written_serves_its_complete_sets() {
    let served = tempfile::tempdir().unwrap();
    let board: Board = "3x3".parse().unwrap();
    let partition = Partition::custom(board, &["1,2,3".into(), "4,5".into()]).unwrap();
    let (set, _) = open_or_build(
        served.path(),
        &partition,
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    let name = set.dir().file_name().unwrap().to_str().unwrap().to_string();
    let mut remote = Endpoint::new(serve(served.path(), None));
    remote.token = Some(TOKEN.into());
    let cache = tempfile::tempdir().unwrap();
    let first = fetch_set(&remote, &name, cache.path(), |_| {}).unwrap();
    assert!(!first.already_present);

    // Nothing can be made in the cache any more: its working directory is a file (and the
    // cache is read-only, for a user whom permissions stop).
    let partial = cache.path().join(".partial");
    std::fs::remove_dir_all(&partial).unwrap();
    std::fs::write(&partial, b"").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let again = fetch_set(&remote, &name, cache.path(), |_| {});
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let again = again.expect("the complete copy is served");
    assert!(again.already_present);
    assert_eq!(again.dir, first.dir);
    TableSet::open(&again.dir).unwrap();
}
