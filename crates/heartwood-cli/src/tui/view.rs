//! Drawing: every screen is a function of [`App`] and the projection it holds; nothing here
//! decides what a session state means (the projection's status line, suggestions and available
//! commands say so).

use heartwood_events::{Lifecycle, SessionProjection};

use heartwood_gateway::startup::Phase;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

use super::app::{App, Focus, Screen};
use super::timeline::{summary, visible_lines};

/// Draws the whole screen.
pub fn render(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    match &app.screen {
        Screen::Startup { plan, form } => {
            let mut lines = vec![
                Line::styled(
                    format!("Heartwood · {}", phase_title(plan.phase)),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Line::default(),
                Line::raw(plan.explanation.clone()),
                Line::default(),
                Line::styled(
                    format!("Next: {}", plan.next_action),
                    Style::default().fg(Color::Yellow),
                ),
                Line::default(),
            ];
            if plan.phase == Phase::ModelRequired {
                lines.push(Line::raw(
                    "Connect an OpenAI-compatible service (Ollama, vLLM, llama.cpp, LiteLLM):",
                ));
                for (i, (label, value)) in [("Base URL", &form.base_url), ("Model", &form.model)]
                    .into_iter()
                    .enumerate()
                {
                    let cursor = if form.field == i { "▏" } else { "" };
                    let style = if form.field == i {
                        Style::default().fg(Color::Cyan)
                    } else {
                        Style::default()
                    };
                    lines.push(Line::styled(format!("  {label:<9} {value}{cursor}"), style));
                }
                lines.push(Line::default());
                lines.push(keys("Tab next field · Enter connect · Esc quit"));
            } else {
                lines.push(keys("Enter or r check again · q quit"));
            }
            frame.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .block(Block::default().borders(Borders::ALL).title(" Heartwood ")),
                area,
            );
        }
        Screen::Sessions { rows, selected } => {
            let [list_area, keys_area] =
                Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area);
            let items: Vec<ListItem<'_>> = rows
                .iter()
                .map(|r| {
                    let mark = if r.pending {
                        "● decision pending  "
                    } else {
                        ""
                    };
                    ListItem::new(Line::from(vec![
                        Span::styled(
                            format!("{:<32} ", r.id),
                            Style::default().add_modifier(Modifier::BOLD),
                        ),
                        Span::raw(format!("{:<25} ", r.when)),
                        Span::styled(mark, Style::default().fg(Color::Yellow)),
                        Span::raw(r.status.clone()),
                    ]))
                })
                .collect();
            let title = if rows.is_empty() {
                " Sessions: none yet; press n to start one "
            } else {
                " Sessions "
            };
            let mut state = ListState::default().with_selected(Some(*selected));
            frame.render_stateful_widget(
                List::new(items)
                    .highlight_symbol("▶ ")
                    .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
                    .block(Block::default().borders(Borders::ALL).title(title)),
                list_area,
                &mut state,
            );
            frame.render_widget(
                Paragraph::new(keys(
                    "↑↓ choose · Enter open · n new session · ? help · q quit",
                )),
                keys_area,
            );
        }
        Screen::Session { id, snapshot } => {
            let blank;
            let snapshot = match snapshot {
                Some(s) => s.as_ref(),
                None => {
                    blank = heartwood_gateway::blank_snapshot(id.clone());
                    &blank
                }
            };
            session(frame, app, area, &snapshot.projection, &snapshot.streaming);
        }
    }
    if app.help {
        help(frame, area);
    }
}

