//! What can be wrong with a table file, a table set or a request to one.

use std::path::PathBuf;

use thiserror::Error;

use crate::space::BlankRule;

/// Why a table's bytes are not a valid table (the file is named by [`TableError::Invalid`]).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Defect {
    /// The file does not start with the format's magic bytes.
    #[error("not a tilepdb table (the magic bytes are {found:02x?}, expected {expected:02x?})")]
    Magic {
        /// The file's first bytes.
        found: Vec<u8>,
        /// The magic bytes of the format.
        expected: Vec<u8>,
    },
    /// A format major version this reader does not read.
    #[error(
        "format version {major}.{minor} is not supported: this reader reads version {supported}.x"
    )]
    Version {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
        /// The major version this reader reads.
        supported: u16,
    },
    /// The file is shorter than a header.
    #[error("truncated: {len} bytes, less than the {header}-byte header")]
    ShortHeader {
        /// The file's length in bytes.
        len: u64,
        /// The header's length in bytes.
        header: u64,
    },
    /// The header's CRC-32 does not match its bytes.
    #[error(
        "header checksum mismatch (stored {stored:08x}, computed {computed:08x}): the header is corrupt"
    )]
    HeaderChecksum {
        /// The checksum the header holds.
        stored: u32,
        /// The checksum of the header's bytes.
        computed: u32,
    },
    /// A header field with a value the format does not allow.
    #[error("bad header field {field}: {reason}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// The file is shorter than its header announces.
    #[error(
        "truncated: the file has {len} bytes, the header announces {expected} ({header} of header and {payload} of payload)"
    )]
    Truncated {
        /// The file's length in bytes.
        len: u64,
        /// The length the header announces.
        expected: u64,
        /// The header's length.
        header: u64,
        /// The payload's length.
        payload: u64,
    },
    /// The file is longer than its header announces.
    #[error(
        "{extra} unexpected bytes after the payload (the file has {len} bytes, the header announces {expected})"
    )]
    Trailing {
        /// The file's length in bytes.
        len: u64,
        /// The length the header announces.
        expected: u64,
        /// The bytes after the payload.
        extra: u64,
    },
    /// The payload's CRC-32 does not match its bytes.
    #[error(
        "payload checksum mismatch (stored {stored:08x}, computed {computed:08x}): the payload is corrupt"
    )]
    PayloadChecksum {
        /// The checksum the header holds.
        stored: u32,
        /// The checksum of the payload's bytes.
        computed: u32,
    },
}

/// Everything that can go wrong reading, writing or looking up tables.
#[derive(Debug, Error)]
pub enum TableError {
    /// The I/O error is part of the message, not a `source`, so that reports of the whole
    /// chain print it once.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A file that is not a valid table.
    #[error("{}: {defect}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with its bytes.
        defect: Defect,
    },
    /// An encoding asked for a table it cannot hold.
    #[error("the {encoding} encoding cannot hold a {rule} table: {reason}")]
    Unsupported {
        /// The encoding's name.
        encoding: String,
        /// The table's blank rule.
        rule: BlankRule,
        /// Why the encoding cannot hold it.
        reason: &'static str,
    },
    /// Text that is not an encoding.
    #[error("bad encoding {text:?}: {reason}")]
    EncodingSyntax {
        /// The text, as given.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Values kept in a packed form written in another encoding.
    #[error(
        "the values keep only what {kept} stores of each entry, so they can only be written as {kept}, not {encoding}"
    )]
    PackedEncoding {
        /// The encoding the values were kept for.
        kept: &'static str,
        /// The encoding asked for.
        encoding: String,
    },
    /// A number of values other than the table's entries.
    #[error("{values} values given for a table of {entries} entries")]
    ValueCount {
        /// The values given.
        values: u64,
        /// The table's entries.
        entries: u64,
    },
    /// A value the encoding cannot store.
    #[error("a value of {value} cannot be stored: {reason}")]
    Value {
        /// The value.
        value: u8,
        /// Why it cannot be stored.
        reason: String,
    },
    /// A look-up past the table's last entry.
    #[error("{}: index {index} is out of range: the table has {entries} entries", path.display())]
    OutOfRange {
        /// The table file.
        path: PathBuf,
        /// The index looked up.
        index: u64,
        /// The table's entries.
        entries: u64,
    },
    /// A look-up that the table cannot answer.
    #[error("{}: {reason}", path.display())]
    Lookup {
        /// The table file.
        path: PathBuf,
        /// Why it cannot be answered.
        reason: String,
    },
    /// A set manifest that is malformed or inconsistent.
    #[error("{}: {reason}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A table that does not match what its set or its caller expects.
    #[error("{}: {reason}", path.display())]
    Mismatch {
        /// The table file.
        path: PathBuf,
        /// What does not match.
        reason: String,
    },
    /// A board, pattern or state error.
    #[error(transparent)]
    Domain(#[from] crate::error::Error),
}

impl TableError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> TableError {
        TableError::Io {
            path: path.into(),
            error,
        }
    }

    /// `path`'s bytes are not a valid table.
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
