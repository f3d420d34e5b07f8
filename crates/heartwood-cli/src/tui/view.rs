//! Drawing: every screen is a function of [`App`] and the projection it holds; nothing here
//! decides what a session state means (the projection's status line, suggestions and available
//! commands say so).

use heartwood_events::Lifecycle;

use heartwood_gateway::startup::Phase;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, ListItem, Paragraph, Wrap};

use super::app::{App, ConnectForm, Focus, Screen, SessionRow};
use super::timeline::visible_lines;

/// Draws the whole screen.
pub fn render(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    match &app.screen {
        Screen::Startup { plan, form, models } => {
            startup(frame, app, area, plan, form, models.as_deref());
        }
        Screen::Sessions { rows, selected } => sessions(frame, area, rows, *selected),
        Screen::Workflows(screen) => {
            super::catalog::render(frame, app.notice.as_ref(), area, screen)
        }
        Screen::Files(screen) => super::files::render(frame, app.notice.as_ref(), area, screen),
        Screen::Skills {
            catalog,
            selected,
            detail,
            scroll,
        } => super::skills::render(
            frame,
            app,
            area,
            catalog,
            *selected,
            detail.as_deref(),
            *scroll,
        ),
        Screen::Session { id, snapshot } => {
            let blank;
            let snapshot = match snapshot {
                Some(s) => s.as_ref(),
                None => {
                    blank = heartwood_gateway::blank_snapshot(id.clone());
                    &blank
                }
            };
            session(frame, app, area, snapshot);
        }
    }
    if app.help {
        help(frame, area);
    }
}

