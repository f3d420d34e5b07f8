//! The journal as a crate carries it: every audit record, and only the event lines the
//! provenance rests on (registration, the workflow's transitions, decisions, usage), each
//! byte for byte, so a verifier can hash them against their records. Messages, tool
//! arguments and outputs stay out, as they stay out of the audit records.

use heartwood_events::{Event, RecordedEvent};

use super::CrateError;

/// The event kinds a crate carries verbatim.
pub const CARRIED: &[&str] = &[
    "session_registered",
    "workflow_started",
    "workflow_stage_started",
    "workflow_stage_evaluated",
    "workflow_stage_accepted",
    "workflow_budget_exhausted",
    "workflow_reproduction_prepared",
    "workflow_reproduction_completed",
    "workflow_correction_bound",
    "workflow_cancelled",
    "decision_recorded",
    "usage_recorded",
];

/// The session's events, decoded, with the carried lines.
pub struct Journal {
    /// Every event, in order.
    pub events: Vec<RecordedEvent>,
    /// The carried event lines, each ending in a newline.
    pub carried: Vec<u8>,
}

impl Journal {
    /// Decodes a bundle's `events.jsonl`.
    pub fn read(events: &[u8]) -> Result<Self, CrateError> {
        let mut decoded = Vec::new();
        let mut carried = Vec::new();
        for (n, line) in events.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let event = RecordedEvent::decode(line)
                .map_err(|e| CrateError::Journal(format!("event line {}: {e}", n + 1)))?;
            if CARRIED.contains(&event.event.kind()) {
                carried.extend_from_slice(line);
                carried.push(b'\n');
            }
            decoded.push(event);
        }
        Ok(Journal {
            events: decoded,
            carried,
        })
    }

    /// The workflow definition the session runs, if any.
    pub fn started(&self) -> Option<(&RecordedEvent, &heartwood_events::workflow::WorkflowStart)> {
        self.events.iter().find_map(|e| match &e.event {
            Event::WorkflowStarted(start) => Some((e, start.as_ref())),
            _ => None,
        })
    }
}
