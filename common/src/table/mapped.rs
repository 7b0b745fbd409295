//! A mapped table file that shrinks under its reader ends the process with a message that
//! names the file, not a bare SIGBUS (exit 135).
//!
//! Reading a page of a file map past the file's end raises SIGBUS: a table truncated while a
//! solver, `serve` or `verify` has it mapped. Each map of a table file is recorded here
//! ([`MappedTable`]: its addresses and its path, in a fixed array of atomics that a signal
//! handler may read), and the first one installs a SIGBUS handler. The handler looks the
//! faulting address up: inside a recorded map it writes
//! `error: the table file PATH changed while mapped: …` to standard error and exits with
//! status 1, as the programs do on any other error; elsewhere it writes a shorter message
//! and exits the same way. It only reads atomics and calls `write` and `_exit`, which are
//! safe in a signal handler.

use std::path::Path;
use std::sync::Once;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// How many maps are recorded at once (a map past them is simply not named).
const SLOTS: usize = 256;
/// The bytes of a path kept for the message (a longer one is cut).
const PATH_BYTES: usize = 240;

/// One recorded map: `start == 0` is a free slot, [`BUSY`] one being written.
struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    path_len: AtomicUsize,
    path: [AtomicU8; PATH_BYTES],
}

const BUSY: usize = usize::MAX;

#[allow(
    clippy::declare_interior_mutable_const,
    reason = "the initial value of each slot of the static array"
)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    path_len: AtomicUsize::new(0),
    path: [const { AtomicU8::new(0) }; PATH_BYTES],
};

static MAPS: [Slot; SLOTS] = [FREE; SLOTS];
static INSTALL: Once = Once::new();

/// A map of a table file recorded for the SIGBUS handler while it lives.
pub struct MappedTable {
    slot: Option<usize>,
}

impl MappedTable {
    /// Records the map of `len` bytes at `start` of the file `path` (and installs the
    /// handler, once).
    pub fn record(start: *const u8, len: usize, path: &Path) -> MappedTable {
        INSTALL.call_once(install);
        let start = start as usize;
        if start == 0 || start == BUSY || len == 0 {
            return MappedTable { slot: None };
        }
        let Some(i) = MAPS.iter().position(|s| {
            s.start
                .compare_exchange(0, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            return MappedTable { slot: None };
        };
        let slot = &MAPS[i];
        let bytes = path.as_os_str().as_encoded_bytes();
        let n = bytes.len().min(PATH_BYTES);
        for (cell, &b) in slot.path.iter().zip(&bytes[..n]) {
            cell.store(b, Ordering::Relaxed);
        }
        slot.path_len.store(n, Ordering::Relaxed);
        slot.len.store(len, Ordering::Relaxed);
        slot.start.store(start, Ordering::Release);
        MappedTable { slot: Some(i) }
    }
}

impl Drop for MappedTable {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            MAPS[i].start.store(0, Ordering::Release);
        }
    }
}

#[cfg(unix)]
fn install() {
    // SAFETY: a plain sigaction with a handler that only reads atomics and calls write(2)
    // and _exit(2).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&raw mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &raw const action, std::ptr::null_mut());
    }
}

#[cfg(not(unix))]
fn install() {}

/// Writes `bytes` to standard error (in a signal handler).
#[cfg(unix)]
fn say(bytes: &[u8]) {
    // SAFETY: write(2) of a valid buffer; async-signal-safe.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

/// Writes `n` in decimal (in a signal handler).
#[cfg(unix)]
fn say_number(mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789"[n % 10];
        n /= 10;
        if n == 0 {
            break;
        }
    }
    say(&digits[i..]);
}

#[cfg(unix)]
extern "C" fn on_sigbus(
    _signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in &MAPS {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || start == BUSY {
            continue;
        }
        let len = slot.len.load(Ordering::Relaxed);
        if addr < start || addr - start >= len {
            continue;
        }
        let mut path = [0u8; PATH_BYTES];
        let n = slot.path_len.load(Ordering::Relaxed).min(PATH_BYTES);
        for (b, cell) in path.iter_mut().zip(&slot.path) {
            *b = cell.load(Ordering::Relaxed);
        }
        say(b"error: the table file ");
        say(&path[..n]);
        say(b" changed while mapped: reading byte ");
        say_number(addr - start);
        say(b" of its ");
        say_number(len);
        say(b" failed (SIGBUS: the file was truncated or replaced in place; table files must not be modified while in use)\n");
        // SAFETY: _exit(2) is async-signal-safe.
        unsafe { libc::_exit(1) };
    }
    say(b"error: a memory-mapped file shrank while in use (SIGBUS at an address of no table file)\n");
    // SAFETY: _exit(2) is async-signal-safe.
    unsafe { libc::_exit(1) };
}
