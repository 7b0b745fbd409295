//! Files named by users (tables, manifests, instances): only regular files are opened, and
//! text is read with a bound. A FIFO would block the reader until some writer came, a device
//! such as `/dev/zero` would be read until memory ran out.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// What `path` is, when it is not a regular file.
fn not_regular(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Opens `path` for reading if it is a regular file (symbolic links followed); otherwise an
/// error of kind `InvalidInput` that says what it is. A FIFO is not waited on.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    // Opening a FIFO without O_NONBLOCK waits for a writer; a regular file ignores the flag.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} where a regular file is needed", not_regular(&meta)),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // Blocking reads again (the flag is the open file's).
        // SAFETY: fcntl on a descriptor we own, with flags read from it.
        unsafe {
            let fd = file.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(file)
}

/// The text of the regular file `path`, of at most `max_bytes` bytes (larger: an error of
/// kind `InvalidData`).
pub fn read_text(path: &Path, max_bytes: u64) -> io::Result<String> {
    let file = open_regular(path)?;
    let mut text = String::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() as u64 > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than the {max_bytes} bytes such a file may have"),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_with_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_text(&file, 5).unwrap(), "12345");
        assert_eq!(
            read_text(&file, 4).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let e = read_text(dir.path(), 5).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        #[cfg(unix)]
        {
            let e = read_text(Path::new("/dev/zero"), 5).unwrap_err();
            assert!(e.to_string().contains("a device"), "{e}");
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo reads the C string.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = open_regular(&fifo).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
        }
    }
}
