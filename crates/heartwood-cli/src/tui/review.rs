//! The review as lines: each member's headline and risk, then exactly what it would do, from the
//! gateway's [`Review`]. Nothing here summarizes a tool call; colours only mark what the
//! preview says (added, removed, would fail).

use heartwood_events::{Preview, Review, RiskLevel};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::timeline::wrap;

/// Every line of the review at `width` columns, and the lines of each member (by action id).
pub fn review_lines(
    review: &Review,
    width: usize,
) -> (Vec<Line<'static>>, Vec<(u64, std::ops::Range<usize>)>) {
    let mut out = Vec::new();
    let mut members = Vec::with_capacity(review.members.len());
    for member in &review.members {
        let start = out.len();
        let mut head = vec![
            Span::styled(
                format!("#{} ", member.action_id),
                Style::default().fg(Color::DarkGray),
            ),
            Span::styled(
                member.headline.clone(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                format!("  [{} risk]", member.risk.as_str()),
                Style::default().fg(risk_colour(member.risk)),
            ),
        ];
        if let Some(predicted) = &member.predicted_risk {
            head.push(Span::styled(
                format!("  (model predicts {})", predicted.to_lowercase()),
                Style::default().fg(Color::DarkGray),
            ));
        }
        out.push(Line::from(head));
        preview_lines(&member.preview, width.saturating_sub(4), &mut out);
        members.push((member.action_id, start..out.len()));
        out.push(Line::default());
    }
    (out, members)
}

fn risk_colour(risk: RiskLevel) -> Color {
    match risk {
        RiskLevel::Low => Color::Green,
        RiskLevel::Medium => Color::Yellow,
        RiskLevel::High | RiskLevel::Unknown => Color::Red,
    }
}

fn push_wrapped(
    out: &mut Vec<Line<'static>>,
    prefix: &str,
    text: &str,
    width: usize,
    style: Style,
) {
    let room = width.saturating_sub(prefix.chars().count()).max(8);
    for (i, line) in wrap(text, room).into_iter().enumerate() {
        let lead = if i == 0 {
            prefix.to_owned()
        } else {
            " ".repeat(prefix.chars().count())
        };
        out.push(Line::styled(format!("    {lead}{line}"), style));
    }
}

fn preview_lines(preview: &Preview, width: usize, out: &mut Vec<Line<'static>>) {
    let dim = Style::default().fg(Color::DarkGray);
    let omitted = |out: &mut Vec<Line<'static>>, n: usize| {
        if n > 0 {
            out.push(Line::styled(
                format!("    … {n} more lines not shown here (`heartwood sessions show` prints them all)"),
                dim,
            ));
        }
    };
    match preview {
        Preview::Command {
            command,
            input,
            context,
            ..
        } => {
            // Where it runs (the sandbox's level) is part of what is allowed: wrapped, never cut.
            push_wrapped(out, "", context, width, dim);
            for line in heartwood_events::shell_lines(command) {
                let prompt = line.prompt(*input);
                push_wrapped(
                    out,
                    prompt,
                    line.text,
                    width,
                    Style::default().fg(Color::Cyan),
                );
            }
        }
        Preview::Create {
            path,
            content,
            lines,
            omitted_lines,
        } => {
            out.push(Line::styled(
                format!("    new file {path} ({lines} lines)"),
                dim,
            ));
            for line in content.lines() {
                push_wrapped(out, "+ ", line, width, Style::default().fg(Color::Green));
            }
            omitted(out, *omitted_lines);
        }
        Preview::Diff {
            path,
            unified,
            added,
            removed,
            omitted_lines,
            ..
        } => {
            if unified.is_empty() {
                out.push(Line::styled(
                    format!(
                        "    {path}: goes back to the agent's saved copy from before its last edit"
                    ),
                    dim,
                ));
                return;
            }
            out.push(Line::styled(
                format!("    {path}  +{added} −{removed}"),
                dim,
            ));
            for line in unified.lines() {
                push_wrapped(out, "", line, width, super::widgets::diff_style(line));
            }
            omitted(out, *omitted_lines);
        }
        Preview::Read { path, range } => {
            let range = range
                .as_ref()
                .map(|r| format!(" lines {:?}", r))
                .unwrap_or_default();
            out.push(Line::styled(
                format!("    reads {path}{range}; changes nothing"),
                dim,
            ));
        }
        Preview::Plan { tasks } => {
            out.push(Line::styled("    the task plan becomes:", dim));
            for task in tasks {
                push_wrapped(out, "○ ", &task.title, width, Style::default());
            }
        }
        Preview::Note { text } => {
            for line in text.lines() {
                push_wrapped(out, "", line, width, Style::default());
            }
        }
        Preview::WouldFail { reason } => {
            push_wrapped(
                out,
                "would fail: ",
                reason,
                width,
                Style::default().fg(Color::Red),
            );
        }
    }
}
