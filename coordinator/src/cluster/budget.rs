//! The results being received: one stream per attempt, and the bytes they hold counted per
//! worker and in all, charged as they arrive (a stream that declares a large result but sends
//! nothing holds nothing).
//!
//! A result is charged its bytes as its chunks come, then the states it decodes (8 bytes
//! each) before they are decoded; a result larger than a worker's share is charged that
//! share (it is read alone). A charge over the worker's share or over the total is refused:
//! the worker tries again later.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes of results read and decoded at once, over every worker.
pub const RESULT_BYTES_IN_FLIGHT: u64 = 128 << 20;
/// Bytes of results one worker may have in flight at once.
pub const WORKER_RESULT_BYTES: u64 = RESULT_BYTES_IN_FLIGHT / 2;

/// Why a stream or a charge was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetRefusal {
    /// A stream of the same attempt is being received.
    #[error("a result for this attempt is being received already (one stream per attempt)")]
    SecondStream,
    /// The worker's share is held by its other results.
    #[error(
        "this worker's results being received hold as many bytes as one worker may; try again shortly"
    )]
    WorkerFull,
    /// Every byte of the budget is held.
    #[error("as many results are being read as this coordinator holds at once; try again shortly")]
    Full,
}

#[derive(Default)]
struct State {
    total: u64,
    per_worker: HashMap<u64, u64>,
    /// (task id, attempt) of the streams being received.
    streams: HashSet<(u64, u64)>,
}

/// The budget of the results being received.
#[derive(Clone, Default)]
pub struct ResultBudget {
    state: Arc<Mutex<State>>,
}

impl ResultBudget {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts receiving the result of `attempt` of task `task_id` from `worker`, to be
    /// charged `need` bytes in all (capped at the worker's share); refused if a stream of the
    /// same attempt is being received.
    pub fn open(
        &self,
        worker: u64,
        task_id: u64,
        attempt: u64,
        need: u64,
    ) -> Result<ResultCharge, BudgetRefusal> {
        if !self.lock().streams.insert((task_id, attempt)) {
            return Err(BudgetRefusal::SecondStream);
        }
        Ok(ResultCharge {
            budget: self.clone(),
            worker,
            stream: (task_id, attempt),
            cap: need.min(WORKER_RESULT_BYTES),
            held: 0,
        })
    }

    /// Bytes held now, over every worker.
    pub fn held(&self) -> u64 {
        self.lock().total
    }
}

/// What one result stream holds; given back when dropped.
pub struct ResultCharge {
    budget: ResultBudget,
    worker: u64,
    stream: (u64, u64),
    /// Most bytes this result is charged.
    cap: u64,
    held: u64,
}

impl ResultCharge {
    /// Charges `bytes` more (received, or about to be decoded), up to the result's cap.
    pub fn charge(&mut self, bytes: u64) -> Result<(), BudgetRefusal> {
        let add = bytes.min(self.cap - self.held);
        if add == 0 {
            return Ok(());
        }
        let mut st = self.budget.lock();
        let worker = st.per_worker.get(&self.worker).copied().unwrap_or(0);
        if worker + add > WORKER_RESULT_BYTES {
            return Err(BudgetRefusal::WorkerFull);
        }
        if st.total + add > RESULT_BYTES_IN_FLIGHT {
            return Err(BudgetRefusal::Full);
        }
        st.total += add;
        *st.per_worker.entry(self.worker).or_default() += add;
        self.held += add;
        Ok(())
    }

    /// Bytes this result holds.
    pub fn held(&self) -> u64 {
        self.held
    }
}

impl Drop for ResultCharge {
    fn drop(&mut self) {
        let mut st = self.budget.lock();
        st.streams.remove(&self.stream);
        st.total -= self.held;
        if let Some(w) = st.per_worker.get_mut(&self.worker) {
            *w -= self.held;
            if *w == 0 {
                st.per_worker.remove(&self.worker);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stream_per_attempt_and_charges_per_worker() {
        let budget = ResultBudget::default();
        let mut a = budget.open(1, 10, 7, 100 << 20).unwrap();
        assert_eq!(
            budget.open(1, 10, 7, 1).err(),
            Some(BudgetRefusal::SecondStream)
        );
        // Another attempt of the same task is another stream.
        let mut b = budget.open(1, 10, 8, 100 << 20).unwrap();
        assert_eq!(budget.held(), 0, "nothing held before bytes arrive");
        a.charge(40 << 20).unwrap();
        a.charge(1 << 30).unwrap();
        assert_eq!(a.held(), WORKER_RESULT_BYTES, "capped at the share");
        assert_eq!(b.charge(1), Err(BudgetRefusal::WorkerFull));
        // Other workers still get theirs, up to the total.
        let mut c = budget.open(2, 11, 1, u64::MAX).unwrap();
        c.charge(u64::MAX).unwrap();
        let mut d = budget.open(3, 12, 1, u64::MAX).unwrap();
        assert_eq!(d.charge(1), Err(BudgetRefusal::Full));
        drop(a);
        assert_eq!(budget.held(), WORKER_RESULT_BYTES);
        b.charge(5).unwrap();
        drop((b, c, d));
        assert_eq!(budget.held(), 0);
        assert!(
            budget.open(1, 10, 7, 1).is_ok(),
            "the attempt's stream is free again"
        );
    }
}
