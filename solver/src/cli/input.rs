//! Reading states: one per line of a file or standard input, or from the command line.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use tilepdb_common::{Board, PuzzleState};

/// Where states come from.
#[derive(Args)]
pub struct StateInput {
    /// A file of states, one per line as the tile on each cell row-major (0 = blank), like
    /// data/korf100.txt; `-` for standard input. Blank lines and lines starting with # are skipped.
    pub file: Option<PathBuf>,
    /// A state on the command line (repeatable), e.g. --state "1 0 2 3 4 5 6 7 8".
    #[arg(long = "state", value_name = "TILES")]
    pub states: Vec<String>,
}

/// Most bytes of an instances file: 100 million 24-puzzle states.
const MAX_INSTANCES_BYTES: u64 = 8 << 30;

impl StateInput {
    /// The states, each with a label (`file:line` or `--state N`).
    pub fn read(&self, board: Board) -> anyhow::Result<Vec<(String, PuzzleState)>> {
        let mut states = Vec::new();
        for (i, text) in self.states.iter().enumerate() {
            let state =
                PuzzleState::parse(board, text).with_context(|| format!("--state {}", i + 1))?;
            states.push((format!("state {}", i + 1), state));
        }
        if let Some(path) = &self.file {
            let (name, text) = if path.as_os_str() == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("reading standard input")?;
                ("stdin".to_string(), text)
            } else {
                // A regular file only (a FIFO would block, a device be read for ever).
                let text = tilepdb_common::files::read_text(path, MAX_INSTANCES_BYTES)
                    .with_context(|| format!("reading {}", path.display()))?;
                (path.display().to_string(), text)
            };
            for (no, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let state = PuzzleState::parse(board, line)
                    .with_context(|| format!("{name}:{}", no + 1))?;
                states.push((format!("{name}:{}", no + 1), state));
            }
        }
        if states.is_empty() {
            anyhow::bail!("no states given: pass a file (or - for standard input) or --state");
        }
        Ok(states)
    }
}