fn session(frame: &mut Frame<'_>, app: &App, area: Rect, p: &SessionProjection, streaming: &str) {
    let review_height = p
        .pending
        .as_ref()
        .map_or(0, |set| set.members.len() as u16 + 4)
        .min(area.height / 2);
    let [main, review, input, status, keys_area] = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(review_height),
        Constraint::Length(3),
        Constraint::Length(2),
        Constraint::Length(1),
    ])
    .areas(area);
    let [conversation, side] =
        Layout::horizontal([Constraint::Percentage(70), Constraint::Percentage(30)]).areas(main);

    let title = format!(
        " {} · {} ",
        p.session,
        p.lifecycle.as_str().replace('_', " ")
    );
    let inner_height = conversation.height.saturating_sub(2) as usize;
    let inner_width = conversation.width.saturating_sub(2) as usize;
    let lines = visible_lines(
        p,
        streaming,
        inner_width,
        inner_height,
        app.scroll,
        app.expanded,
    );
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        conversation,
    );

    let mut side_lines = vec![Line::styled(
        "Task plan",
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if p.task_plan.is_empty() {
        side_lines.push(Line::styled(
            "  (none yet)",
            Style::default().fg(Color::DarkGray),
        ));
    }
    for task in &p.task_plan {
        let mark = match task.status {
            heartwood_events::PlanStatus::Done => "✔",
            heartwood_events::PlanStatus::InProgress => "▶",
            heartwood_events::PlanStatus::Todo => "○",
        };
        side_lines.push(Line::raw(format!("{mark} {}", task.title)));
    }
    side_lines.push(Line::default());
    side_lines.push(Line::styled(
        "Next steps",
        Style::default().add_modifier(Modifier::BOLD),
    ));
    for s in &p.suggestions {
        side_lines.push(Line::raw(format!("• {s}")));
    }
    frame.render_widget(
        Paragraph::new(side_lines)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL)),
        side,
    );

    if let Some(set) = &p.pending {
        let focused = matches!(app.focus, Focus::Review | Focus::Reason);
        let mut lines: Vec<Line<'_>> = set
            .members
            .iter()
            .map(|m| {
                let risk = serde_json::to_value(m.risk)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                Line::from(vec![
                    Span::raw(format!("  #{} ", m.action_id)),
                    Span::raw(summary(&m.tool, &m.arguments)),
                    Span::styled(
                        format!("  [{risk} risk]"),
                        Style::default().fg(Color::Yellow),
                    ),
                ])
            })
            .collect();
        lines.push(match app.focus {
            Focus::Reason => Line::styled(
                format!("  Reason for rejecting all (Enter to reject, Esc to cancel): {}▏", app.reason),
                Style::default().fg(Color::Magenta),
            ),
            _ => keys("  a allow all once · r reject all (with a reason) · one decision covers the whole set"),
        });
        let border = if focused {
            Color::Yellow
        } else {
            Color::DarkGray
        };
        frame.render_widget(
            Paragraph::new(lines).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(Style::default().fg(border))
                    .title(format!(
                        " Review: {} proposed action{} · set {} · revision {} ",
                        set.members.len(),
                        if set.members.len() == 1 { "" } else { "s" },
                        set.set_id,
                        set.revision
                    )),
            ),
            review,
        );
    }

    let prompt = if p.text_means == heartwood_events::CommandName::SubmitTask {
        "task"
    } else {
        "guidance"
    };
    let cursor = if app.focus == Focus::Input { "▏" } else { "" };
    frame.render_widget(
        Paragraph::new(format!("{}{cursor}", app.input)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" {prompt} ")),
        ),
        input,
    );

    let usage = &p.usage;
    let per_purpose: Vec<String> = usage
        .by_purpose
        .iter()
        .map(|u| {
            format!(
                "{} {}",
                u.label,
                u.usage.prompt_tokens + u.usage.completion_tokens
            )
        })
        .collect();
    let status_style = match p.lifecycle {
        Lifecycle::Failed | Lifecycle::Stuck => Style::default().fg(Color::Red),
        Lifecycle::WaitingForDecision => Style::default().fg(Color::Yellow),
        _ => Style::default(),
    };
    let mut status_lines = vec![Line::from(vec![
        Span::styled(p.status_line.clone(), status_style),
        Span::styled(
            if per_purpose.is_empty() {
                String::new()
            } else {
                format!(
                    "   tokens {} ({})",
                    usage.total.prompt_tokens + usage.total.completion_tokens,
                    per_purpose.join(", ")
                )
            },
            Style::default().fg(Color::DarkGray),
        ),
    ])];
    if let Some(notice) = &app.notice {
        status_lines.push(Line::styled(
            notice.clone(),
            Style::default().fg(Color::Red),
        ));
    }
    frame.render_widget(
        Paragraph::new(status_lines).wrap(Wrap { trim: true }),
        status,
    );
    frame.render_widget(
        Paragraph::new(keys(
            "Enter send · Tab review · ^P pause · ^R resume · ^E results · PgUp/Dn · Esc list · F1 help · ^Q quit",
        )),
        keys_area,
    );
}

fn help(frame: &mut Frame<'_>, area: Rect) {
    let text = vec![
        Line::styled("Keys", Style::default().add_modifier(Modifier::BOLD)),
        Line::raw(""),
        Line::raw("Enter       send the typed text: a task when idle, guidance while a task runs"),
        Line::raw("Tab         move between the message line and the review panel"),
        Line::raw("a           (review) allow every proposed action once"),
        Line::raw("r           (review) reject every proposed action, with an optional reason"),
        Line::raw("Ctrl-P      pause the agent at its next step"),
        Line::raw("Ctrl-R      resume a paused task"),
        Line::raw("Ctrl-E      show tool results whole or folded"),
        Line::raw("PgUp/PgDn   scroll the conversation"),
        Line::raw("Esc         back to the session list"),
        Line::raw("Ctrl-Q      quit; a pending decision stays pending for any interface"),
        Line::raw(""),
        Line::raw("There is no per-action approval: one decision covers the whole set."),
        Line::raw(""),
        keys("any key closes this help"),
    ];
    let width = area.width.min(84);
    let height = area.height.min(text.len() as u16 + 2);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(" Help ")),
        popup,
    );
}

fn keys(text: &str) -> Line<'static> {
    Line::styled(text.to_owned(), Style::default().fg(Color::DarkGray))
}

fn phase_title(phase: Phase) -> &'static str {
    match phase {
        Phase::RecoveryRequired => "recovery required",
        Phase::ProjectReview => "check the project folder",
        Phase::ModelRequired => "connect a model",
        Phase::CredentialRequired => "credential required",
        Phase::ConnectionRequired => "model service unreachable",
        Phase::ComputeRequired => "compute required",
        Phase::Ready => "ready",
    }
}
