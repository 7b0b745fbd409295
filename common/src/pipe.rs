//! Command-line programs and closed pipes.
//!
//! The Rust runtime ignores `SIGPIPE`, so writing to a pipe whose reader has gone (`… --json |
//! head -1`) is an error, and `println!` panics on it. A command-line program wants the Unix
//! default instead: end quietly, as `cat` does, when nobody reads its output any more.

/// Restores the default action of `SIGPIPE` (the process ends, without a message, on its first
/// write to a closed pipe). Call it first in `main` of a command-line program; it does nothing
/// on systems without `SIGPIPE`.
///
/// ```
/// tilepdb_common::pipe::end_quietly_on_closed_pipe();
/// println!("written to a reader that may close early");
/// ```
pub fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: `signal` with `SIG_DFL` installs no handler of ours; it only changes the
    // disposition of SIGPIPE, which no other part of these programs relies on.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