/// The startup screen: where the project stands, what to do next, and the connect form when a
/// model is needed.
fn startup(
    frame: &mut Frame<'_>,
    app: &App,
    area: Rect,
    plan: &heartwood_gateway::startup::StartupPlan,
    form: &ConnectForm,
    models: Option<&heartwood_gateway::models::LocalModelsView>,
) {
    let mut lines = vec![
        Line::styled(
            format!("Heartwood · {}", phase_title(plan.phase)),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::default(),
        Line::raw(plan.explanation.clone()),
        Line::styled(
            plan.platform.headline.clone(),
            Style::default().fg(Color::DarkGray),
        ),
    ];
    // A machine that cannot confine commands says so first thing.
    if !plan.sandbox.enforcing && !plan.sandbox.detail.is_empty() {
        lines.push(Line::styled(
            plan.sandbox.detail.clone(),
            Style::default().fg(Color::Red),
        ));
    }
    lines.extend([
        Line::default(),
        Line::styled(
            format!("Next: {}", plan.next_action),
            Style::default().fg(Color::Yellow),
        ),
        Line::default(),
    ]);
    if let Some(models) = models {
        lines.extend(local_models(models));
    }
    if plan.phase == Phase::ModelRequired {
        lines.push(Line::raw(
            "Connect a model service: pick a preset with ← → or type your own \
             (an OpenAI-compatible base URL).",
        ));
        let preset = form
            .preset
            .map_or("none: your own service".to_owned(), |i| {
                let p = &heartwood_gateway::presets::PRESETS[i];
                format!("◂ {} ▸", p.name)
            });
        let values = [&preset, &form.base_url, &form.model, &form.api_key_env];
        for (i, (label, value)) in ConnectForm::ROWS.iter().zip(values).enumerate() {
            let cursor = if form.field == i && i > 0 { "▏" } else { "" };
            let style = if form.field == i {
                Style::default().fg(Color::Cyan)
            } else {
                Style::default()
            };
            lines.push(Line::styled(format!("  {label:<9} {value}{cursor}"), style));
        }
        lines.push(Line::styled(
            "  The key itself is never stored: name the variable that holds it, and \
             set it in this shell.",
            Style::default().fg(Color::DarkGray),
        ));
        lines.push(Line::default());
        if let Some(notice) = &app.notice {
            // A sign-in waiting for approval is a step, not an error.
            let color = if app.after_sign_in.is_some() {
                Color::Yellow
            } else {
                Color::Red
            };
            lines.push(Line::styled(notice.clone(), Style::default().fg(color)));
        }
        lines.push(keys(
            "Tab/↑↓ next field · ← → preset · Enter check and connect · Esc quit",
        ));
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

/// The session list, newest first, with the sessions that wait for a decision marked.
fn sessions(frame: &mut Frame<'_>, area: Rect, rows: &[SessionRow], selected: usize) {
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
            let title = r.title.as_deref().unwrap_or("(no task yet)");
            ListItem::new(vec![
                Line::from(vec![
                    Span::styled(
                        format!("{title} "),
                        Style::default().add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(mark, Style::default().fg(Color::Yellow)),
                ]),
                Line::from(vec![
                    Span::styled(
                        format!("  {}  {}  ", r.id, r.when),
                        Style::default().fg(Color::DarkGray),
                    ),
                    Span::raw(r.status.clone()),
                ]),
            ])
        })
        .collect();
    let title = if rows.is_empty() {
        " Sessions: none yet; press n to start one "
    } else {
        " Sessions "
    };
    super::widgets::list(frame, items, title, selected, list_area);
    frame.render_widget(
        Paragraph::new(keys(
            "↑↓ choose · ⏎ open · n new · w workflows · f files · s skills · ? help · q quit",
        )),
        keys_area,
    );
}

fn session(frame: &mut Frame<'_>, app: &App, area: Rect, snapshot: &heartwood_events::Snapshot) {
    let p = &snapshot.projection;
    // The review owns the main area while it has the keyboard; otherwise a short panel lists
    // the set's headlines and says how to review it.
    let reviewing = p.pending.is_some() && matches!(app.focus, Focus::Review | Focus::Reason);
    let summary_height = match (&p.pending, reviewing) {
        (Some(set), false) => (set.members.len() as u16 + 3).min(area.height / 3),
        _ => 0,
    };
    // The status line, the notice and the usage are read whole, whatever the side column
    // holds: as many rows as they wrap to, up to five.
    let usage = (!p.usage.summary.is_empty()).then(|| format!("Usage: {}", p.usage.summary));
    let mut status_text = vec![p.status_line.clone()];
    status_text.extend(app.notice.clone());
    status_text.extend(usage.clone());
    let status_height = status_text
        .iter()
        .map(|t| super::timeline::wrap(t, area.width as usize).len())
        .sum::<usize>()
        .clamp(2, 5) as u16;
    let [main, summary, input, status, keys_area] = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(summary_height),
        Constraint::Length(3),
        Constraint::Length(status_height),
        Constraint::Length(1),
    ])
    .areas(area);
    match &p.pending {
        Some(set) if reviewing => {
            // The set gets the screen; what the agent said as it proposed it stays in view
            // above, a few lines at most, where there is room for both.
            let said = agent_words(set, main.width.saturating_sub(2) as usize);
            let context_height = if main.height >= 18 && !said.is_empty() {
                (said.len() as u16 + 2).min(main.height / 5)
            } else {
                0
            };
            let [context, review] =
                Layout::vertical([Constraint::Length(context_height), Constraint::Min(5)])
                    .areas(main);
            if context_height > 0 {
                let room = context_height.saturating_sub(2) as usize;
                frame.render_widget(
                    Paragraph::new(said.into_iter().take(room).collect::<Vec<_>>()).block(
                        Block::default()
                            .borders(Borders::ALL)
                            .border_style(Style::default().fg(Color::DarkGray))
                            .title(" the agent, proposing this set "),
                    ),
                    context,
                );
            }
            review_screen(frame, app, review, snapshot, set)
        }
        pending => {
            conversation_and_plan(frame, app, main, snapshot);
            if let Some(set) = pending {
                review_summary(frame, summary, snapshot, set);
            }
        }
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

    let status_style = match p.lifecycle {
        Lifecycle::Failed | Lifecycle::Stuck => Style::default().fg(Color::Red),
        Lifecycle::WaitingForDecision => Style::default().fg(Color::Yellow),
        _ => Style::default(),
    };
    let mut status_lines = vec![Line::styled(p.status_line.clone(), status_style)];
    if let Some(notice) = &app.notice {
        status_lines.push(Line::styled(
            notice.clone(),
            Style::default().fg(Color::Red),
        ));
    }
    if let Some(usage) = usage {
        status_lines.push(Line::styled(usage, Style::default().fg(Color::DarkGray)));
    }
    frame.render_widget(
        Paragraph::new(status_lines).wrap(Wrap { trim: true }),
        status,
    );
    // Each bar fits 80 columns.
    let bar = if reviewing {
        "a ⏎ allow all · r ⏎ reject all · ↑↓ scroll · Tab guidance · F1 · ^Q quit"
    } else if p.pending.is_some() {
        "⏎ send · Tab review · ^P pause · ^E results · Esc list · F1 help · ^Q quit"
    } else if p.allows(heartwood_events::CommandName::Interrupt) {
        "⏎ guidance · Esc stop now · ^P pause · ^E results · PgUp/Dn · F1 · ^Q quit"
    } else {
        "⏎ send · ^P pause · ^R resume · ^E results · PgUp/Dn · Esc list · F1 · ^Q quit"
    };
    frame.render_widget(Paragraph::new(keys(bar)), keys_area);
}

fn help(frame: &mut Frame<'_>, area: Rect) {
    let text = vec![
        Line::styled("Keys", Style::default().add_modifier(Modifier::BOLD)),
        Line::raw(""),
        Line::raw("Enter       send the typed text: a task when idle, guidance while a task runs"),
        Line::raw("Tab         move between the message line and the review"),
        Line::raw("a, Enter    (review) allow every proposed action once: a arms, Enter confirms"),
        Line::raw(
            "r, Enter    (review) reject every proposed action, then give an optional reason",
        ),
        Line::raw("r, text     (review) reject every proposed action with this reason (Enter)"),
        Line::raw("letters     (review) any other letter starts typing guidance; it never decides"),
        Line::raw("Ctrl-P      pause the agent at its next step"),
        Line::raw("Ctrl-R      resume a paused task"),
        Line::raw("Ctrl-E      show tool results whole or folded"),
        Line::raw("PgUp/PgDn   scroll the conversation"),
        Line::raw("Esc         stop the running action now (it is recorded as interrupted; the"),
        Line::raw("            agent pauses); with nothing running, back to the session list"),
        Line::raw("↑↓ PgUp/Dn  (review) scroll the previews"),
        Line::raw("w           (session list) the workflow catalog: choose one, ask your question"),
        Line::raw("f, Ctrl-F   the changed files and their diffs (without Git: a session's edits)"),
        Line::raw("s           (session list) the project's skills: review, approve, activate"),
        Line::raw("Ctrl-Q      quit; a pending decision stays pending for any interface"),
        Line::raw(
            "Ctrl-C      quit; while the agent works, asks first (the action is interrupted)",
        ),
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

/// The narrowest the session screen's side column gets (a generated session id in a shell
/// command, with the border), unless the screen is narrower than twice that.
const SIDE_MIN: u16 = 31;

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

fn conversation_and_plan(
    frame: &mut Frame<'_>,
    app: &App,
    main: Rect,
    snapshot: &heartwood_events::Snapshot,
) {
    let p = &snapshot.projection;
    let now = app
        .now
        .clone()
        .unwrap_or_else(heartwood_events::Timestamp::now);
    // A workflow run's panel needs room for its budget bars and checks; at any width it keeps
    // room for a shell command's session id on one line (31 columns: a generated id and the
    // border), so a command copied from it is whole.
    let side_share = if p.workflow.is_some() { 36 } else { 30 };
    let side_width = (main.width * side_share / 100).max(SIDE_MIN.min(main.width / 2));
    let [conversation, side] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(side_width)]).areas(main);
    // The judged model's picture takes the lower part of the conversation's column.
    let figure = app
        .figure
        .as_ref()
        .filter(|f| super::workflow::figure_is_current(p, f));
    let conversation = match figure {
        Some(figure) if conversation.height >= 24 => {
            let [conversation, chart] =
                Layout::vertical([Constraint::Min(8), Constraint::Length(16)]).areas(conversation);
            super::workflow::chart(frame, chart, figure);
            conversation
        }
        _ => conversation,
    };
    let mut title = format!(
        " {} · {} ",
        p.session,
        p.lifecycle.as_str().replace('_', " ")
    );
    // Where both do not fit, the id stays whole (the status line below says the state).
    if title.chars().count() + 2 > conversation.width as usize {
        title = format!(" {} ", p.session);
    }
    let inner_height = conversation.height.saturating_sub(2) as usize;
    let inner_width = conversation.width.saturating_sub(2) as usize;
    let lines = visible_lines(
        p,
        &snapshot.streaming,
        inner_width,
        inner_height,
        app.scroll,
        app.expanded,
        super::timeline::Progress {
            output: snapshot.output.as_ref(),
            now: &now,
        },
    );
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        conversation,
    );

    let mut side_lines = super::workflow::lines(p);
    side_lines.push(Line::styled(
        "Task plan",
        Style::default().add_modifier(Modifier::BOLD),
    ));
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
        // The terminal's own key for the command; otherwise the shell command.
        let how = s
            .command
            .and_then(key_for)
            .map(str::to_owned)
            .or_else(|| s.shell.clone());
        side_lines.push(Line::raw(format!("• {}", s.text)));
        if let Some(how) = how {
            side_lines.push(Line::styled(
                format!("  {how}"),
                Style::default().fg(Color::Cyan),
            ));
        }
    }
    frame.render_widget(
        Paragraph::new(side_lines)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL)),
        side,
    );
}

