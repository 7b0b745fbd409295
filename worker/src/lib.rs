//! The worker side of a tilepdb build: executing tasks.
//!
//! A task expands the current-layer states of a rank range ([`expand_range`]) and reports every
//! state it reaches to a [`ReachedSink`]. In single-machine mode the coordinator's merge is the
//! sink itself; a remote worker collects reached states in bitmaps for the wire.

pub mod expand;

pub use expand::{ExpandStats, ReachedSink, expand_range};
