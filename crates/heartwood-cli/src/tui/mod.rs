//! The terminal interface: `heartwood` with no command.
//!
//! It renders the gateway's projection and submits typed commands; it keeps no reducer and
//! infers no labels. Keys are read on their own thread; gateway updates arrive through the
//! gateway's one way to follow a session (`SessionGateway::follow`); each wakes the loop, which
//! takes one snapshot and draws one frame. The terminal is restored on every exit, panics
//! included (`ratatui::init` installs the hook), and quitting with a decision pending leaves
//! it pending for any other interface.

mod app;
mod catalog;
mod files;
mod intent;
mod markdown;
mod review;
mod seen;
mod skills;
mod timeline;
mod view;
mod widgets;
mod workflow;

pub use view::render;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use heartwood_events::{Command, Outcome, SessionId};
use heartwood_gateway::config::RouteConfig;
use heartwood_gateway::skills::SkillsService;
use heartwood_gateway::startup::{self, Phase};
use heartwood_gateway::{ProjectContext, SessionFollow, SessionGateway};
use ratatui::crossterm::event::{self, Event, KeyEvent, KeyEventKind};
use tokio::sync::mpsc;

pub use app::{App, ConnectForm, Screen, SessionRow};
pub use intent::{Intent, SkillDecision};

/// Set to exit right after the first frame is drawn (for `cargo xtask bench tui`).
pub const EXIT_AFTER_FIRST_FRAME: &str = "HEARTWOOD_TUI_EXIT_AFTER_FIRST_FRAME";

/// Most sessions listed.
const LISTED_SESSIONS: usize = 50;

/// Runs the interface until the researcher quits.
pub fn run(project: ProjectContext) -> Result<ExitCode> {
    run_with_input(project, None)
}

/// Runs the interface; with `input`, it opens a new session with that text typed in, ready to
/// send (the demo's walkthrough starts this way).
pub fn run_with_input(project: ProjectContext, input: Option<String>) -> Result<ExitCode> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!(
            "`heartwood` with no command opens the terminal interface and needs a terminal; \
             see `heartwood --help` for the commands that work without one"
        );
    }
    crate::runtime::block_on(crate::runtime::Workers::Two, async move {
        let gateway = SessionGateway::new(project.clone());
        let first = match input {
            Some(text) => {
                let id = SessionGateway::new_session_id();
                let mut app = App::new(Screen::Session {
                    snapshot: Some(Box::new(heartwood_gateway::blank_snapshot(id.clone()))),
                    id,
                });
                app.input = text;
                app
            }
            None => App::new(first_screen(&gateway, &project)?),
        };
        let mut terminal = ratatui::init();
        let result = event_loop(&mut terminal, &gateway, &project, first).await;
        ratatui::restore();
        gateway.close().await;
        // Where the researcher left off, and how to answer a decision from the shell.
        if let Ok(Some(id)) = &result
            && let Ok(projection) = gateway.projection(id)
            && projection.title.is_some()
        {
            println!("session {id}: {}", projection.status_line);
            if let Some(set) = &projection.pending {
                println!(
                    "answer it with: heartwood decide {id} --set {} --revision {} allow|reject",
                    set.set_id, set.revision
                );
            }
        }
        result.map(|_| ExitCode::SUCCESS)
    })?
}

