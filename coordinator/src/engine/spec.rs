//! [`SetSpec`]: what defines a table set, and the names made from it.

use std::path::{Path, PathBuf};

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};

use crate::error::Result;

/// The four values that define a table set: its partition, goal, blank rule and encoding.
///
/// ```
/// use tilepdb_common::table::Encoding;
/// use tilepdb_common::{BlankRule, Goal, Partition};
/// use tilepdb_coordinator::engine::SetSpec;
/// let spec = SetSpec::new(Partition::named("15:6-6-3").unwrap(), Goal::BlankFirst,
///                         BlankRule::Minimized, Encoding::Byte).unwrap();
/// assert!(spec.dir("tables".as_ref()).ends_with("4x4-6-6-3-minimized-blank-first"));
/// assert!(spec.job_id().starts_with("4x4-6-6-3-minimized-blank-first-"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetSpec {
    /// The patterns of the set.
    pub partition: Partition,
    /// The goal every table measures the distance to.
    pub goal: Goal,
    /// What the tables do with the blank.
    pub rule: BlankRule,
    /// How the finished tables are stored.
    pub encoding: Encoding,
}

impl SetSpec {
    /// The spec, checked (an encoding that cannot store the rule's tables is refused).
    pub fn new(
        partition: Partition,
        goal: Goal,
        rule: BlankRule,
        encoding: Encoding,
    ) -> Result<SetSpec> {
        encoding.check_rule(rule)?;
        Ok(SetSpec {
            partition,
            goal,
            rule,
            encoding,
        })
    }

    /// The state space of each pattern, in the partition's order.
    pub fn spaces(&self) -> Result<Vec<StateSpace>> {
        self.partition
            .patterns()
            .iter()
            .map(|p| StateSpace::new(self.partition.board(), self.goal, p.clone(), self.rule))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Into::into)
    }

    /// The set's directory under `out`, named after the partition, blank rule, goal and
    /// encoding (`4x4-6-6-3-minimized-blank-first` for a known partition in bytes;
    /// `4x4-1.2.3_4.5.6-aware-blank-first-mod3` for patterns of one's own).
    pub fn dir(&self, out: &Path) -> PathBuf {
        let partition = &self.partition;
        let known = Partition::named(partition.name()).is_ok_and(|k| k == *partition);
        let groups = if known {
            partition
                .patterns()
                .iter()
                .map(|p| p.len().to_string())
                .collect::<Vec<_>>()
                .join("-")
        } else {
            partition
                .patterns()
                .iter()
                .map(|p| {
                    p.tiles()
                        .iter()
                        .map(std::string::ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(".")
                })
                .collect::<Vec<_>>()
                .join("_")
        };
        let suffix = match self.encoding {
            Encoding::Byte => String::new(),
            e => format!("-{}", e.to_string().replace(':', "-")),
        };
        out.join(format!(
            "{}-{groups}-{}-{}{suffix}",
            partition.board(),
            self.rule,
            self.goal
        ))
    }

    /// The distributed job's identity: the tables' definition and encoding, hashed (FNV-1a),
    /// after a readable name.
    pub fn job_id(&self) -> String {
        let mut text = format!(
            "{}|{}|{}|{}",
            self.partition.board(),
            self.goal,
            self.rule,
            self.encoding
        );
        for p in self.partition.patterns() {
            text.push('|');
            text.push_str(
                &p.tiles()
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for b in text.bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        let sizes = self
            .partition
            .patterns()
            .iter()
            .map(|p| p.len().to_string())
            .collect::<Vec<_>>()
            .join("-");
        format!(
            "{}-{sizes}-{}-{}-{:012x}",
            self.partition.board(),
            self.rule,
            self.goal,
            hash >> 16
        )
    }
}
