//! Pieces every screen of the terminal interface draws alike: the red notice line, a list with
//! its highlighted row, and the colour of a unified diff's line.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};

/// Draws `notice` (a refusal or an error) in red, when there is one.
pub fn notice(frame: &mut Frame<'_>, notice: Option<&String>, area: Rect) {
    if let Some(notice) = notice {
        frame.render_widget(
            Paragraph::new(Line::styled(
                notice.clone(),
                Style::default().fg(Color::Red),
            )),
            area,
        );
    }
}

/// Draws `items` in a bordered list titled `title`, row `selected` highlighted.
pub fn list(
    frame: &mut Frame<'_>,
    items: Vec<ListItem<'_>>,
    title: &str,
    selected: usize,
    area: Rect,
) {
    let mut state = ListState::default().with_selected(Some(selected));
    frame.render_stateful_widget(
        List::new(items)
            .highlight_symbol("▶ ")
            .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(title.to_owned()),
            ),
        area,
        &mut state,
    );
}

/// The style of one line of a unified diff: headers dim, additions green, removals red, hunk
/// heads cyan.
pub fn diff_style(line: &str) -> Style {
    if line.starts_with("+++") || line.starts_with("---") {
        Style::default().fg(Color::DarkGray)
    } else if line.starts_with('+') {
        Style::default().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::default().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::default().fg(Color::Cyan)
    } else {
        Style::default()
    }
}
