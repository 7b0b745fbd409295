//! A delivered result of a task checked against the attempts issued for it ([`Verdict`],
//! [`Rejection`]), and its merge recorded.

use std::ops::Range;

use super::{LayerTasks, TaskState};

/// What to do with a result of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Needed: read it and merge it. The task's current states.
    Accept {
        /// The task's current states.
        states: u64,
    },
    /// Valid, not needed.
    Drop(&'static str),
}

/// A result that the layer refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// It names a task or an attempt the layer never had.
    #[error("{0}")]
    Invalid(String),
    /// It names an attempt leased to another worker.
    #[error("{0}")]
    NotYours(String),
}

impl LayerTasks {
    /// Checks a result of attempt `attempt` of task `index`, delivered by `worker`, that says
    /// it covers `units`.
    pub fn check(
        &self,
        index: usize,
        units: &Range<u64>,
        attempt: u64,
        worker: u64,
    ) -> Result<Verdict, Rejection> {
        let Some(task) = self.tasks.get(index) else {
            return Err(Rejection::Invalid(format!(
                "task {index} of a layer of {} tasks",
                self.tasks.len()
            )));
        };
        if task.units != *units {
            return Err(Rejection::Invalid(format!(
                "ranks {}..{} are not task {index}'s {:?}",
                units.start, units.end, task.units
            )));
        }
        let Some(issued) = task.issued.iter().find(|h| h.attempt == attempt) else {
            return Err(Rejection::Invalid(format!(
                "attempt {attempt:#x} of task {index} was never issued"
            )));
        };
        if issued.worker != worker {
            return Err(Rejection::NotYours(format!(
                "attempt {attempt:#x} of task {index} was leased to another worker"
            )));
        }
        if matches!(task.state, TaskState::Done | TaskState::Merging) {
            return Ok(Verdict::Drop("the task is done already"));
        }
        Ok(Verdict::Accept {
            states: task.states,
        })
    }

    /// Starts merging a result of task `index`; false if another result got there first.
    pub fn begin_merge(&mut self, index: usize) -> bool {
        match self.tasks.get_mut(index) {
            Some(t) if matches!(t.state, TaskState::Pending | TaskState::Leased) => {
                t.state = TaskState::Merging;
                true
            }
            _ => false,
        }
    }

    /// Marks the merge of task `index` done; whether the layer is complete.
    pub fn complete(&mut self, index: usize) -> bool {
        if let Some(t) = self.tasks.get_mut(index)
            && t.state == TaskState::Merging
        {
            t.state = TaskState::Done;
            t.holders.clear();
            self.done += 1;
            self.pending.retain(|&i| i != index);
        }
        self.is_complete()
    }
}
