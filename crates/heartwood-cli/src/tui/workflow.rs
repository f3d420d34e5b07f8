//! Drawing a workflow run: its stages, the current stage's budget as bars, the latest turn's
//! outcome, the checks with their reasons, the controls the gateway offers (with this
//! interface's keys), and the picture of the judged model as a chart. Everything shown comes
//! from the projection and the gateway's figure; nothing here decides what may happen.

use heartwood_events::SessionProjection;
use heartwood_events::workflow::{BudgetLine, ModelFigure, StageStatus, WorkflowView};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType};

/// Cells in a budget bar.
const BAR_CELLS: u64 = 8;

/// The run's lines for the side panel (empty without a run).
pub(super) fn lines(p: &SessionProjection) -> Vec<Line<'static>> {
    let Some(w) = &p.workflow else {
        return Vec::new();
    };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let muted = Style::default().fg(Color::DarkGray);
    let mut lines = vec![Line::styled(format!("Workflow · {}", w.definition), bold)];
    if w.cancelled {
        lines.push(Line::styled("  cancelled", muted));
    }
    for stage in &w.stages {
        let mark = match stage.status {
            StageStatus::Accepted => "✔",
            StageStatus::Running => "▶",
            StageStatus::AwaitingEvaluation | StageStatus::AwaitingResearcher => "◆",
            StageStatus::Pending => "○",
        };
        lines.push(Line::raw(format!(
            "{mark} {} · {}",
            stage.spec.title,
            stage.status.as_str()
        )));
    }
    for control in &w.controls {
        let key = super::app::workflow_key(control.command).unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(format!("{key:<4}"), Style::default().fg(Color::Cyan)),
            Span::raw(control.label.clone()),
        ]));
    }
    // How the review batch runs, in the gateway's words.
    if let Some(r) = &w.review_execution {
        lines.extend(r.said.iter().map(|l| Line::raw(l.clone())));
    }
    if let Some(stage) = w.current_stage()
        && !stage.budget.is_empty()
    {
        lines.push(Line::styled("Budget", bold));
        lines.extend(stage.budget.iter().map(budget_bar));
    }
    turn_lines(w, &mut lines);
    if let Some(r) = &w.reproduction {
        lines.push(Line::raw(match &r.completed {
            Some(done) => format!(
                "Rerun #{}: exit {}, wrote {}",
                done.action_id,
                done.exit_code
                    .map_or_else(|| "?".to_owned(), |c| c.to_string()),
                done.output.path
            ),
            None => format!(
                "Rerun #{} allowed; no completion observed",
                r.prepared.action_id
            ),
        }));
    }
    review_lines(w, &mut lines);
    if let Some(a) = &w.assessment {
        lines.push(if a.eligible {
            Line::styled("Checks passed", Style::default().fg(Color::Green))
        } else {
            Line::styled("Checks not passed", Style::default().fg(Color::Red))
        });
        for check in &a.checks {
            let (mark, colour) = match check.status.as_str() {
                "passed" => ("✔", Color::Green),
                "failed" => ("✘", Color::Red),
                _ => ("?", Color::Yellow),
            };
            lines.push(Line::from(vec![
                Span::styled(format!(" {mark} "), Style::default().fg(colour)),
                Span::raw(check.check.clone()),
            ]));
            for reason in check.reasons.iter().take(2) {
                lines.push(Line::styled(format!("    {reason}"), muted));
            }
            for claim in &check.claims {
                lines.push(Line::styled(format!("    claim {}", claim.text), muted));
            }
        }
        // Problems already shown (a check's reasons, the turn's problem) are not repeated.
        let turn_problem = w.turn.as_ref().and_then(|t| t.problem.as_ref());
        let shown = |p: &String| {
            a.checks.iter().any(|c| p.starts_with(&c.check)) || Some(p) == turn_problem
        };
        for problem in a.problems.iter().filter(|p| !shown(p)).take(3) {
            lines.push(Line::styled(format!(" · {problem}"), muted));
        }
    }
    lines.push(Line::default());
    lines
}

