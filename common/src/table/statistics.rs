//! Statistics of a table set for choosing one: its mean value, and its mean heuristic over
//! seeded uniformly random solvable states, with and without the reflection, beside Manhattan's
//! on the same states.
//!
//! A table's mean value is the mean over its reached entries (its histogram's mean): for
//! minimized and aware tables every entry stands for the same number of puzzle states, so the
//! set's mean value (the sum of its tables' means) is the expected heuristic of a random state
//! without reflection; a zero-aware table's entries are (placement, region of the blank) and
//! regions differ in size, so there the mean over random states is the figure to read.
//!
//! ```
//! use tilepdb_common::table::statistics::SetStatistics;
//! # fn show(set: &tilepdb_common::table::TableSet) -> Result<(), tilepdb_common::table::TableError> {
//! let s = SetStatistics::of(set, 1000, 1)?;
//! println!("mean value {:.2}, over random states {:?}", s.mean_value, s.mean_heuristic);
//! # Ok(())
//! # }
//! ```

use serde::Serialize;

use super::header::histogram_mean;
use super::{TableError, TableSet};
use crate::generate;

/// What [`SetStatistics::of`] finds (JSON keys in this order).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetStatistics {
    /// The sum of the tables' mean values, each over its reached entries.
    pub mean_value: f64,
    /// Uniformly random solvable states the means below are taken over.
    pub random_states: usize,
    /// Their seed ([`crate::generate::random_states`]).
    pub seed: u64,
    /// The set's mean value over those states (null without states).
    pub mean_heuristic: Option<f64>,
    /// The same with the reflection about the main diagonal (null where it does not apply).
    pub mean_heuristic_reflected: Option<f64>,
    /// Manhattan distance's mean over the same states.
    pub mean_manhattan: Option<f64>,
}

fn mean(values: &[u32]) -> Option<f64> {
    (!values.is_empty())
        .then(|| values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64)
}

impl SetStatistics {
    /// The statistics of `set` over the first `random_states` states of `seed`. Mod3 and 1-bit
    /// tables are read by descent to the goal, slower than a search's lookups but exact.
    pub fn of(
        set: &TableSet,
        random_states: usize,
        seed: u64,
    ) -> Result<SetStatistics, TableError> {
        let mean_value = set
            .tables()
            .iter()
            .map(|t| histogram_mean(&t.header().histogram).unwrap_or(0.0))
            .sum();
        let states = generate::random_states(set.board(), set.goal(), seed, random_states);
        let mut plain = Vec::with_capacity(states.len());
        let mut reflected = Vec::with_capacity(states.len());
        let mut manhattan = Vec::with_capacity(states.len());
        let cells = u8::try_from(set.board().cells()).unwrap_or(u8::MAX);
        let every_tile: Vec<u8> = (1..cells).collect();
        for state in &states {
            plain.push(set.value(state)?);
            if set.reflection() {
                reflected.push(set.value_reflected(state)?);
            }
            manhattan.push(state.manhattan(set.goal(), &every_tile));
        }
        Ok(SetStatistics {
            mean_value,
            random_states,
            seed,
            mean_heuristic: mean(&plain),
            mean_heuristic_reflected: mean(&reflected),
            mean_manhattan: mean(&manhattan),
        })
    }
}
