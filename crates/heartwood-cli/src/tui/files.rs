//! The workspace screen: the project's changed files as the gateway's workspace service lists
//! them (Git's changes, or without Git a session's own edits), and the highlighted file's
//! diff. Headings, marks and diff text are the gateway's; this module only lays them out.

use heartwood_events::SessionId;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, ListItem, Paragraph};

use super::intent::Intent;

/// Where the workspace screen stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesScreen {
    /// The session whose edits count without Git (and the one to go back to), if any.
    pub session: Option<SessionId>,
    /// Where the list comes from, in words.
    pub summary: String,
    /// Each changed path with its mark.
    pub changes: Vec<(char, String)>,
    /// The highlighted path.
    pub selected: usize,
    /// The highlighted path's diff, as the gateway gave it.
    pub diff: String,
    /// Diff lines scrolled down from the top.
    pub scroll: usize,
}

impl FilesScreen {
    /// The highlighted path, if there is one.
    pub fn selected_path(&self) -> Option<&str> {
        self.changes.get(self.selected).map(|(_, p)| p.as_str())
    }

    /// What a key does here: ↑↓ choose a file (its diff is asked for), PgUp/PgDn scroll the
    /// diff, Esc goes back.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Intent> {
        let before = self.selected;
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.changes.len().saturating_sub(1));
            }
            KeyCode::PageDown => self.scroll += 10,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Esc | KeyCode::Char('q') => {
                return Some(match &self.session {
                    Some(id) => Intent::Open(id.clone()),
                    None => Intent::Back,
                });
            }
            _ => {}
        }
        (self.selected != before).then_some(Intent::ShowDiff(self.selected))
    }
}

/// Draws the list of changed files beside the highlighted one's diff.
pub fn render(frame: &mut Frame<'_>, notice: Option<&String>, area: Rect, screen: &FilesScreen) {
    let [main, notice_area, keys_area] = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(u16::from(notice.is_some())),
        Constraint::Length(1),
    ])
    .areas(area);
    let [list_area, diff_area] =
        Layout::horizontal([Constraint::Percentage(32), Constraint::Percentage(68)]).areas(main);
    let items: Vec<ListItem<'_>> = screen
        .changes
        .iter()
        .map(|(mark, path)| ListItem::new(Line::raw(format!("{mark} {path}"))))
        .collect();
    let title = if screen.changes.is_empty() {
        " Changed files: none ".to_owned()
    } else {
        format!(" Changed files ({}) ", screen.changes.len())
    };
    super::widgets::list(frame, items, &title, screen.selected, list_area);
    let height = diff_area.height.saturating_sub(2) as usize;
    let lines: Vec<Line<'_>> = screen
        .diff
        .lines()
        .skip(screen.scroll)
        .take(height)
        .map(diff_line)
        .collect();
    let path = screen.selected_path().unwrap_or(&screen.summary);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" {path} ")),
        ),
        diff_area,
    );
    super::widgets::notice(frame, notice, notice_area);
    frame.render_widget(
        Paragraph::new(Line::styled(
            format!("{} · ↑↓ file · PgUp/PgDn diff · Esc back", screen.summary),
            Style::default().fg(Color::DarkGray),
        )),
        keys_area,
    );
}

/// A diff line in its colour; the `# action …` heads of a session's edits are dim.
fn diff_line(line: &str) -> Line<'static> {
    let style = if line.starts_with('#') {
        Style::default().fg(Color::DarkGray)
    } else {
        super::widgets::diff_style(line)
    };
    Line::styled(line.to_owned(), style)
}