enum Input {
    Key(KeyEvent),
    Redraw,
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    gateway: &SessionGateway,
    project: &ProjectContext,
    mut app: App,
) -> Result<Option<SessionId>> {
    let (keys_tx, mut keys) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        loop {
            let input = match event::read() {
                Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => Input::Key(key),
                Ok(Event::Resize(..)) => Input::Redraw,
                Ok(_) => continue,
                Err(_) => return,
            };
            if keys_tx.send(input).is_err() {
                return;
            }
        }
    });
    let exit_after_first = std::env::var_os(EXIT_AFTER_FIRST_FRAME).is_some();
    let mut updates: Option<SessionFollow> = None;
    loop {
        terminal.draw(|frame| view::render(frame, &app))?;
        if exit_after_first {
            return Ok(open_session(&app));
        }
        tokio::select! {
            input = keys.recv() => match input {
                Some(Input::Key(key)) => {
                    if let Some(intent) = app.on_key(key)
                        && !apply(&mut app, intent, gateway, project, &mut updates).await?
                    {
                        return Ok(open_session(&app));
                    }
                }
                Some(Input::Redraw) => {}
                None => return Ok(open_session(&app)),
            },
            changed = next_update(&mut updates) => {
                if changed {
                    refresh(&mut app, gateway).await;
                }
            }
            // A ChatGPT sign-in in progress is polled (the gateway asks the service at most once
            // per the service's interval).
            _ = tokio::time::sleep(Duration::from_secs(1)), if app.after_sign_in.is_some() => {
                poll_sign_in(&mut app, gateway, project)?;
            }
            // A running action shows how long it has run: redraw each second.
            _ = tokio::time::sleep(Duration::from_secs(1)), if action_running(&app) => {}
            // Viewing is not acting: a session idle for a while is let go, so another
            // interface takes it directly (this one keeps following it).
            _ = tokio::time::sleep(heartwood_gateway::IDLE_RELEASE) => {
                gateway.release_idle(heartwood_gateway::IDLE_RELEASE).await;
            }
            // The list and startup screens show state other processes may change.
            _ = tokio::time::sleep(Duration::from_secs(2)), if updates.is_none() => {
                if let Screen::Sessions { .. } = app.screen {
                    let selected = selected(&app);
                    app.screen = sessions_screen(gateway, selected)?;
                }
                // A model download or import in another terminal moves on this screen.
                if let Screen::Startup { models, .. } = &mut app.screen {
                    *models = tokio::task::block_in_place(|| local_models(project));
                }
            }
        }
    }
}

/// The session on screen, if one is.
fn open_session(app: &App) -> Option<SessionId> {
    match &app.screen {
        Screen::Session { id, .. } => Some(id.clone()),
        _ => None,
    }
}

/// Whether the open session has an action running now.
fn action_running(app: &App) -> bool {
    app.snapshot().is_some_and(|s| {
        s.projection
            .actions
            .iter()
            .any(|a| a.state == heartwood_events::ActionState::Running)
    })
}

/// Waits for the next update, then takes any others already queued (one frame covers them).
async fn next_update(updates: &mut Option<SessionFollow>) -> bool {
    let Some(follow) = updates.as_mut() else {
        return std::future::pending().await;
    };
    match follow.next().await {
        Some(_) => {
            while follow.try_next().is_some() {}
            true
        }
        None => {
            *updates = None;
            false
        }
    }
}

/// Shows the open session as it stands; the gateway reads it on its blocking pool (a session
/// served by another process is read and verified from its files).
async fn refresh(app: &mut App, gateway: &SessionGateway) {
    if let Screen::Session { id, .. } = &app.screen {
        let id = id.clone();
        match gateway.current(&id).await {
            Ok(snapshot) => app.show_snapshot(snapshot),
            Err(e) => app.notice = Some(e.to_string()),
        }
        refresh_figure(app, gateway, &id);
    }
}

/// Asks the gateway for the judged model's picture when the run's assessment changed (it
/// reads the project's files, so it runs where blocking is allowed).
fn refresh_figure(app: &mut App, gateway: &SessionGateway, id: &SessionId) {
    let assessed = app
        .snapshot()
        .and_then(|s| s.projection.workflow.as_ref())
        .and_then(|w| w.assessment.as_ref())
        .map(|a| a.fingerprint.clone());
    let Some(fingerprint) = assessed else {
        app.figure = None;
        return;
    };
    if app.figure_for.as_deref() == Some(fingerprint.as_str()) {
        return;
    }
    app.figure_for = Some(fingerprint);
    app.figure = tokio::task::block_in_place(|| gateway.workflow_figure(id))
        .ok()
        .flatten();
}

