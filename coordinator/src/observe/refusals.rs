//! Results refused, counted by reason (the gRPC status code sent back to the worker).

use std::collections::BTreeMap;
use std::sync::Mutex;

use tonic::Code;

/// Counts of refused results by reason; shared by the gRPC service (which refuses) and the
/// job's status (which reports).
#[derive(Debug, Default)]
pub struct RefusalCounts {
    counts: Mutex<BTreeMap<String, u64>>,
}

impl RefusalCounts {
    /// Counts one refusal with `code`.
    pub fn count(&self, code: Code) {
        *self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(reason(code))
            .or_default() += 1;
    }

    /// Every reason seen and its count.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// A status code's name in lower case words: `invalid argument`, `failed precondition`.
pub fn reason(code: Code) -> String {
    // `Code::description` reads "Client specified an invalid argument"; the Debug name is
    // the variant's (`InvalidArgument`), which this spells out.
    let name = format!("{code:?}");
    let mut words = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            words.push(' ');
        }
        words.extend(c.to_lowercase());
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_reason() {
        let r = RefusalCounts::default();
        r.count(Code::InvalidArgument);
        r.count(Code::InvalidArgument);
        r.count(Code::FailedPrecondition);
        let s = r.snapshot();
        assert_eq!(s.get("invalid argument"), Some(&2));
        assert_eq!(s.get("failed precondition"), Some(&1));
        assert_eq!(s.len(), 2);
        assert_eq!(reason(Code::NotFound), "not found");
        assert_eq!(reason(Code::Ok), "ok");
    }
}
