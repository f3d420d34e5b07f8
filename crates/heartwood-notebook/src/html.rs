//! What a notebook cell shows: the session (conversation, plan, usage, the set waiting), the
//! pending set (each action with its preview, and the two decisions as the exact calls to
//! make), and the startup plan. Self-contained HTML with inline styles (no external assets);
//! every piece of text is escaped. Words and labels come from the projection and the review.

use std::fmt::Write;

use heartwood_events::startup::StartupPlan;
use heartwood_events::{Preview, Snapshot};

const BOX: &str = "font-family:system-ui,sans-serif;font-size:13px;line-height:1.45;\
    border:1px solid #d0d7de;border-radius:6px;padding:10px 12px;max-width:60em";
const MUTED: &str = "color:#57606a";
const PRE: &str = "background:#f6f8fa;border-radius:4px;padding:6px 8px;margin:4px 0;\
    white-space:pre-wrap;font-size:12px;overflow-x:auto";

/// `text` with the five HTML-special characters escaped.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The session: title and status, the conversation, the plan, usage, and the pending set.
/// `who` is how the hints name the session (the notebook's variable for it; see
/// [`crate::rich::who`]).
pub(crate) fn session(snapshot: &Snapshot, who: &str) -> String {
    session_with(snapshot, None, who)
}

/// The session, with the picture of the model its workflow run has just judged (SVG the
/// gateway drew; plotters escapes every text in it) beside the checks.
pub(crate) fn session_with(snapshot: &Snapshot, figure: Option<&str>, who: &str) -> String {
    let p = &snapshot.projection;
    let mut out = format!("<div class=\"heartwood-session\" style=\"{BOX}\">");
    let _ = write!(
        out,
        "<div><strong>{}</strong> <span style=\"{MUTED}\">session {}</span></div>\
         <div data-lifecycle=\"{}\" style=\"margin:4px 0 8px\">{}</div>",
        escape(p.title.as_deref().unwrap_or("New session")),
        escape(p.session.as_str()),
        p.lifecycle.as_str(),
        escape(&p.status_line)
    );
    for message in &p.conversation {
        let _ = write!(
            out,
            "<div style=\"margin:4px 0\"><span style=\"{MUTED};font-weight:600\">{}</span> \
             <span style=\"white-space:pre-wrap\">{}</span></div>",
            escape(&message.speaker),
            escape(&message.text)
        );
    }
    if let Some(w) = &p.workflow {
        out.push_str(&workflow(w, figure, who));
    }
    if !p.task_plan.is_empty() {
        out.push_str(
            "<div style=\"margin-top:8px\"><strong>Plan</strong><ul style=\"margin:2px 0\">",
        );
        for task in &p.task_plan {
            let _ = write!(
                out,
                "<li>[{}] {}</li>",
                task.status.as_str(),
                escape(&task.title)
            );
        }
        out.push_str("</ul></div>");
    }
    if !p.usage.summary.is_empty() {
        let _ = write!(
            out,
            "<div style=\"{MUTED};margin-top:6px\">{}</div>",
            escape(&p.usage.summary)
        );
    }
    if p.pending.is_some() {
        out.push_str(&pending(snapshot, who));
    }
    out.push_str("</div>");
    out
}

