//! The header's one-byte codes of a goal and a blank rule, both ways.

use crate::board::Goal;
use crate::space::BlankRule;

/// The header's code of a goal.
pub fn goal_code(goal: Goal) -> u8 {
    match goal {
        Goal::BlankFirst => 0,
        Goal::BlankLast => 1,
    }
}

/// The header's code of a blank rule.
pub fn rule_code(rule: BlankRule) -> u8 {
    match rule {
        BlankRule::Minimized => 0,
        BlankRule::Aware => 1,
        BlankRule::Ignored => 2,
        BlankRule::ZeroAware => 3,
    }
}

/// The goal of a header's code; `None` for an unknown code.
pub(super) fn goal_of_code(code: u8) -> Option<Goal> {
    match code {
        0 => Some(Goal::BlankFirst),
        1 => Some(Goal::BlankLast),
        _ => None,
    }
}

/// The blank rule of a header's code; `None` for an unknown code.
pub(super) fn rule_of_code(code: u8) -> Option<BlankRule> {
    match code {
        0 => Some(BlankRule::Minimized),
        1 => Some(BlankRule::Aware),
        2 => Some(BlankRule::Ignored),
        3 => Some(BlankRule::ZeroAware),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_decodes_to_what_encoded_it() {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            assert_eq!(goal_of_code(goal_code(goal)), Some(goal));
        }
        for rule in [
            BlankRule::Minimized,
            BlankRule::Aware,
            BlankRule::Ignored,
            BlankRule::ZeroAware,
        ] {
            assert_eq!(rule_of_code(rule_code(rule)), Some(rule));
        }
        assert_eq!(goal_of_code(2), None);
        assert_eq!(rule_of_code(4), None);
    }
}