/// This interface's key for a command, when it has one.
fn key_for(command: heartwood_events::CommandName) -> Option<&'static str> {
    use heartwood_events::CommandName;
    match command {
        CommandName::SubmitTask | CommandName::SendGuidance | CommandName::Say => {
            Some("type it, then ⏎")
        }
        CommandName::Decide => Some("Tab, then a ⏎ or r ⏎"),
        CommandName::Pause => Some("Ctrl-P"),
        CommandName::Interrupt => Some("Esc"),
        CommandName::Resume => Some("Ctrl-R"),
        // Workflow controls have their function keys in the workflow panel.
        CommandName::Export
        | CommandName::Close
        | CommandName::Rename
        | CommandName::WorkflowStart
        | CommandName::WorkflowRun
        | CommandName::WorkflowEvaluate
        | CommandName::WorkflowAccept
        | CommandName::WorkflowCancel
        | CommandName::WorkflowReview
        | CommandName::WorkflowCorrect
        | CommandName::WorkflowReviewParallel => None,
    }
}

fn review_title(set: &heartwood_events::ActionSet) -> String {
    format!(
        " Review: {} proposed action{} · set {} · revision {} ",
        set.members.len(),
        if set.members.len() == 1 { "" } else { "s" },
        set.set_id,
        set.revision
    )
}

