//! The workflow catalog screen: the definitions this build maintains (the gateway's catalog,
//! the same one `heartwood workflow catalog` prints), one described whole (inputs, stages and
//! what each produces), and a line to type the research question that starts a run of it in a
//! new session.

use heartwood_events::catalog::CatalogEntry;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, ListItem, Paragraph, Wrap};

use super::intent::Intent;

/// Where the catalog screen stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogScreen {
    /// The definitions, as the gateway lists them.
    pub entries: Vec<CatalogEntry>,
    /// The highlighted one.
    pub selected: usize,
    /// The question being typed, once Enter asked for it.
    pub question: Option<String>,
}

impl CatalogScreen {
    /// The screen over `entries`, the first highlighted.
    pub fn new(entries: Vec<CatalogEntry>) -> Self {
        CatalogScreen {
            entries,
            selected: 0,
            question: None,
        }
    }

    /// What a key does here.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Intent> {
        if let Some(question) = &mut self.question {
            match key.code {
                KeyCode::Esc => self.question = None,
                KeyCode::Backspace => {
                    question.pop();
                }
                KeyCode::Enter if !question.trim().is_empty() => {
                    let entry = self.entries.get(self.selected)?;
                    return Some(Intent::StartWorkflow {
                        definition: entry.id.clone(),
                        question: question.trim().to_owned(),
                    });
                }
                KeyCode::Char(c) => question.push(c),
                _ => {}
            }
            return None;
        }
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.entries.len().saturating_sub(1));
            }
            KeyCode::Enter if self.entries.get(self.selected).is_some_and(|e| e.supported) => {
                self.question = Some(String::new());
            }
            KeyCode::Esc | KeyCode::Char('q') => return Some(Intent::Back),
            _ => {}
        }
        None
    }
}

/// Draws the catalog: the list, the highlighted definition described, the question line.
pub fn render(frame: &mut Frame<'_>, notice: Option<&String>, area: Rect, screen: &CatalogScreen) {
    let [main, question_area, notice_area, keys_area] = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(3),
        Constraint::Length(u16::from(notice.is_some())),
        Constraint::Length(1),
    ])
    .areas(area);
    let [list_area, detail_area] =
        Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(main);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let dim = Style::default().fg(Color::DarkGray);
    let items: Vec<ListItem<'_>> = screen
        .entries
        .iter()
        .map(|e| {
            let mut head = vec![Span::styled(e.title.clone(), bold)];
            if !e.supported {
                head.push(Span::styled(
                    "  (cannot run here)",
                    Style::default().fg(Color::Red),
                ));
            }
            ListItem::new(vec![
                Line::from(head),
                Line::styled(format!("  {} {}", e.id, e.version), dim),
            ])
        })
        .collect();
    let title = if screen.entries.is_empty() {
        " Workflows: this build maintains none "
    } else {
        " Workflows "
    };
    super::widgets::list(frame, items, title, screen.selected, list_area);
    let detail = screen
        .entries
        .get(screen.selected)
        .map(described)
        .unwrap_or_default();
    frame.render_widget(
        Paragraph::new(detail)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Stages ")),
        detail_area,
    );
    let (line, style) = match &screen.question {
        Some(q) => (format!("{q}▏"), Style::default()),
        None => (
            "Enter on a workflow, then type your research question".to_owned(),
            dim,
        ),
    };
    frame.render_widget(
        Paragraph::new(Line::styled(line, style)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" research question "),
        ),
        question_area,
    );
    super::widgets::notice(frame, notice, notice_area);
    let keys = if screen.question.is_some() {
        "⏎ start the run in a new session · Esc back to the list"
    } else {
        "↑↓ choose · ⏎ ask the question · Esc sessions · F1 help"
    };
    frame.render_widget(Paragraph::new(Line::styled(keys, dim)), keys_area);
}

/// One definition in lines: its inputs, then each stage with what it produces.
fn described(entry: &CatalogEntry) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let mut out = vec![Line::styled(
        format!("{} ({} {})", entry.title, entry.id, entry.version),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if !entry.source_summary.is_empty() {
        out.push(Line::styled(entry.source_summary.clone(), dim));
    }
    if !entry.inputs.is_empty() {
        out.push(Line::raw(format!("inputs: {}", entry.inputs.join(", "))));
    }
    if !entry.missing_checks.is_empty() {
        out.push(Line::styled(
            format!(
                "this build's check registry lacks {}; it cannot run here",
                entry.missing_checks.join(", ")
            ),
            Style::default().fg(Color::Red),
        ));
    }
    for problem in &entry.problems {
        out.push(Line::styled(
            format!("problem: {problem}"),
            Style::default().fg(Color::Red),
        ));
    }
    out.push(Line::default());
    for (i, stage) in entry.stages.iter().enumerate() {
        out.push(Line::raw(format!("{}. {}", i + 1, stage.title)));
        if !stage.produces.is_empty() {
            out.push(Line::styled(
                format!("   writes {}", stage.produces.join(", ")),
                dim,
            ));
        }
        if !stage.budget_summary.is_empty() {
            out.push(Line::styled(
                format!("   budget: {}", stage.budget_summary),
                dim,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Issue 56 item 7: "the catalog shows stage budgets only in JSON, the API and the
    /// notebook; the CLI text, the TUI and the page show them too", from the catalog's field.
    #[test]
    fn the_workflow_screen_shows_each_stages_budget_and_the_source() {
        let entries = heartwood_gateway::shared_workflow_catalog().expect("catalog");
        let ols = entries
            .iter()
            .find(|e| e.id == "tabular-ols")
            .expect("maintained");
        let text: Vec<String> = super::described(ols)
            .iter()
            .map(|l| l.spans.iter().map(|s| &*s.content).collect())
            .collect();
        let text = text.join("\n");
        assert!(
            text.contains("budget: 20 model calls · 200000 tokens · 30 actions · 900 s"),
            "{text}"
        );
        assert!(text.contains("maintained · sha256 "), "{text}");
    }
}
