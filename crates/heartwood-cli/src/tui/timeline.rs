//! The conversation as lines on screen: messages and actions in the order they were recorded,
//! wrapped to the width, and only as many as the screen shows (counted from the bottom), so a
//! frame costs the same however long the session is.

use heartwood_events::{ActionState, ActionView, ConversationEntry, Role, SessionProjection};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Lines of a tool result shown while folded.
pub const FOLDED_RESULT_LINES: usize = 3;

/// Lines of a running command's output shown under it.
pub const RUNNING_OUTPUT_LINES: usize = 5;

/// What is in progress now: the running action's output so far, and the time.
#[derive(Clone, Copy)]
pub struct Progress<'a> {
    /// The running action's output, if it has printed any.
    pub output: Option<&'a heartwood_events::ToolOutput>,
    /// Now, for how long a running action has run.
    pub now: &'a heartwood_events::Timestamp,
}

/// One thing in the conversation.
enum Item<'a> {
    Message(&'a ConversationEntry),
    Action(&'a ActionView),
}

/// The lines that end `skip` lines above the bottom of the conversation, at most `height` of
/// them, oldest first. `streaming` is model text not yet recorded, shown last.
pub fn visible_lines(
    p: &SessionProjection,
    streaming: &str,
    width: usize,
    height: usize,
    skip: usize,
    expanded: bool,
    progress: Progress<'_>,
) -> Vec<Line<'static>> {
    let width = width.max(10);
    let wanted = height + skip;
    let mut lines: Vec<Line<'static>> = Vec::new();
    if !streaming.is_empty() {
        lines.extend(
            message_lines(
                "agent",
                streaming,
                Style::default().fg(Color::DarkGray),
                width,
            )
            .into_iter()
            .rev(),
        );
    }
    // Walk both lists backwards by sequence number, newest first, until the screen is full.
    let (mut m, mut a) = (p.conversation.len(), p.actions.len());
    while lines.len() < wanted && (m > 0 || a > 0) {
        let take_message = match (m.checked_sub(1), a.checked_sub(1)) {
            (Some(i), Some(j)) => p.conversation[i].seq > p.actions[j].proposed_seq,
            (Some(_), None) => true,
            _ => false,
        };
        let item = if take_message {
            m -= 1;
            Item::Message(&p.conversation[m])
        } else {
            a -= 1;
            Item::Action(&p.actions[a])
        };
        let mut block = item_lines(&item, width, expanded, progress);
        block.push(Line::default());
        lines.extend(block.into_iter().rev());
    }
    let end = lines.len().min(wanted);
    let mut shown: Vec<Line<'static>> = lines[skip.min(end)..end].to_vec();
    shown.reverse();
    shown
}

fn item_lines(
    item: &Item<'_>,
    width: usize,
    expanded: bool,
    progress: Progress<'_>,
) -> Vec<Line<'static>> {
    match item {
        Item::Message(entry) => {
            let who = entry.speaker.as_str();
            let style = match entry.role {
                Role::Researcher => Style::default().fg(Color::Cyan),
                Role::Agent => Style::default(),
                Role::System => Style::default().fg(Color::Yellow),
            };
            // One plain paragraph reads best beside the speaker, as before.
            let plain = match entry.blocks.as_slice() {
                [heartwood_events::Block::Paragraph { spans }]
                    if spans.iter().all(|s| !s.strong && !s.emphasis && !s.code) =>
                {
                    Some(spans.iter().map(|s| s.text.as_str()).collect::<String>())
                }
                _ => None,
            };
            if entry.blocks.is_empty() {
                message_lines(who, &entry.text, style, width)
            } else if let Some(text) = plain {
                message_lines(who, &text, style, width)
            } else {
                let mut lines = vec![Line::styled(
                    format!("{who}:"),
                    style.add_modifier(Modifier::BOLD),
                )];
                lines.extend(super::markdown::block_lines(&entry.blocks, 2, width));
                lines
            }
        }
        Item::Action(action) => action_lines(action, width, expanded, progress),
    }
}

