//! What the notebook's calls return to show: the data as a plain `dict` or `list` (scripts
//! index it, `repr` prints it as before) that also renders as HTML in a notebook
//! (`_repr_html_`), and how the hints name the session (the notebook's own variable for it).
//! The HTML is drawn once, from the same typed value as the data, so the two always agree.

use std::fmt::Write;

use heartwood_events::SessionId;
use heartwood_events::catalog::CatalogEntry;
use heartwood_gateway::workspace::ChangeReport;
use pyo3::prelude::*;

use crate::convert;
use crate::html::escape;

const BOX: &str = "font-family:system-ui,sans-serif;font-size:13px;line-height:1.45;\
    border:1px solid #d0d7de;border-radius:6px;padding:10px 12px;max-width:60em";
const MUTED: &str = "color:#57606a";

/// `value` as Python data (a dict or a list) that shows as `html` in a notebook.
pub(crate) fn shown(
    py: Python<'_>,
    value: &impl serde::Serialize,
    html: String,
) -> PyResult<Py<PyAny>> {
    let data = convert::to_python(py, value)?;
    let views = py.import("heartwood._views")?;
    let class = if data.bind(py).is_instance_of::<pyo3::types::PyList>() {
        "ShownList"
    } else {
        "ShownDict"
    };
    Ok(views.getattr(class)?.call1((data, html))?.unbind())
}

/// How a hint names the session `id`: the notebook's variable bound to it (so `s.allow()` runs
/// as printed whatever the researcher called it), else `heartwood.current()` when it is the
/// notebook's current session, else a neutral `<session>`.
pub(crate) fn who(py: Python<'_>, id: &SessionId) -> String {
    let named = py
        .import("heartwood")
        .and_then(|m| m.getattr("_variable_for")?.call1((id.as_str(),)))
        .and_then(|name| name.extract::<Option<String>>())
        .ok()
        .flatten();
    if let Some(name) = named {
        return name;
    }
    let current = crate::current_id();
    if current.as_ref() == Some(id) {
        "heartwood.current()".to_owned()
    } else {
        "<session>".to_owned()
    }
}

/// The workflow catalog: each definition with its source, inputs and stages (what each writes,
/// its checks, whether the researcher accepts it), and how to start it.
pub(crate) fn catalog(entries: &[CatalogEntry]) -> String {
    let mut out =
        format!("<div class=\"heartwood-catalog\" style=\"{BOX}\"><strong>Workflows</strong>");
    for e in entries {
        let _ = write!(
            out,
            "<div style=\"margin-top:8px\"><strong>{}</strong> <code>{}</code> \
             <span style=\"{MUTED}\">{} · {}</span></div>",
            escape(&e.title),
            escape(&e.id),
            escape(&e.version),
            escape(&e.source_summary)
        );
        if !e.supported {
            let _ = write!(
                out,
                "<div style=\"color:#9b1c1c\">not supported here: {}</div>",
                escape(
                    &e.missing_checks
                        .iter()
                        .chain(&e.problems)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            );
        }
        if !e.inputs.is_empty() {
            let _ = write!(
                out,
                "<div style=\"{MUTED}\">inputs: {}</div>",
                escape(&e.inputs.join(", "))
            );
        }
        out.push_str("<ol style=\"margin:2px 0\">");
        for stage in &e.stages {
            let _ = write!(
                out,
                "<li>{}{} <span style=\"{MUTED}\">writes {}; checks {}; {}</span></li>",
                escape(&stage.title),
                if stage.researcher_gate {
                    " (you accept it)"
                } else {
                    ""
                },
                escape(&stage.produces.join(", ")),
                escape(&stage.checks.join(", ")),
                escape(&stage.budget_summary)
            );
        }
        let _ = write!(
            out,
            "</ol><div style=\"{MUTED}\">start: <code>hw.start_workflow(\"{}\", \"your question\")</code> \
             or <code>%heartwood start {} your question</code></div>",
            escape(&e.id),
            escape(&e.id)
        );
    }
    out.push_str("</div>");
    out
}

/// The changed paths, one row each with its mark, and where the list comes from.
pub(crate) fn changes(report: &ChangeReport) -> String {
    let changes = &report.changes;
    let mut out = format!(
        "<div class=\"heartwood-changes\" style=\"{BOX}\"><strong>Changed files ({})</strong> \
         <span style=\"{MUTED}\">{}</span><table style=\"margin-top:4px\">",
        changes.changes.len(),
        escape(&report.summary)
    );
    for change in &changes.changes {
        let from = change
            .from
            .as_ref()
            .map(|f| {
                format!(
                    " <span style=\"{MUTED}\">from {}</span>",
                    escape(f.as_str())
                )
            })
            .unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td><code>{}</code>{from}</td></tr>",
            change.kind.mark(),
            escape(change.path.as_str())
        );
    }
    out.push_str("</table>");
    if changes.changes.is_empty() {
        let _ = write!(out, "<div style=\"{MUTED}\">nothing changed</div>");
    }
    if changes.truncated || changes.excluded > 0 {
        let _ = write!(
            out,
            "<div style=\"{MUTED}\">{}{} not shown (inside .heartwood/, outside the project, or unnameable)</div>",
            if changes.truncated {
                "more paths than the limit; "
            } else {
                ""
            },
            changes.excluded
        );
    }
    out.push_str("</div>");
    out
}

/// A decision's receipt: what was decided, on which set and revision, and what comes next.
pub(crate) fn decided(receipt: &heartwood_events::Receipt, said: &str, who: &str) -> String {
    let detail = match &receipt.outcome {
        heartwood_events::Outcome::Applied { .. } => format!(
            "{said}. The run goes on: <code>{}.wait()</code> follows it.",
            escape(who)
        ),
        heartwood_events::Outcome::Refused(refusal) => {
            format!("Refused: {}", escape(&refusal.to_string()))
        }
    };
    format!(
        "<div class=\"heartwood-receipt\" style=\"{BOX}\">{detail} \
         <span style=\"{MUTED}\">command {}</span></div>",
        escape(receipt.command_id.as_str())
    )
}
