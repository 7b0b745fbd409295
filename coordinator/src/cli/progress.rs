//! Build progress: a bar per layer on a terminal, log lines otherwise.

use std::io::IsTerminal;
use std::ops::Range;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use tilepdb_coordinator::build::BuildObserver;
use tilepdb_worker::ExpandStats;

/// Shows the layers of one table's build.
pub struct LayerProgress {
    label: String,
    bar: Option<Mutex<Option<ProgressBar>>>,
}

impl LayerProgress {
    pub fn new(label: String) -> LayerProgress {
        let bar = std::io::stderr().is_terminal().then(|| Mutex::new(None));
        LayerProgress { label, bar }
    }
}

impl BuildObserver for LayerProgress {
    fn layer_started(&self, depth: u32, states: u64, tasks: usize) {
        if let Some(slot) = &self.bar {
            let bar = ProgressBar::new(tasks as u64).with_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {pos}/{len} tasks {msg} ({elapsed})",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(format!("{} layer {depth:>3}", self.label));
            bar.set_message(format!("{states} states"));
            *slot.lock().unwrap() = Some(bar);
        } else {
            tracing::debug!(table = %self.label, depth, states, tasks, "layer started");
        }
    }

    fn task_finished(&self, _ranks: &Range<u64>) {
        if let Some(slot) = &self.bar
            && let Some(bar) = slot.lock().unwrap().as_ref()
        {
            bar.inc(1);
        }
    }

    fn layer_finished(&self, depth: u32, added: u64, stats: ExpandStats) {
        if let Some(slot) = &self.bar {
            if let Some(bar) = slot.lock().unwrap().take() {
                bar.finish_and_clear();
            }
        } else {
            tracing::info!(
                table = %self.label,
                depth,
                expanded = stats.expanded,
                next_layer = added,
                "layer done"
            );
        }
    }
}