fn message_lines(who: &str, text: &str, style: Style, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let label = format!("{who}: ");
    for (i, chunk) in wrap(text, width.saturating_sub(label.len()).max(8))
        .into_iter()
        .enumerate()
    {
        let lead = if i == 0 {
            Span::styled(label.clone(), style.add_modifier(Modifier::BOLD))
        } else {
            Span::raw(" ".repeat(label.len()))
        };
        out.push(Line::from(vec![lead, Span::styled(chunk, style)]));
    }
    out
}

fn action_lines(
    action: &ActionView,
    width: usize,
    expanded: bool,
    progress: Progress<'_>,
) -> Vec<Line<'static>> {
    let (mark, color) = match action.state {
        ActionState::Proposed => ("proposed", Color::Yellow),
        ActionState::Approved => ("allowed", Color::Green),
        ActionState::Running => ("running", Color::Blue),
        ActionState::Completed => ("done", Color::Green),
        ActionState::Failed => ("failed", Color::Red),
        ActionState::Rejected => ("rejected", Color::Magenta),
        ActionState::Stopped => ("stopped", Color::Yellow),
    };
    let head = format!(
        "▸ #{} {} ",
        action.proposal.action_id,
        action.headline.clone()
    );
    // The text the model sent with its calls belongs before the first of them.
    let mut out = match &action.proposal.thought {
        Some(thought) => message_lines("agent", thought, Style::default(), width),
        None => Vec::new(),
    };
    out.push(Line::from(vec![
        Span::styled(
            cut(&head, width.saturating_sub(12)),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("[{mark}]"), Style::default().fg(color)),
    ]));
    if action.state == ActionState::Running {
        let seconds = action
            .started_at
            .as_ref()
            .and_then(|t| t.millis_until(progress.now))
            .map_or(0, |ms| ms.max(0) / 1000);
        out.push(Line::styled(
            format!("    running for {seconds} s · Esc stops it now"),
            Style::default().fg(Color::Blue),
        ));
        if let Some(output) = progress
            .output
            .filter(|o| o.action_id == action.proposal.action_id)
        {
            let lines: Vec<&str> = output.text.lines().collect();
            let from = lines.len().saturating_sub(RUNNING_OUTPUT_LINES);
            for line in &lines[from..] {
                out.push(Line::styled(
                    format!("    │ {}", cut(line, width.saturating_sub(6))),
                    Style::default().fg(Color::DarkGray),
                ));
            }
        }
    }
    if let Some(detail) = &action.detail {
        let mut result: Vec<String> = detail
            .lines()
            .flat_map(|l| wrap(l, width.saturating_sub(4)))
            .collect();
        let hidden = result.len().saturating_sub(FOLDED_RESULT_LINES);
        if !expanded && hidden > 0 {
            result.truncate(FOLDED_RESULT_LINES);
            let lines = if hidden == 1 { "line" } else { "lines" };
            result.push(format!("… {hidden} more {lines} (Ctrl-E expands)"));
        }
        for line in result {
            out.push(Line::styled(
                format!("    {line}"),
                Style::default().fg(Color::DarkGray),
            ));
        }
    }
    out
}

/// Splits text into lines of at most `width` characters, breaking at spaces where possible.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for word in raw.split_inclusive(' ') {
            let wlen = word.chars().count();
            if len + wlen > width && len > 0 {
                out.push(std::mem::take(&mut line).trim_end().to_owned());
                len = 0;
            }
            if wlen > width {
                for c in word.chars() {
                    if len == width {
                        out.push(std::mem::take(&mut line));
                        len = 0;
                    }
                    line.push(c);
                    len += 1;
                }
            } else {
                line.push_str(word);
                len += wlen;
            }
        }
        out.push(line.trim_end().to_owned());
    }
    out
}

/// `text` cut to `max` characters, marked when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}
