//! The gateway's Markdown blocks as terminal lines: headings bold, emphasis italic, inline code
//! coloured, lists with their marks, code blocks framed with their language, all wrapped to the
//! width. The parse is the gateway's; this only draws it.

use heartwood_events::{Block, Inline};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Lines for `blocks`, each indented by `indent` columns, at `width` columns.
pub fn block_lines(blocks: &[Block], indent: usize, width: usize) -> Vec<Line<'static>> {
    let room = width.saturating_sub(indent).max(8);
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    for (n, block) in blocks.iter().enumerate() {
        if n > 0 {
            out.push(Line::default());
        }
        match block {
            Block::Heading { level, spans } => {
                let mut style = Style::default().add_modifier(Modifier::BOLD);
                if *level <= 2 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                push(&mut out, &pad, "", wrap_inline(spans, room, style));
            }
            Block::Paragraph { spans } => {
                push(
                    &mut out,
                    &pad,
                    "",
                    wrap_inline(spans, room, Style::default()),
                );
            }
            Block::Quote { spans } => {
                let style = Style::default()
                    .fg(Color::DarkGray)
                    .add_modifier(Modifier::ITALIC);
                push(&mut out, &pad, "▌ ", wrap_inline(spans, room - 2, style));
            }
            Block::List { start, items } => {
                for (i, item) in items.iter().enumerate() {
                    let mark = match start {
                        Some(first) => format!("{}. ", first + i as u64),
                        None => "• ".to_owned(),
                    };
                    let lines = wrap_inline(
                        item,
                        room.saturating_sub(mark.len()).max(8),
                        Style::default(),
                    );
                    for (j, line) in lines.into_iter().enumerate() {
                        let lead = if j == 0 {
                            mark.clone()
                        } else {
                            " ".repeat(mark.chars().count())
                        };
                        let mut spans = vec![Span::raw(format!("{pad}{lead}"))];
                        spans.extend(line);
                        out.push(Line::from(spans));
                    }
                }
            }
            Block::Code { language, text } => {
                let dim = Style::default().fg(Color::DarkGray);
                out.push(Line::styled(
                    format!("{pad}┌ {}", language.as_deref().unwrap_or("code")),
                    dim,
                ));
                for line in text.lines() {
                    let shown: String = line.chars().take(room.saturating_sub(2)).collect();
                    out.push(Line::from(vec![
                        Span::styled(format!("{pad}│ "), dim),
                        Span::styled(shown, Style::default().fg(Color::Cyan)),
                    ]));
                }
                out.push(Line::styled(format!("{pad}└"), dim));
            }
            Block::Rule => out.push(Line::styled(
                format!("{pad}{}", "─".repeat(room.min(40))),
                Style::default().fg(Color::DarkGray),
            )),
        }
    }
    out
}

fn push(out: &mut Vec<Line<'static>>, pad: &str, mark: &str, lines: Vec<Vec<Span<'static>>>) {
    for line in lines {
        let mut spans = vec![Span::raw(format!("{pad}{mark}"))];
        spans.extend(line);
        out.push(Line::from(spans));
    }
}

fn style_of(inline: &Inline, base: Style) -> Style {
    let mut style = base;
    if inline.strong {
        style = style.add_modifier(Modifier::BOLD);
    }
    if inline.emphasis {
        style = style.add_modifier(Modifier::ITALIC);
    }
    if inline.code {
        style = style.fg(Color::Cyan);
    }
    style
}

/// Styled text wrapped at spaces to `width` columns (a word longer than a line is cut); a
/// newline in the text starts a new line.
fn wrap_inline(spans: &[Inline], width: usize, base: Style) -> Vec<Vec<Span<'static>>> {
    let width = width.max(1);
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0usize;
    for inline in spans {
        let style = style_of(inline, base);
        for (k, segment) in inline.text.split('\n').enumerate() {
            if k > 0 {
                lines.push(Vec::new());
                used = 0;
            }
            for word in segment.split_inclusive(' ') {
                let mut word = word.to_owned();
                let mut len = word.chars().count();
                if used + len > width && used > 0 {
                    lines.push(Vec::new());
                    used = 0;
                    if word.trim().is_empty() {
                        continue;
                    }
                }
                while len > width {
                    let head: String = word.chars().take(width - used.min(width)).collect();
                    let rest: String = word.chars().skip(head.chars().count()).collect();
                    if let Some(line) = lines.last_mut() {
                        line.push(Span::styled(head, style));
                    }
                    lines.push(Vec::new());
                    used = 0;
                    word = rest;
                    len = word.chars().count();
                }
                used += len;
                if let Some(line) = lines.last_mut() {
                    line.push(Span::styled(word, style));
                }
            }
        }
    }
    lines
}
