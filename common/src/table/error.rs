//! What can be wrong with a table file, a table set or a request to one.

use std::path::PathBuf;

use thiserror::Error;

use crate::space::BlankRule;

/// Why a table's bytes are not a valid table (the file is named by [`TableError::Invalid`]).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Defect {
    #[error("not a tilepdb table (the magic bytes are {found:02x?}, expected {expected:02x?})")]
    Magic { found: Vec<u8>, expected: Vec<u8> },
    #[error(
        "format version {major}.{minor} is not supported: this reader reads version {supported}.x"
    )]
    Version {
        major: u16,
        minor: u16,
        supported: u16,
    },
    #[error("truncated: {len} bytes, less than the {header}-byte header")]
    ShortHeader { len: u64, header: u64 },
    #[error(
        "header checksum mismatch (stored {stored:08x}, computed {computed:08x}): the header is corrupt"
    )]
    HeaderChecksum { stored: u32, computed: u32 },
    #[error("bad header field {field}: {reason}")]
    Field { field: &'static str, reason: String },
    #[error(
        "truncated: the file has {len} bytes, the header announces {expected} ({header} of header and {payload} of payload)"
    )]
    Truncated {
        len: u64,
        expected: u64,
        header: u64,
        payload: u64,
    },
    #[error(
        "{extra} unexpected bytes after the payload (the file has {len} bytes, the header announces {expected})"
    )]
    Trailing { len: u64, expected: u64, extra: u64 },
    #[error(
        "payload checksum mismatch (stored {stored:08x}, computed {computed:08x}): the payload is corrupt"
    )]
    PayloadChecksum { stored: u32, computed: u32 },
}

/// Everything that can go wrong reading, writing or looking up tables.
#[derive(Debug, Error)]
pub enum TableError {
    /// The I/O error is part of the message, not a `source`, so that reports of the whole
    /// chain print it once.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {defect}", path.display())]
    Invalid { path: PathBuf, defect: Defect },
    #[error("the {encoding} encoding cannot hold a {rule} table: {reason}")]
    Unsupported {
        encoding: String,
        rule: BlankRule,
        reason: &'static str,
    },
    #[error("bad encoding {text:?}: {reason}")]
    EncodingSyntax { text: String, reason: String },
    #[error(
        "the values keep only what {kept} stores of each entry, so they can only be written as {kept}, not {encoding}"
    )]
    PackedEncoding {
        kept: &'static str,
        encoding: String,
    },
    #[error("{values} values given for a table of {entries} entries")]
    ValueCount { values: u64, entries: u64 },
    #[error("a value of {value} cannot be stored: {reason}")]
    Value { value: u8, reason: String },
    #[error("{}: index {index} is out of range: the table has {entries} entries", path.display())]
    OutOfRange {
        path: PathBuf,
        index: u64,
        entries: u64,
    },
    #[error("{}: {reason}", path.display())]
    Lookup { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Manifest { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Mismatch { path: PathBuf, reason: String },
    #[error(transparent)]
    Domain(#[from] crate::error::Error),
}

impl TableError {
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> TableError {
        TableError::Io {
            path: path.into(),
            error,
        }
    }

    pub fn invalid(path: impl Into<PathBuf>, defect: Defect) -> TableError {
        TableError::Invalid {
            path: path.into(),
            defect,
        }
    }

    /// The defect of an invalid file, if that is what this error is.
    pub fn defect(&self) -> Option<&Defect> {
        match self {
            TableError::Invalid { defect, .. } => Some(defect),
            _ => None,
        }
    }
}
