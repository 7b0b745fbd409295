//! Standard output of the command-line programs, and closed pipes.
//!
//! The Rust runtime ignores `SIGPIPE`, so writing to a pipe whose reader has gone (`… --json |
//! head -1`) is an error, and `println!` panics on it. A command-line program wants what `cat`
//! does instead: end quietly, killed by `SIGPIPE`, when nobody reads its output any more.
//!
//! The programs cannot simply restore the default action of `SIGPIPE`: they are gRPC servers
//! and clients too, and a vectored write to a socket whose peer has gone raises `SIGPIPE` as
//! well, which would kill a coordinator without a word when a worker disconnects. So `SIGPIPE`
//! stays ignored, and [`outln!`](crate::outln) and [`out!`](crate::out) write to standard
//! output and end the process as `SIGPIPE` would only when *that* write finds the pipe closed.

use std::fmt;
use std::io::{self, Write};

/// Writes `args` to standard output; on a closed pipe the process ends as if killed by
/// `SIGPIPE`, on any other error it ends with a message and exit status 1.
///
/// ```
/// tilepdb_common::pipe::write_stdout(format_args!("{} tables\n", 2));
/// ```
pub fn write_stdout(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        drop(out);
        end_on_write_error(&e);
    }
}

fn end_on_write_error(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        #[cfg(unix)]
        // SAFETY: restoring the default action of SIGPIPE and raising it ends the process;
        // nothing runs after it that relies on the ignored disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
        std::process::exit(141);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// `println!` for the programs' standard output: a closed pipe ends the process quietly
/// ([`write_stdout`]) instead of panicking.
///
/// ```
/// tilepdb_common::outln!("{} tables", 2);
/// ```
#[macro_export]
macro_rules! outln {
    () => {
        $crate::pipe::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::pipe::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for the programs' standard output ([`outln!`](crate::outln) without the newline).
///
/// ```
/// tilepdb_common::out!("{} tables", 2);
/// ```
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::pipe::write_stdout(format_args!($($arg)*))
    };
}
