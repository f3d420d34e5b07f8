//! `heartwood status`: the startup plan for the project in the current directory.

use std::process::ExitCode;

use anyhow::Result;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::startup::{StartupPlan, plan};

/// Prints the startup plan. Creates nothing.
pub fn run(project: &ProjectContext, json: bool) -> Result<ExitCode> {
    let plan = plan(project)?;
    if json {
        say!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print_plan(&plan);
        match project.found_from() {
            Some(below) => say!(
                "project   {} (found above the current folder {below})",
                project.root()
            ),
            None => say!("project   {} (the current folder)", project.root()),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The platform in words: which adapter, why, and what it supplies.
fn print_platform(p: &heartwood_gateway::platform::PlatformSummary) {
    use heartwood_gateway::platform::IngressOffer;
    say!("platform  {} ({})", p.platform.as_str(), p.detected_by);
    say!("          model routes: {}", p.route_categories.join(", "));
    if let Some(t) = &p.model_transport {
        say!(
            "          model transport: {} at {}{}",
            t.model,
            t.base_url,
            if t.required { " (required)" } else { "" }
        );
    }
    let ingress: Vec<String> = p.ingress.iter().map(IngressOffer::describe).collect();
    say!("          heartwood serve: {}", ingress.join(", "));
    for mount in &p.data_mounts {
        say!(
            "mount     {} ({}{}{}; declared by {})",
            mount.path,
            if mount.writable {
                "writable"
            } else {
                "read-only"
            },
            if mount.purpose.is_empty() {
                String::new()
            } else {
                format!(", {}", mount.purpose)
            },
            if mount.present {
                ""
            } else {
                ", not present: not given to the agent"
            },
            mount.declared_by
        );
    }
}

/// The plan in words.
pub fn print_plan(plan: &StartupPlan) {
    for waiting in &plan.pending_decisions {
        say!(
            "waiting   session {}{} waits for your decision",
            waiting.session,
            waiting
                .title
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default()
        );
        say!("          {}", waiting.answer);
    }
    for waiting in &plan.workflow_waits {
        say!(
            "waiting   session {}{} {}",
            waiting.session,
            waiting
                .title
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default(),
            waiting.waits_for.kind.words()
        );
        say!("          {}", waiting.waits_for.text);
        if let Some(step) = waiting.waits_for.steps.first() {
            say!("          {}", step.shell);
        }
    }
    for stopped in &plan.stopped_sessions {
        say!(
            "stopped   session {}{}",
            stopped.session,
            stopped
                .title
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default()
        );
        say!("          {}", stopped.answer);
    }
    let phase = serde_json::to_value(plan.phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    say!("phase     {phase}");
    say!("          {}", plan.explanation);
    if let Some(route) = &plan.route {
        let key = route
            .api_key_env
            .as_deref()
            .map_or("no API key".to_owned(), |env| format!("API key from {env}"));
        say!(
            "model     {} at {} ({}, {key})",
            route.model,
            route.base_url,
            route.category
        );
        if let Some(path) = &route.inherited_from {
            say!("          your default route, from {path} (this project sets none)");
        }
        say!(
            "          credentials: {}; low-risk automation {}: {}",
            route.credential_boundary.as_str(),
            if route.low_risk_automation.allowed {
                "allowed"
            } else {
                "off"
            },
            route.low_risk_automation.reason
        );
    }
    print_platform(&plan.platform);
    say!("sandbox   {}", plan.sandbox.detail);
    say!("sessions  {}", plan.sessions);
    say!("state     {}", plan.state_folder.detail);
    say!("review    {}", plan.parallel_review.detail);
    say!("next      {}", plan.next_action);
}