/// A workflow run: its stages, the latest checks, and what can be done now (as the calls to
/// make).
pub(crate) fn workflow(
    w: &heartwood_events::workflow::WorkflowView,
    figure: Option<&str>,
    who: &str,
) -> String {
    let mut out = format!(
        "<div class=\"heartwood-workflow\" style=\"margin:8px 0\"><strong>{}</strong> \
         <span style=\"{MUTED}\">{} {}, run revision {}{}</span><ol style=\"margin:2px 0\">",
        escape(&w.title),
        escape(&w.definition),
        escape(&w.version),
        w.revision,
        if w.cancelled { ", cancelled" } else { "" }
    );
    for stage in &w.stages {
        let _ = write!(
            out,
            "<li data-status=\"{}\">{} <span style=\"{MUTED}\">{}</span></li>",
            escape(stage.status.as_str()),
            escape(&stage.spec.title),
            escape(stage.status.as_str())
        );
    }
    out.push_str("</ol>");
    if let Some(stage) = w.current_stage()
        && !stage.budget.is_empty()
    {
        let lines: Vec<String> = stage
            .budget
            .iter()
            .map(|l| {
                let said = format!("{} {}", escape(&l.label), escape(&l.text));
                if l.exhausted || l.overrun {
                    format!("<span style=\"color:#9b1c1c\">{said}</span>")
                } else {
                    said
                }
            })
            .collect();
        let _ = write!(
            out,
            "<div style=\"{MUTED}\">budget: {}</div>",
            lines.join(" · ")
        );
    }
    if let Some(turn) = w.turn.as_ref().filter(|t| !t.open) {
        let said = match (&turn.outcome, &turn.problem) {
            (_, Some(problem)) => problem.clone(),
            (Some(o), None) => {
                format!("reported {}: {}", o.status.as_str(), o.artifacts.join(", "))
            }
            (None, None) => String::new(),
        };
        let _ = write!(out, "<div>Latest turn: {}</div>", escape(&said));
    }
    if let Some(review) = w.reviews.last() {
        let said = &review.said;
        let _ = write!(
            out,
            "<div><strong>{}</strong></div>",
            escape(&said.headline)
        );
        for finding in &said.findings {
            let _ = write!(
                out,
                "<div class=\"heartwood-finding\" style=\"color:#9b1c1c\">Finding: {}</div>",
                escape(finding)
            );
        }
        for proposal in &said.proposals {
            let _ = write!(
                out,
                "<div class=\"heartwood-proposal\" style=\"{MUTED};font-style:italic\">Proposal: {}</div>",
                escape(proposal)
            );
        }
    }
    if let Some(figure) = figure {
        out.push_str(figure);
    }
    if let Some(a) = &w.assessment {
        let _ = write!(
            out,
            "<div>Checks of {}: <strong>{}</strong></div>",
            escape(&a.stage),
            if a.eligible { "passed" } else { "not passed" }
        );
        for check in &a.checks {
            let _ = write!(
                out,
                "<div style=\"{MUTED}\">{} — {}{}</div>",
                escape(&check.check),
                escape(check.status.as_str()),
                check
                    .reasons
                    .first()
                    .map(|r| format!(": {}", escape(r)))
                    .unwrap_or_default()
            );
            for claim in &check.claims {
                let _ = write!(
                    out,
                    "<div style=\"{MUTED}\">claim {}</div>",
                    escape(&claim.text)
                );
            }
        }
    }
    // How the review batch runs, in the gateway's words.
    if let Some(r) = &w.review_execution {
        for line in &r.said {
            let _ = write!(out, "<div class=\"muted\">{}</div>", escape(line));
        }
    }
    for control in &w.controls {
        let call = match control.command {
            heartwood_events::CommandName::WorkflowRun => "run_stage()",
            heartwood_events::CommandName::WorkflowEvaluate => "evaluate_stage()",
            heartwood_events::CommandName::WorkflowAccept => "accept_stage()",
            heartwood_events::CommandName::WorkflowCancel => "cancel_workflow()",
            heartwood_events::CommandName::WorkflowReview => "review_stage()",
            heartwood_events::CommandName::WorkflowReviewParallel => "consent_parallel_review()",
            _ => continue,
        };
        let call = format!("{}.{call}", escape(who));
        let _ = write!(
            out,
            "<div>{} — <code>{call}</code></div>",
            escape(&control.label)
        );
    }
    out.push_str("</div>");
    out
}

/// The set waiting for a decision: every action with its preview, and how to answer.
pub(crate) fn pending(snapshot: &Snapshot, who: &str) -> String {
    let Some(set) = &snapshot.projection.pending else {
        return String::new();
    };
    let mut out = format!(
        "<div class=\"heartwood-pending\" style=\"border-left:3px solid #bf8700;\
         padding-left:10px;margin-top:10px\"><div><strong>Waiting for your decision</strong> \
         <span style=\"{MUTED}\">set {} (revision {}), {} action{}</span></div>",
        escape(set.set_id.as_str()),
        set.revision,
        set.members.len(),
        if set.members.len() == 1 { "" } else { "s" }
    );
    match &snapshot.review {
        Some(review) => {
            for member in &review.members {
                let _ = write!(
                    out,
                    "<div style=\"margin-top:6px\">#{} <code>{}</code> {} \
                     <span style=\"{MUTED}\">({} risk)</span></div>",
                    member.action_id,
                    escape(&member.tool),
                    escape(&member.headline),
                    member.risk.as_str()
                );
                out.push_str(&preview(&member.preview));
            }
        }
        None => {
            for member in &set.members {
                let _ = write!(
                    out,
                    "<div style=\"margin-top:6px\">#{} <code>{}</code></div><pre style=\"{PRE}\">{}</pre>",
                    member.action_id,
                    escape(&member.tool),
                    escape(&member.arguments)
                );
            }
        }
    }
    let who = escape(who);
    let _ = write!(
        out,
        "<div style=\"margin-top:8px\">Decide with <code>{who}.allow()</code> (every action \
         runs once) or <code>{who}.reject(\"why\")</code> (none runs; the agent reads why).\
         </div></div>"
    );
    out
}