/// Carries out an intent; `false` means quit.
async fn apply(
    app: &mut App,
    intent: Intent,
    gateway: &SessionGateway,
    project: &ProjectContext,
    updates: &mut Option<SessionFollow>,
) -> Result<bool> {
    app.notice = None;
    match intent {
        Intent::Quit => return Ok(false),
        Intent::Submit(kind) => {
            let Screen::Session { id, .. } = &app.screen else {
                return Ok(true);
            };
            let id = id.clone();
            let command = Command::new(SessionGateway::new_command_id(), id.clone(), kind);
            // A command may read files (a stage's checks) or wait for a model route's reachability:
            // the gateway does that on its blocking pool, so the loop's other tasks keep running.
            let submitted = gateway.submit(command).await.map(|r| vec![r]);
            answered(app, gateway, updates, &id, submitted).await;
        }
        Intent::Say(text) => {
            let Screen::Session { id, .. } = &app.screen else {
                return Ok(true);
            };
            let id = id.clone();
            // Typed text is a command like any other: its meaning is the gateway's rule.
            let policy = Default::default();
            let kind = heartwood_events::CommandKind::Say { text, policy };
            let said = Command::new(SessionGateway::new_command_id(), id.clone(), kind);
            let receipt = gateway.submit(said).await.map(|r| vec![r]);
            answered(app, gateway, updates, &id, receipt).await;
        }
        Intent::Open(id) => open(app, gateway, updates, id).await,
        Intent::NewSession => {
            *updates = None;
            let id = SessionGateway::new_session_id();
            app.screen = Screen::Session {
                snapshot: Some(Box::new(heartwood_gateway::blank_snapshot(id.clone()))),
                id,
            };
        }
        Intent::Back => {
            *updates = None;
            app.screen = sessions_screen(gateway, 0)?;
        }
        Intent::Workflows => {
            match tokio::task::block_in_place(|| {
                heartwood_gateway::workflow_catalog(gateway.project())
            }) {
                Ok(entries) => {
                    *updates = None;
                    app.screen = Screen::Workflows(Box::new(catalog::CatalogScreen::new(entries)));
                }
                Err(e) => app.notice = Some(e.to_string()),
            }
        }
        Intent::StartWorkflow {
            definition,
            question,
        } => start_workflow(app, gateway, updates, definition, question).await,
        Intent::Files => {
            let session = open_session(app);
            match tokio::task::block_in_place(|| files_screen(project, session)) {
                Ok(screen) => {
                    *updates = None;
                    app.screen = Screen::Files(Box::new(screen));
                }
                Err(e) => app.notice = Some(e.to_string()),
            }
        }
        Intent::ShowDiff(index) => {
            if let Screen::Files(screen) = &mut app.screen {
                screen.scroll = 0;
                screen.diff = match screen.changes.get(index) {
                    Some((_, path)) => tokio::task::block_in_place(|| {
                        diff_of(project, screen.session.as_ref(), path)
                    }),
                    None => String::new(),
                };
            }
        }
        Intent::Connect {
            preset,
            base_url,
            model,
            api_key_env,
        } => match form_route(project, preset, base_url, model, api_key_env) {
            Ok(route) => connect_or_sign_in(app, route, gateway, project)?,
            Err(e) => app.notice = Some(e.to_string()),
        },
        Intent::Recheck => app.screen = first_screen(gateway, project)?,
        Intent::Skills => {
            *updates = None;
            match tokio::task::block_in_place(|| SkillsService::open(project).catalog()) {
                Ok(catalog) => {
                    app.screen = Screen::Skills {
                        catalog: Box::new(catalog),
                        selected: 0,
                        detail: None,
                        scroll: 0,
                    };
                }
                Err(e) => app.notice = Some(e.to_string()),
            }
        }
        Intent::ShowSkill { name, source } => show_skill(app, project, &name, &source),
        Intent::DecideSkill {
            decision,
            name,
            source,
            digest,
        } => decide_skill(app, project, decision, &name, &source, digest.as_deref()),
    }
    Ok(true)
}

