//! Which members of the pending set have been on screen: allow is refused until every line of
//! every member has been shown at least once, so nobody allows an action they never saw (a
//! long diff at 80×24 pushes later members off the screen). Drawing marks what it shows; a
//! new set, a new revision or a new width (which lays the lines out again) starts over.

use std::ops::Range;

use heartwood_events::ActionSetId;

/// What one layout of one set's review has shown so far.
#[derive(Debug, Default)]
pub struct Seen {
    /// The set, its revision and the width its lines were laid out at.
    shown: Option<(ActionSetId, u64, usize)>,
    /// Each line of the layout: shown yet?
    lines: Vec<bool>,
    /// Each member's action id and its lines.
    members: Vec<(u64, Range<usize>)>,
}

impl Seen {
    /// Records that lines `visible` of the layout (`members`, `total` lines) of `set` at
    /// revision `revision`, `width` columns wide, are on screen now.
    pub fn mark(
        &mut self,
        set: (&ActionSetId, u64, usize),
        members: Vec<(u64, Range<usize>)>,
        total: usize,
        visible: Range<usize>,
    ) {
        let key = (set.0.clone(), set.1, set.2);
        if self.shown.as_ref() != Some(&key) {
            *self = Seen {
                shown: Some(key),
                lines: Vec::new(),
                members: Vec::new(),
            };
        }
        self.lines.resize(total, false);
        for line in visible.start.min(total)..visible.end.min(total) {
            self.lines[line] = true;
        }
        self.members = members;
    }

    /// The members of `set` (revision `revision`) not wholly shown yet, by action id; all of
    /// `ids` when this set's review has not been drawn.
    pub fn unseen(&self, set: &ActionSetId, revision: u64, ids: &[u64]) -> Vec<u64> {
        match &self.shown {
            Some((shown, rev, _)) if shown == set && *rev == revision => self
                .members
                .iter()
                .filter(|(_, lines)| {
                    lines
                        .clone()
                        .any(|l| !self.lines.get(l).copied().unwrap_or(false))
                })
                .map(|(id, _)| *id)
                .collect(),
            _ => ids.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_counts_as_seen_once_all_its_lines_were_shown_and_a_new_layout_starts_over() {
        let set = ActionSetId::parse("set-1").expect("id");
        let members = vec![(1, 0..3), (2, 3..10)];
        let mut seen = Seen::default();
        assert_eq!(seen.unseen(&set, 1, &[1, 2]), [1, 2], "nothing drawn yet");
        seen.mark((&set, 1, 80), members.clone(), 10, 0..5);
        assert_eq!(seen.unseen(&set, 1, &[1, 2]), [2]);
        seen.mark((&set, 1, 80), members.clone(), 10, 5..10);
        assert!(seen.unseen(&set, 1, &[1, 2]).is_empty(), "scrolled through");
        assert_eq!(seen.unseen(&set, 2, &[1, 2]), [1, 2], "a new revision");
        seen.mark((&set, 1, 100), members, 10, 0..5);
        assert_eq!(
            seen.unseen(&set, 1, &[1, 2]),
            [2],
            "a new width lays it out again"
        );
    }
}