fn preview(preview: &Preview) -> String {
    match preview {
        Preview::Command {
            command, context, ..
        } => format!(
            "<div style=\"{MUTED}\">{}</div><pre style=\"{PRE}\">{}</pre>",
            escape(context),
            escape(command)
        ),
        Preview::Create {
            path,
            content,
            omitted_lines,
            ..
        } => format!(
            "<div style=\"{MUTED}\">new file {}</div><pre style=\"{PRE}\">{}{}</pre>",
            escape(path),
            escape(content),
            omitted(*omitted_lines)
        ),
        Preview::Diff {
            path,
            unified,
            added,
            removed,
            omitted_lines,
            ..
        } => {
            let mut lines = String::new();
            for line in unified.lines() {
                let colour = match line.chars().next() {
                    Some('+') if !line.starts_with("+++") => "color:#1a7f37",
                    Some('-') if !line.starts_with("---") => "color:#cf222e",
                    _ => "",
                };
                let _ = writeln!(lines, "<span style=\"{colour}\">{}</span>", escape(line));
            }
            format!(
                "<div style=\"{MUTED}\">{} (+{added} −{removed})</div><pre class=\"heartwood-diff\" \
                 style=\"{PRE}\">{lines}{}</pre>",
                escape(path),
                omitted(*omitted_lines)
            )
        }
        Preview::Read { path, .. } => {
            format!("<div style=\"{MUTED}\">reads {}</div>", escape(path))
        }
        Preview::Plan { tasks } => {
            let items: String = tasks
                .iter()
                .map(|t| format!("<li>{}</li>", escape(&t.title)))
                .collect();
            format!("<ul style=\"margin:2px 0\">{items}</ul>")
        }
        Preview::Note { text } => format!("<pre style=\"{PRE}\">{}</pre>", escape(text)),
        Preview::WouldFail { reason } => format!(
            "<div style=\"color:#cf222e\">would fail: {}</div>",
            escape(reason)
        ),
    }
}

fn omitted(lines: usize) -> String {
    if lines == 0 {
        String::new()
    } else {
        format!("\n… {lines} more lines")
    }
}

/// The startup plan: where the project stands and what to do next.
pub(crate) fn plan(plan: &StartupPlan) -> String {
    let mut out = format!(
        "<div class=\"heartwood-status\" style=\"{BOX}\"><div><strong>Heartwood</strong> \
         <span style=\"{MUTED}\">{}</span></div><div>{}</div><div>Next: <code>{}</code></div>\
         <div style=\"{MUTED}\">{}</div>",
        escape(plan.phase.as_str()),
        escape(&plan.explanation),
        escape(&plan.next_action),
        escape(&plan.platform.headline)
    );
    if let Some(route) = &plan.route {
        let _ = write!(
            out,
            "<div style=\"{MUTED}\">Low-risk automation {}: {}</div>",
            if route.low_risk_automation.allowed {
                "allowed"
            } else {
                "off"
            },
            escape(&route.low_risk_automation.reason)
        );
    }
    for pending in &plan.pending_decisions {
        let _ = write!(
            out,
            "<div style=\"margin-top:4px\">Waiting for a decision: {} — <code>{}</code></div>",
            escape(pending.title.as_deref().unwrap_or(pending.session.as_str())),
            escape(&pending.answer)
        );
    }
    out.push_str("</div>");
    out
}

/// The session as Markdown, for frontends that do not show HTML.
pub(crate) fn session_markdown(snapshot: &Snapshot, who: &str) -> String {
    let p = &snapshot.projection;
    let mut out = format!(
        "**{}** — {}\n\n",
        p.title.as_deref().unwrap_or("New session"),
        p.status_line
    );
    for message in &p.conversation {
        let _ = writeln!(out, "- **{}**: {}", message.speaker, message.text);
    }
    if let Some(set) = &p.pending {
        let _ = writeln!(
            out,
            "\nWaiting for a decision on set {} (revision {}): `{who}.allow()` or \
             `{who}.reject(\"why\")`.",
            set.set_id, set.revision
        );
    }
    out
}

/// The model's picture with the figures its check recomputed written beside it as text (the
/// gateway's labels and values), so they stay legible wherever the picture is scaled down.
pub(crate) fn figure(f: &heartwood_events::workflow::ModelFigure) -> String {
    let mut out = format!(
        "<div class=\"heartwood-figure\" style=\"max-width:640px\">{}</div>",
        f.svg
    );
    if !f.values.is_empty() {
        out.push_str("<dl class=\"heartwood-figure-values\" style=\"display:grid;grid-template-columns:auto auto;justify-content:start;column-gap:1em\">");
        for v in &f.values {
            let _ = write!(
                out,
                "<dt style=\"{MUTED}\">{}</dt><dd style=\"margin:0\">{}</dd>",
                escape(&v.label),
                escape(&v.value)
            );
        }
        out.push_str("</dl>");
    }
    out
}