/// The route the connect form describes: a preset's with the form's choices, or a compatible
/// service's (the gateway's rule, the same as `model connect`'s).
fn form_route(
    project: &ProjectContext,
    preset: Option<&'static str>,
    base_url: String,
    model: String,
    api_key_env: Option<String>,
) -> Result<RouteConfig, heartwood_gateway::GatewayError> {
    // Checked before it is saved: a wrong port or model name stays in the form, with the
    // reason and the models the service lists.
    let asked = heartwood_gateway::route_request::RouteRequest {
        preset: preset.map(str::to_owned),
        category: preset
            .is_none()
            .then_some(heartwood_gateway::config::RouteCategory::Compatible),
        base_url: Some(base_url),
        model: Some(model),
        // An emptied key field means the service takes none.
        api_key_env: Some(api_key_env.unwrap_or_default()),
        ..Default::default()
    };
    Ok(heartwood_gateway::route_request::route_for(project, asked)?)
}

/// Connects `route`, or for a subscription not signed in yet, shows the sign-in code first (the
/// loop polls the gateway until it is done, then connects).
fn connect_or_sign_in(
    app: &mut App,
    route: RouteConfig,
    gateway: &SessionGateway,
    project: &ProjectContext,
) -> Result<()> {
    // A subscription is signed in first: the code and page are shown, and the loop
    // polls the gateway until the sign-in is done, then connects.
    if route.category == heartwood_gateway::config::RouteCategory::Subscription
        && heartwood_gateway::subscription::not_signed_in(&route).is_some()
    {
        match tokio::task::block_in_place(|| gateway.start_sign_in()) {
            Ok(pending) => {
                app.notice = Some(sign_in_notice(&pending));
                app.after_sign_in = Some(route);
            }
            Err(e) => app.notice = Some(e.to_string()),
        }
        return Ok(());
    }
    connect(app, route, gateway, project)
}

/// Approves, activates or deactivates a skill, then shows it again (with the refusal, if any).
fn decide_skill(
    app: &mut App,
    project: &ProjectContext,
    decision: SkillDecision,
    name: &str,
    source: &str,
    digest: Option<&str>,
) {
    let skills = SkillsService::open(project);
    let decided = tokio::task::block_in_place(|| match (decision, digest) {
        (SkillDecision::Approve, Some(digest)) => {
            skills.approve(name, Some(source), digest).map(|_| None)
        }
        // Nothing is asked of the gateway: there is no tree to approve.
        (SkillDecision::Approve, None) => Ok(Some(
            "the skill cannot be read, so there is no tree to approve".to_owned(),
        )),
        (SkillDecision::Activate, _) => skills.activate(name, Some(source)).map(|_| None),
        (SkillDecision::Deactivate, _) => skills.deactivate(name).map(|_| None),
    });
    let refused = decided.unwrap_or_else(|e| Some(e.to_string()));
    show_skill(app, project, name, source);
    if refused.is_some() {
        app.notice = refused;
    }
}

/// Opens session `id` and follows it.
async fn open(
    app: &mut App,
    gateway: &SessionGateway,
    updates: &mut Option<SessionFollow>,
    id: SessionId,
) {
    // Followed from now: the frame shows a fresh snapshot, not the events one by one.
    match gateway.follow(&id, u64::MAX).await {
        Ok(follow) => {
            *updates = Some(follow);
            app.screen = Screen::Session { id, snapshot: None };
            app.scroll = 0;
            refresh(app, gateway).await;
        }
        Err(e) => app.notice = Some(e.to_string()),
    }
}

