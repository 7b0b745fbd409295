//! Shell completions and man pages of the three programs, from their clap command lines
//! (feature `cli-docs`): each program has a `completions SHELL` and a `man DIR` subcommand
//! that call these.
//!
//! ```
//! use tilepdb_common::cli_docs::{Shell, write_completions};
//! let cmd = clap::Command::new("demo").subcommand(clap::Command::new("build"));
//! let mut script = Vec::new();
//! write_completions(cmd, Shell::Bash, &mut script);
//! assert!(String::from_utf8(script).unwrap().contains("build"));
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

pub use clap_complete::Shell;

/// `completions SHELL`: print the completion script for a shell.
#[derive(clap::Args, Clone, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `man DIR`: write the man pages (one for the program, one per subcommand).
#[derive(clap::Args, Clone, Debug)]
pub struct ManArgs {
    /// The directory to write the pages in (made if missing), e.g. /usr/local/share/man/man1.
    pub dir: PathBuf,
}

/// Prints `cmd`'s completion script for `shell` on standard output (a closed pipe ends the
/// program quietly, as [`crate::pipe::write_stdout`] does).
pub fn print_completions(cmd: clap::Command, shell: Shell) {
    let mut script = Vec::new();
    write_completions(cmd, shell, &mut script);
    crate::pipe::write_stdout(format_args!("{}", String::from_utf8_lossy(&script)));
}

/// Writes `cmd`'s completion script for `shell` to `out` (clap's generator panics if `out`
/// fails: write to memory, or use [`print_completions`]).
///
/// `clap_complete`'s bash script for a program whose name holds a hyphen completes nothing
/// after a subcommand: the case labels of its subcommands spell the program's hyphen
/// `__subcmd__` while the loop that finds the subcommand spells it `__`. The bash script is
/// therefore generated for the name with `_` for `-` (every label then agrees) and
/// registered for the real name.
pub fn write_completions(mut cmd: clap::Command, shell: Shell, out: &mut dyn Write) {
    let name = cmd.get_name().to_string();
    if shell != Shell::Bash || !name.contains('-') {
        clap_complete::generate(shell, &mut cmd, name, out);
        return;
    }
    let stand_in = name.replace('-', "_");
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, stand_in.clone(), &mut script);
    let script = String::from_utf8_lossy(&script);
    let mut fixed = String::with_capacity(script.len());
    for line in script.split_inclusive('\n') {
        // `complete -F _FUNCTION OPTIONS... PROGRAM`: the program is the real name.
        let registered = line.trim_start().starts_with("complete -F ");
        match line.trim_end().strip_suffix(&format!(" {stand_in}")) {
            Some(head) if registered => {
                fixed.push_str(head);
                fixed.push(' ');
                fixed.push_str(&name);
                fixed.push('\n');
            }
            _ => fixed.push_str(line),
        }
    }
    let _ = out.write_all(fixed.as_bytes());
}

/// Writes the man pages of `cmd` and of each of its subcommands in `dir` (`NAME.1`,
/// `NAME-SUBCOMMAND.1`, ...); the files written.
pub fn write_man_pages(cmd: clap::Command, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    write_page(cmd, dir, &mut written)?;
    Ok(written)
}

fn write_page(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut cmd = cmd;
    cmd.build();
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    std::fs::write(&path, page)?;
    written.push(path);
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let sub = sub
            .clone()
            .display_name(format!("{name}-{}", sub.get_name()));
        write_page(sub, dir, written)?;
    }
    Ok(())
}
