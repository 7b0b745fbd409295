//! `tilepdb-coordinator status --watch`: the job's status asked again and again, drawn with
//! the dashboard's figures (progress and ETA per table, rates, a row per worker).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::bail;
use tilepdb_common::wire::proto::JobStatusResponse;
use tilepdb_coordinator::observe::progress::Tracker;
use tilepdb_coordinator::observe::text;

/// Asks `ask` every `every` seconds and prints the snapshot (redrawn in place on a terminal)
/// until the job is done; a coordinator that stops answering before that is an error.
pub fn run(every: f64, ask: impl Fn() -> anyhow::Result<JobStatusResponse>) -> anyhow::Result<()> {
    if !(0.1..=3600.0).contains(&every) {
        bail!("the watch interval must be between 0.1 and 3600 seconds, not {every}");
    }
    let terminal = std::io::stdout().is_terminal();
    let mut tracker = Tracker::default();
    if terminal {
        tilepdb_common::out!("\x1b[2J");
    }
    loop {
        let status = ask()?;
        let snapshot = tracker.update(&status);
        let page = text::render(&snapshot);
        if terminal {
            // Home, draw, clear what is left of the previous page.
            tilepdb_common::out!("\x1b[H{}\x1b[J", page.replace('\n', "\x1b[K\n"));
        } else {
            tilepdb_common::outln!("{page}");
        }
        if snapshot.done {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs_f64(every));
    }
}
