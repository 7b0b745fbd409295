//! `tilepdb-coordinator completions SHELL` and `tilepdb-coordinator man DIR`: the completion
//! script and the man pages of the command line.

use anyhow::Context;
use tilepdb_common::cli_docs::{CompletionsArgs, ManArgs, print_completions, write_man_pages};

/// Prints the completion script of `cmd` for the shell asked.
#[expect(
    clippy::unnecessary_wraps,
    reason = "every command's run returns a Result"
)]
pub fn completions(cmd: clap::Command, args: CompletionsArgs) -> anyhow::Result<()> {
    print_completions(cmd, args.shell);
    Ok(())
}

/// Writes the man pages of `cmd` in the directory asked.
pub fn man(cmd: clap::Command, args: ManArgs) -> anyhow::Result<()> {
    let written = write_man_pages(cmd, &args.dir)
        .with_context(|| format!("cannot write the man pages in {}", args.dir.display()))?;
    eprintln!(
        "wrote {} man page(s) in {}",
        written.len(),
        args.dir.display()
    );
    Ok(())
}