/// The set's headlines, while the keyboard is on the message line.
fn review_summary(
    frame: &mut Frame<'_>,
    area: Rect,
    snapshot: &heartwood_events::Snapshot,
    set: &heartwood_events::ActionSet,
) {
    let mut lines: Vec<Line<'_>> = match &snapshot.review {
        Some(review) => review
            .members
            .iter()
            .map(|m| {
                Line::from(vec![
                    Span::raw(format!("  #{} {}", m.action_id, m.headline)),
                    Span::styled(
                        format!("  [{} risk]", m.risk.as_str()),
                        Style::default().fg(Color::Yellow),
                    ),
                ])
            })
            .collect(),
        None => vec![Line::raw("  (the review is being prepared)")],
    };
    lines.push(keys(
        "  Tab review and decide · typing here is guidance, never a decision",
    ));
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(Color::DarkGray))
                .title(review_title(set)),
        ),
        area,
    );
}

/// The whole review, owning the main area and the keyboard until a decision.
/// The words the agent sent with the set's calls (an earlier message could be of another
/// turn), wrapped at `width`.
fn agent_words(set: &heartwood_events::ActionSet, width: usize) -> Vec<Line<'static>> {
    let text = set
        .members
        .iter()
        .find_map(|m| m.thought.clone())
        .unwrap_or_default();
    super::timeline::wrap(text.trim(), width.max(8))
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .map(Line::raw)
        .collect()
}

