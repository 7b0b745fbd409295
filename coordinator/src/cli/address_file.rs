//! `--address-file`: the addresses a server bound, written where scripts and tests read them
//! (never a log line): a line `grpc HOST:PORT`, then `http HOST:PORT` when the dashboard is
//! served. The file is written to a temporary name and renamed, so a reader that finds it
//! finds it whole.

use std::net::SocketAddr;
use std::path::Path;

use tilepdb_common::table::TableError;
use tilepdb_common::table::write::write_atomic;

/// Writes the gRPC address `grpc` (and the dashboard's `http`) to `path`, atomically.
pub fn write(path: &Path, grpc: SocketAddr, http: Option<SocketAddr>) -> Result<(), TableError> {
    let text = match http {
        Some(http) => format!("grpc {grpc}\nhttp {http}\n"),
        None => format!("grpc {grpc}\n"),
    };
    write_atomic(path, &[text.as_bytes()])
}