/// The latest review, as the gateway says it: findings (verified by Heartwood's checks) apart
/// from proposals (the reviewer's claims), so one is never read as the other.
fn review_lines(w: &WorkflowView, lines: &mut Vec<Line<'static>>) {
    let Some(review) = w.reviews.last() else {
        return;
    };
    let said = &review.said;
    lines.push(Line::styled(
        said.headline.clone(),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    for finding in &said.findings {
        lines.push(Line::styled(
            format!(" ✘ {finding}"),
            Style::default().fg(Color::Red),
        ));
    }
    for proposal in &said.proposals {
        lines.push(Line::styled(
            format!(" ? {proposal}"),
            Style::default().fg(Color::DarkGray),
        ));
    }
}

/// What the latest turn reported, or why it reported nothing usable.
fn turn_lines(w: &WorkflowView, lines: &mut Vec<Line<'static>>) {
    let Some(turn) = w.turn.as_ref().filter(|t| !t.open) else {
        return;
    };
    match (&turn.outcome, &turn.problem) {
        (_, Some(problem)) => lines.push(Line::styled(
            format!("Turn: {problem}"),
            Style::default().fg(Color::Red),
        )),
        (Some(outcome), None) => lines.push(Line::raw(format!(
            "Turn reported {}: {}",
            outcome.status.as_str(),
            outcome.artifacts.join(", ")
        ))),
        (None, None) => {}
    }
}

/// One budget limit as a bar: `▰▰▱▱▱▱▱▱ actions 3 of 30`.
fn budget_bar(line: &BudgetLine) -> Line<'static> {
    let filled = line
        .used
        .map(|used| (used.saturating_mul(BAR_CELLS) / line.limit.max(1)).min(BAR_CELLS) as usize);
    let bar = match filled {
        Some(n) => format!("{}{}", "▰".repeat(n), "▱".repeat(BAR_CELLS as usize - n)),
        None => "·".repeat(BAR_CELLS as usize),
    };
    let colour = if line.overrun || line.exhausted {
        Color::Red
    } else {
        Color::Cyan
    };
    Line::from(vec![
        Span::styled(bar, Style::default().fg(colour)),
        Span::raw(format!(" {} ", line.label)),
        Span::styled(line.text.clone(), Style::default().fg(Color::DarkGray)),
    ])
}

/// Whether `figure` pictures the assessment the projection shows now (same stage, same
/// bytes); a picture of other bytes is not drawn.
pub(super) fn figure_is_current(p: &SessionProjection, figure: &ModelFigure) -> bool {
    let Some(a) = p.workflow.as_ref().and_then(|w| w.assessment.as_ref()) else {
        return false;
    };
    a.stage == figure.stage
        && a.checks
            .iter()
            .any(|c| c.check == "univariate_ols" && c.inspected == figure.inspected)
}

/// The judged model as a chart: training and held-out points, the fitted line, the held-out
/// predictions and the training-mean comparator; the leave-one-group-out slopes below.
pub(super) fn chart(frame: &mut Frame<'_>, area: Rect, f: &ModelFigure) {
    let pairs =
        |points: &[[f64; 2]]| -> Vec<(f64, f64)> { points.iter().map(|p| (p[0], p[1])).collect() };
    let train = pairs(&f.train);
    let held_out = pairs(&f.held_out);
    let predictions = pairs(&f.predictions);
    let fitted = pairs(&f.line);
    let ([x0, x1], [y0, y1]) = (f.x_range, f.y_range);
    let mean = vec![(x0, f.training_mean), (x1, f.training_mean)];
    let datasets = vec![
        Dataset::default()
            .name("training mean")
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(Color::DarkGray))
            .data(&mean),
        Dataset::default()
            .name("fitted line")
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(Color::White))
            .data(&fitted),
        Dataset::default()
            .name("training")
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(Color::Gray))
            .data(&train),
        Dataset::default()
            .name("held out")
            .graph_type(GraphType::Scatter)
            .marker(Marker::Block)
            .style(Style::default().fg(Color::Blue))
            .data(&held_out),
        Dataset::default()
            .name("prediction")
            .graph_type(GraphType::Scatter)
            .marker(Marker::Bar)
            .style(Style::default().fg(Color::Yellow))
            .data(&predictions),
    ];
    let slopes: Vec<String> = f
        .group_slopes
        .iter()
        .map(|g| format!("{} {:.3}", g.group, g.slope))
        .collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} against {} ", f.outcome, f.predictor))
        .title_bottom(format!(
            " {}; slope without each group: {} ",
            f.values
                .iter()
                .map(|v| format!("{} {}", v.label, v.value))
                .collect::<Vec<_>>()
                .join(" · "),
            slopes.join(" · ")
        ));
    let label = |v: f64| Span::raw(format!("{v:.1}"));
    let chart = Chart::new(datasets)
        .block(block)
        .x_axis(
            Axis::default()
                .title(f.predictor.clone())
                .bounds([x0, x1])
                .labels([label(x0), label((x0 + x1) / 2.0), label(x1)]),
        )
        .y_axis(Axis::default().bounds([y0, y1]).labels([
            label(y0),
            label((y0 + y1) / 2.0),
            label(y1),
        ]));
    frame.render_widget(chart, area);
}