fn review_screen(
    frame: &mut Frame<'_>,
    app: &App,
    area: Rect,
    snapshot: &heartwood_events::Snapshot,
    set: &heartwood_events::ActionSet,
) {
    let [body, footer] = Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(area);
    let width = body.width.saturating_sub(2) as usize;
    let height = body.height.saturating_sub(2) as usize;
    let lines = match &snapshot.review {
        Some(review) => {
            let (lines, members) = super::review::review_lines(review, width);
            let top = app.review_scroll.min(lines.len().saturating_sub(height));
            app.seen.borrow_mut().mark(
                (&set.set_id, set.revision, width),
                members,
                lines.len(),
                top..top + height,
            );
            lines
        }
        None => vec![Line::raw("The review is being prepared…")],
    };
    let top = app.review_scroll.min(lines.len().saturating_sub(height));
    let more_below = lines.len() > top + height;
    let visible: Vec<Line<'_>> = lines.into_iter().skip(top).take(height).collect();
    let mut title = review_title(set);
    if top > 0 || more_below {
        title.push_str("· ↑↓ PgUp PgDn scroll ");
    }
    frame.render_widget(
        Paragraph::new(visible).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(Color::Yellow))
                .title(title),
        ),
        body,
    );
    let n = set.members.len();
    let prompt = match app.focus {
        Focus::Reason => Line::styled(
            format!(
                "Reason for rejecting all (Enter rejects, Esc cancels): {}▏",
                app.reason
            ),
            Style::default().fg(Color::Magenta),
        ),
        _ if app.armed == Some(heartwood_events::Decision::AllowOnce)
            && !app.unseen().is_empty() =>
        {
            Line::styled(
                format!(
                    "not allowed: {} of {n} not shown yet ({}); read them with ↓ PgDn first; \
                     Enter will not allow",
                    app.unseen().len(),
                    app.unseen()
                        .iter()
                        .map(|id| format!("#{id}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Style::default().fg(Color::Yellow),
            )
        }
        _ if app.armed == Some(heartwood_events::Decision::AllowOnce) => Line::styled(
            format!(
                "Press Enter to allow all {n} action{} once. Any other key cancels.",
                if n == 1 { "" } else { "s" }
            ),
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ),
        _ if app.armed == Some(heartwood_events::Decision::RejectAll) => Line::styled(
            format!(
                "Press Enter to reject all {n} action{} (a reason next), or type the reason. Esc cancels.",
                if n == 1 { "" } else { "s" }
            ),
            Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
        ),
        _ => match app.unseen().len() {
            0 => keys(
                "a ⏎ allow all once · r ⏎ reject all · one decision covers the whole set · typing goes to guidance",
            ),
            unseen => Line::styled(
                format!(
                    "↓ PgDn read on: {unseen} of {n} not shown yet (allow waits until every action was on screen) · r ⏎ reject all"
                ),
                Style::default().fg(Color::Yellow),
            ),
        },
    };
    frame.render_widget(
        Paragraph::new(vec![prompt]).wrap(Wrap { trim: true }),
        footer,
    );
}

/// The project's local models and transfers: the gateway's lines, each transfer with a gauge.
fn local_models(view: &heartwood_gateway::models::LocalModelsView) -> Vec<Line<'static>> {
    const GAUGE: usize = 20;
    let mut lines = vec![Line::styled(
        "Local models",
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for model in &view.models {
        lines.push(Line::raw(format!("  {}", model.label)));
    }
    if let Some(runtime) = &view.runtime {
        lines.push(Line::styled(
            format!("  {runtime}"),
            Style::default().fg(Color::Green),
        ));
    }
    for transfer in &view.transfers {
        let gauge = match transfer.fraction {
            Some(done) => {
                let filled = ((done * GAUGE as f64).round() as usize).min(GAUGE);
                format!("[{}{}] ", "=".repeat(filled), " ".repeat(GAUGE - filled))
            }
            None => String::new(),
        };
        let style = if transfer.running {
            Style::default().fg(Color::Cyan)
        } else {
            Style::default().fg(Color::DarkGray)
        };
        lines.push(Line::styled(format!("  {gauge}{}", transfer.label), style));
    }
    lines.push(Line::default());
    lines
}