/// Starts a run of `definition` on `question` in a new session and opens it; a refusal stays
/// on the catalog screen with its reason.
async fn start_workflow(
    app: &mut App,
    gateway: &SessionGateway,
    updates: &mut Option<SessionFollow>,
    definition: String,
    question: String,
) {
    let id = SessionGateway::new_session_id();
    let kind = heartwood_events::CommandKind::WorkflowStart {
        definition,
        question,
        inputs: Default::default(),
    };
    let command = Command::new(SessionGateway::new_command_id(), id.clone(), kind);
    match gateway.submit(command).await {
        Ok(receipt) => match receipt.outcome {
            Outcome::Refused(refusal) => app.notice = Some(format!("refused: {refusal}")),
            Outcome::Applied { .. } => open(app, gateway, updates, id).await,
        },
        Err(e) => app.notice = Some(e.to_string()),
    }
}

/// The workspace screen: the changed files the gateway lists (attributed to `session`
/// without Git) and the first one's diff. Reads files and Git: call it where blocking is
/// allowed.
fn files_screen(
    project: &ProjectContext,
    session: Option<SessionId>,
) -> Result<files::FilesScreen, heartwood_gateway::GatewayError> {
    let service = heartwood_gateway::workspace::WorkspaceService::open(project)?;
    let report = service.changes(
        session.as_ref().map(|s| s.as_str()),
        heartwood_gateway::workspace::ChangeLimits::default(),
    )?;
    let changes: Vec<(char, String)> = report
        .changes
        .changes
        .iter()
        .map(|c| (c.kind.mark(), c.path.to_string()))
        .collect();
    let diff = match changes.first() {
        Some((_, path)) => worded(service.change_diff(session.as_ref().map(|s| s.as_str()), path)),
        None => String::new(),
    };
    Ok(files::FilesScreen {
        session,
        summary: report.summary,
        changes,
        selected: 0,
        diff,
        scroll: 0,
    })
}

/// One changed file's diff as the gateway words it (or why it cannot be shown).
fn diff_of(project: &ProjectContext, session: Option<&SessionId>, path: &str) -> String {
    worded(
        heartwood_gateway::workspace::WorkspaceService::open(project)
            .and_then(|service| service.change_diff(session.map(|s| s.as_str()), path)),
    )
}

/// A diff, or why it cannot be shown, as the screen's text.
fn worded(diff: Result<String, heartwood_gateway::GatewayError>) -> String {
    diff.unwrap_or_else(|e| e.to_string())
}

/// Reloads the catalog and opens `name` from `source` for review, as the gateway now has it.
fn show_skill(app: &mut App, project: &ProjectContext, name: &str, source: &str) {
    let skills = SkillsService::open(project);
    let loaded = tokio::task::block_in_place(|| {
        Ok::<_, heartwood_gateway::GatewayError>((
            skills.catalog()?,
            skills.show(name, Some(source))?,
        ))
    });
    match loaded {
        Ok((catalog, detail)) => {
            let selected = catalog
                .skills
                .iter()
                .position(|s| s.name == name && s.source == source)
                .unwrap_or(0);
            app.screen = Screen::Skills {
                catalog: Box::new(catalog),
                selected,
                detail: Some(Box::new(detail)),
                scroll: 0,
            };
        }
        Err(e) => app.notice = Some(e.to_string()),
    }
}

/// Shows a refusal (or error) from submitted commands, and follows the session.
async fn answered(
    app: &mut App,
    gateway: &SessionGateway,
    updates: &mut Option<SessionFollow>,
    id: &heartwood_events::SessionId,
    receipts: Result<Vec<heartwood_events::Receipt>, heartwood_gateway::GatewayError>,
) {
    match receipts {
        Ok(receipts) => {
            for receipt in receipts {
                if let Outcome::Refused(refusal) = receipt.outcome {
                    app.notice = Some(refusal.to_string());
                }
            }
            if updates.is_none() {
                *updates = gateway.follow(id, u64::MAX).await.ok();
            }
            refresh(app, gateway).await;
        }
        Err(e) => app.notice = Some(e.to_string()),
    }
}

