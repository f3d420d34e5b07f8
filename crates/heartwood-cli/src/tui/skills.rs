//! The skills screen: the gateway's catalog, and one skill under review shown whole (source,
//! whether anyone reviewed it, tree digest, files, SKILL.md). Labels are the gateway's.

use heartwood_gateway::skills::{CatalogView, SkillDetail};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, ListItem, Paragraph, Wrap};

use super::app::App;

/// Draws the catalog, or the skill under review.
pub fn render(
    frame: &mut Frame<'_>,
    app: &App,
    area: Rect,
    catalog: &CatalogView,
    selected: usize,
    detail: Option<&SkillDetail>,
    scroll: usize,
) {
    let [main, notice_area, keys_area] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(u16::from(app.notice.is_some())),
        Constraint::Length(1),
    ])
    .areas(area);
    super::widgets::notice(frame, app.notice.as_ref(), notice_area);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let dim = Style::default().fg(Color::DarkGray);
    match detail {
        None => {
            let items: Vec<ListItem<'_>> = catalog
                .skills
                .iter()
                .map(|s| {
                    ListItem::new(vec![
                        Line::from(vec![
                            Span::styled(format!("{} ", s.name), bold),
                            Span::raw(s.status.clone()),
                        ]),
                        Line::styled(format!("  {}  {}", s.source, s.description), dim),
                    ])
                })
                .collect();
            super::widgets::list(frame, items, " Skills ", selected, main);
            frame.render_widget(
                Paragraph::new(Line::styled("↑↓ choose · Enter review · Esc sessions", dim)),
                keys_area,
            );
        }
        Some(detail) => {
            let view = &detail.view;
            let mut lines = vec![
                Line::from(vec![
                    Span::styled(format!("{} ", view.name), bold),
                    Span::raw(view.status.clone()),
                ]),
                Line::raw(format!("source  {} ({})", view.source, view.review)),
                Line::raw(format!(
                    "tree    {}",
                    view.digest.as_deref().unwrap_or("(cannot be read)")
                )),
                Line::default(),
                Line::styled("Files", bold),
            ];
            for file in &view.files {
                lines.push(Line::raw(if file.directory {
                    format!("  {}/", file.path)
                } else {
                    format!(
                        "  {}  {} bytes{}",
                        file.path,
                        file.size,
                        if file.executable { ", executable" } else { "" }
                    )
                }));
            }
            lines.push(Line::default());
            lines.push(Line::styled("SKILL.md", bold));
            lines.extend(detail.skill_md.lines().map(|l| Line::raw(l.to_owned())));
            frame.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
                    .block(
                        Block::default()
                            .borders(Borders::ALL)
                            .title(" Skill under review "),
                    ),
                main,
            );
            frame.render_widget(
                Paragraph::new(Line::styled(
                    "a approve this exact tree · + activate · - deactivate · ↑↓ scroll · Esc list",
                    dim,
                )),
                keys_area,
            );
        }
    }
}
