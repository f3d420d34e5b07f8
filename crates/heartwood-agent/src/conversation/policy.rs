//! Confirmation policies: whether an action set must wait for a person.

use serde::{Deserialize, Serialize};

use crate::tools::Risk;

/// When a proposed action set stops for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum ConfirmationPolicy {
    /// Every set waits (the default).
    AlwaysConfirm,
    /// Nothing waits.
    NeverConfirm,
    /// A set waits when any member is at or above `threshold`, or is unrated and
    /// `confirm_unknown` is set.
    ConfirmRisky {
        /// The lowest risk that waits.
        threshold: Risk,
        /// Whether unrated calls wait.
        confirm_unknown: bool,
    },
}

impl ConfirmationPolicy {
    /// Whether one call of this `risk` needs a person.
    pub fn needs_confirmation(&self, risk: Risk) -> bool {
        match self {
            ConfirmationPolicy::AlwaysConfirm => true,
            ConfirmationPolicy::NeverConfirm => false,
            ConfirmationPolicy::ConfirmRisky {
                threshold,
                confirm_unknown,
            } => match risk {
                Risk::Unknown => *confirm_unknown,
                known => known >= *threshold,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirm_risky_uses_the_threshold_and_the_unknown_flag() {
        let policy = ConfirmationPolicy::ConfirmRisky {
            threshold: Risk::Medium,
            confirm_unknown: true,
        };
        assert!(!policy.needs_confirmation(Risk::Low));
        assert!(policy.needs_confirmation(Risk::Medium));
        assert!(policy.needs_confirmation(Risk::High));
        assert!(policy.needs_confirmation(Risk::Unknown));
        let lenient = ConfirmationPolicy::ConfirmRisky {
            threshold: Risk::High,
            confirm_unknown: false,
        };
        assert!(!lenient.needs_confirmation(Risk::Unknown));
        assert!(!lenient.needs_confirmation(Risk::Medium));
        assert!(ConfirmationPolicy::AlwaysConfirm.needs_confirmation(Risk::Low));
        assert!(!ConfirmationPolicy::NeverConfirm.needs_confirmation(Risk::High));
    }
}
