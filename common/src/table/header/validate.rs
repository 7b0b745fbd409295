//! A whole file's bytes checked: its header, its length and its payload's checksum.

use crate::table::error::Defect;

use super::Header;
use super::layout::HEADER_LEN;

impl Header {
    /// Validates a whole file's bytes: the header ([`Header::parse`]), the file's length and
    /// the payload's checksum.
    pub fn validate_file(bytes: &[u8]) -> Result<Header, Defect> {
        Header::validate_file_with(bytes, crc32fast::hash)
    }

    /// [`Header::validate_file`], the payload's CRC-32 computed by `payload_crc` (which may
    /// read the payload in parts, and let each go once read).
    pub fn validate_file_with(
        bytes: &[u8],
        payload_crc: impl FnOnce(&[u8]) -> u32,
    ) -> Result<Header, Defect> {
        let header = Header::parse(bytes)?;
        let len = bytes.len() as u64;
        let expected = header.file_len();
        if len < expected {
            return Err(Defect::Truncated {
                len,
                expected,
                header: HEADER_LEN as u64,
                payload: header.payload_len,
            });
        }
        if len > expected {
            return Err(Defect::Trailing {
                len,
                expected,
                extra: len - expected,
            });
        }
        let computed = payload_crc(&bytes[HEADER_LEN..]);
        if computed != header.payload_crc32 {
            return Err(Defect::PayloadChecksum {
                stored: header.payload_crc32,
                computed,
            });
        }
        Ok(header)
    }
}