/// The startup plan's screen, or the session list when the project is ready. The plan reads
/// the project's configuration and sessions and may probe a local service: done where blocking
/// is allowed, so the loop's other tasks keep running.
fn first_screen(gateway: &SessionGateway, project: &ProjectContext) -> Result<Screen> {
    let plan = tokio::task::block_in_place(|| startup::plan(project))?;
    if plan.phase == Phase::Ready {
        return sessions_screen(gateway, 0);
    }
    Ok(Screen::Startup {
        plan: Box::new(plan),
        form: ConnectForm::default(),
        models: tokio::task::block_in_place(|| local_models(project)),
    })
}

/// The project's local models and transfers, when there are any to show.
pub(crate) fn local_models(
    project: &ProjectContext,
) -> Option<Box<heartwood_gateway::models::LocalModelsView>> {
    let view = heartwood_gateway::models::ModelDesk::new(project)
        .view()
        .ok()?;
    (!view.models.is_empty() || !view.transfers.is_empty()).then(|| Box::new(view))
}

/// The session list; the rows are read from the sessions' files, where blocking is allowed.
fn sessions_screen(gateway: &SessionGateway, selected: usize) -> Result<Screen> {
    let rows: Vec<SessionRow> = tokio::task::block_in_place(|| gateway.rows(LISTED_SESSIONS))?
        .into_iter()
        .map(|row| SessionRow {
            id: row.session,
            when: row
                .last_activity
                .map(|t| t.as_str().to_owned())
                .unwrap_or_default(),
            status: row.status_line,
            pending: row.pending,
            title: row.title,
        })
        .collect();
    let selected = selected.min(rows.len().saturating_sub(1));
    Ok(Screen::Sessions { rows, selected })
}

fn selected(app: &App) -> usize {
    match &app.screen {
        Screen::Sessions { selected, .. } => *selected,
        _ => 0,
    }
}

/// Checks and saves `route` (a wrong port or model name stays in the form, with the reason and
/// the models the service lists), then shows where the project stands.
fn connect(
    app: &mut App,
    route: RouteConfig,
    gateway: &SessionGateway,
    project: &ProjectContext,
) -> Result<()> {
    let connected = tokio::task::block_in_place(|| {
        heartwood_gateway::route_check::connect(
            project,
            route,
            false,
            heartwood_gateway::route_check::Scope::Project,
        )
    });
    match connected {
        Ok(c) if c.saved => app.screen = first_screen(gateway, project)?,
        Ok(c) => {
            app.notice = Some(format!(
                "Not saved: {}. Change the form and press Enter again.",
                c.refusal.unwrap_or_default()
            ));
        }
        Err(e) => app.notice = Some(e.to_string()),
    }
    Ok(())
}

/// What the researcher is asked to do while a ChatGPT sign-in waits.
fn sign_in_notice(pending: &heartwood_gateway::subscription::Pending) -> String {
    format!(
        "Sign in with ChatGPT: open {} and enter the code {} (it expires in {} minutes). \
         Waiting for your approval; Esc quits.",
        pending.verification_url,
        pending.user_code,
        pending.expires_in_secs / 60
    )
}

/// Polls the ChatGPT sign-in in progress; once it is done, connects the route it was for.
fn poll_sign_in(app: &mut App, gateway: &SessionGateway, project: &ProjectContext) -> Result<()> {
    use heartwood_gateway::subscription::Progress;
    match tokio::task::block_in_place(|| gateway.poll_sign_in()) {
        Ok(Progress::Waiting { .. }) => {}
        Ok(Progress::SignedIn(_)) => {
            if let Some(route) = app.after_sign_in.take() {
                app.notice = None;
                connect(app, route, gateway, project)?;
            }
        }
        Ok(Progress::Expired) => {
            app.after_sign_in = None;
            app.notice = Some(
                "The code expired before it was approved; press Enter to sign in again.".into(),
            );
        }
        Err(e) => {
            app.after_sign_in = None;
            app.notice = Some(e.to_string());
        }
    }
    Ok(())
}
