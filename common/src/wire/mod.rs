//! The wire protocol between coordinator and workers (feature `wire`).
//!
//! * [`proto`]: the generated messages, client and server of `proto/tilepdb/v1`;
//! * [`chunk`]: sections of bytes as checked, bounded zstd chunks;
//! * [`states`]: the encodings of a task's input and result.

pub mod chunk;
pub mod states;

/// The generated code of package `tilepdb.v1`.
pub mod proto {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("tilepdb.v1");
}

/// The protocol version of this build; a peer of another version is refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest decompressed chunk (1 MiB): far below gRPC's 4 MiB message limit even when the
/// data does not compress.
pub const MAX_CHUNK_BYTES: u32 = 1 << 20;

/// The metadata key of the shared token (`Bearer <token>`).
pub const AUTH_HEADER: &str = "authorization";
