//! What the interface holds besides the projection: which screen is up, what is being typed,
//! where the conversation is scrolled. Keys become [`Intent`]s; the loop carries them out
//! through the gateway, so this module never touches a session.

use heartwood_events::workflow::ModelFigure;
use heartwood_events::{ActionSetId, CommandKind, CommandName, Decision, SessionId};
use heartwood_gateway::Snapshot;
use heartwood_gateway::models::LocalModelsView;
use heartwood_gateway::skills::{CatalogView, SkillDetail};
use heartwood_gateway::startup::StartupPlan;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::intent::{Intent, SkillDecision};

/// One row of the session list (everything in it comes from the gateway).
#[derive(Debug, Clone)]
pub struct SessionRow {
    /// The session.
    pub id: SessionId,
    /// When it was last active.
    pub when: String,
    /// Its status line.
    pub status: String,
    /// Whether an action set waits for a decision.
    pub pending: bool,
    /// What the session is about (its first task's first line), when it has had a task.
    pub title: Option<String>,
}

/// The form that connects a model route: a preset (or none) fills the fields, which stay
/// editable.
#[derive(Debug, Clone, Default)]
pub struct ConnectForm {
    /// The chosen preset's index in [`heartwood_gateway::presets::PRESETS`]; `None`: a
    /// service of the researcher's own.
    pub preset: Option<usize>,
    /// The service's base URL.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The environment variable that holds the key (empty: none).
    pub api_key_env: String,
    /// Which row has the cursor (see [`ConnectForm::ROWS`]).
    pub field: usize,
}

impl ConnectForm {
    /// The rows, in order: the preset (chosen with ← →), then the three text fields.
    pub const ROWS: [&'static str; 4] = ["Preset", "Base URL", "Model", "Key var"];

    /// Moves the preset choice by `step` (wrapping through "none") and fills the fields.
    fn cycle_preset(&mut self, step: isize) {
        let presets = heartwood_gateway::presets::PRESETS;
        let slots = presets.len() as isize + 1;
        let now = self.preset.map_or(0, |i| i as isize + 1);
        let next = (now + step).rem_euclid(slots);
        self.preset = (next > 0).then(|| next as usize - 1);
        match self.preset.map(|i| &presets[i]) {
            Some(preset)
                if preset.category == heartwood_gateway::config::RouteCategory::Subscription =>
            {
                self.base_url = heartwood_gateway::subscription::base_url();
                self.model = preset.model.to_owned();
                self.api_key_env.clear();
            }
            Some(preset) => {
                self.base_url = preset.base_url.to_owned();
                self.model = preset.model.to_owned();
                self.api_key_env = preset.api_key_env.unwrap_or_default().to_owned();
            }
            None => {
                self.base_url.clear();
                self.model.clear();
                self.api_key_env.clear();
            }
        }
    }

    /// The text field under the cursor (`None` on the preset row).
    fn text(&mut self) -> Option<&mut String> {
        match self.field {
            1 => Some(&mut self.base_url),
            2 => Some(&mut self.model),
            3 => Some(&mut self.api_key_env),
            _ => None,
        }
    }
}

/// The screen on display.
pub enum Screen {
    /// The startup plan, when the project is not ready.
    Startup {
        /// The plan.
        plan: Box<StartupPlan>,
        /// The connect form (used in `model_required`).
        form: ConnectForm,
        /// The project's local models and transfers, when it has any.
        models: Option<Box<LocalModelsView>>,
    },
    /// The project's sessions.
    Sessions {
        /// Rows, most recent first.
        rows: Vec<SessionRow>,
        /// The highlighted row.
        selected: usize,
    },
    /// One session.
    Session {
        /// The session.
        id: SessionId,
        /// The latest snapshot; `None` for a new session before its first task.
        snapshot: Option<Box<Snapshot>>,
    },
    /// The workflow catalog, and a run's research question being typed.
    Workflows(Box<super::catalog::CatalogScreen>),
    /// The project's changed files and one file's diff.
    Files(Box<super::files::FilesScreen>),
    /// The project's skills, and one under review.
    Skills {
        /// The catalog, as the gateway revalidated it.
        catalog: Box<CatalogView>,
        /// The highlighted row.
        selected: usize,
        /// The skill under review (its files and SKILL.md), when one is open.
        detail: Option<Box<SkillDetail>>,
        /// Review lines scrolled down from the top.
        scroll: usize,
    },
}

/// Where typed keys go on the session screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The message line.
    Input,
    /// The review, which owns the keyboard while a set waits: `a` then Enter allows all once,
    /// `r` then Enter (or `r` then the reason's text) asks for a reason and rejects all; any
    /// other letter (including one after `a`) is typing and goes to the message line, so a
    /// sentence cannot allow anything.
    Review,
    /// The reason for rejecting all.
    Reason,
}

/// The interface's own state.
pub struct App {
    /// The screen.
    pub screen: Screen,
    /// The message being typed.
    pub input: String,
    /// The rejection reason being typed.
    pub reason: String,
    /// Where keys go.
    pub focus: Focus,
    /// Conversation lines scrolled up from the bottom.
    pub scroll: usize,
    /// Whether tool results are shown whole.
    pub expanded: bool,
    /// Whether the help overlay is up.
    pub help: bool,
    /// The last refusal or error, in the gateway's words.
    pub notice: Option<String>,
    /// `a` (allow) or `r` (reject) was pressed in the review: Enter goes on (allows the whole
    /// set once, or asks for the rejection's reason); a letter means it was typing.
    pub armed: Option<Decision>,
    /// Review lines scrolled down from the top.
    pub review_scroll: usize,
    /// Which of the pending set's members have been on screen (marked as they are drawn).
    pub seen: std::cell::RefCell<super::seen::Seen>,
    /// Ctrl-C was pressed while the agent worked: a second one quits.
    pub quit_armed: bool,
    /// The time frames are drawn at; `None` for the clock (tests fix it).
    pub now: Option<heartwood_events::Timestamp>,
    /// A workflow control that asks for a second press (accept, cancel) was pressed once.
    pub workflow_armed: Option<CommandName>,
    /// The picture of the model the run's latest checks judged, as the gateway drew it.
    pub figure: Option<ModelFigure>,
    /// The assessment fingerprint `figure` was asked for.
    pub figure_for: Option<String>,
    /// The route to connect once the ChatGPT sign-in in progress (shown in `notice`) is done.
    pub after_sign_in: Option<heartwood_gateway::config::RouteConfig>,
}

/// This interface's function key for each workflow control. The gateway decides which
/// controls exist now; this only says which key each one has here.
pub const WORKFLOW_KEYS: [(CommandName, u8); 6] = [
    (CommandName::WorkflowRun, 5),
    (CommandName::WorkflowEvaluate, 6),
    (CommandName::WorkflowAccept, 7),
    (CommandName::WorkflowCancel, 8),
    (CommandName::WorkflowReview, 9),
    (CommandName::WorkflowReviewParallel, 10),
];

/// The function key of a workflow control, in words (`F7`).
pub fn workflow_key(command: CommandName) -> Option<String> {
    WORKFLOW_KEYS
        .iter()
        .find(|(c, _)| *c == command)
        .map(|(_, n)| format!("F{n}"))
}

impl App {
    /// An app showing `screen`.
    pub fn new(screen: Screen) -> Self {
        App {
            screen,
            input: String::new(),
            reason: String::new(),
            focus: Focus::Input,
            scroll: 0,
            expanded: false,
            help: false,
            notice: None,
            armed: None,
            review_scroll: 0,
            seen: Default::default(),
            quit_armed: false,
            now: None,
            workflow_armed: None,
            figure: None,
            figure_for: None,
            after_sign_in: None,
        }
    }

    /// The open session's projection, if any.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        match &self.screen {
            Screen::Session { snapshot, .. } => snapshot.as_deref(),
            _ => None,
        }
    }

    /// Takes a new snapshot; moves focus to the review panel when a set has just appeared.
    pub fn show_snapshot(&mut self, new: Snapshot) {
        let shown = |s: &Snapshot| {
            s.projection
                .pending
                .as_ref()
                .map(|set| (set.set_id.clone(), set.revision))
        };
        let before = self.snapshot().and_then(shown);
        let after = shown(&new);
        let had_pending = before.is_some();
        let has_pending = after.is_some();
        // A set shown again (a new revision) must be reviewed again: an armed allow is dropped.
        if before != after {
            self.armed = None;
            self.review_scroll = 0;
        }
        if let Screen::Session { snapshot, .. } = &mut self.screen {
            *snapshot = Some(Box::new(new));
        }
        if has_pending && !had_pending && self.input.is_empty() {
            self.focus = Focus::Review;
        }
        if !has_pending && self.focus != Focus::Input {
            self.focus = Focus::Input;
        }
    }

    /// The pending set's members not wholly shown yet, by action id.
    pub fn unseen(&self) -> Vec<u64> {
        let Some(snapshot) = self.snapshot() else {
            return Vec::new();
        };
        let Some(set) = &snapshot.projection.pending else {
            return Vec::new();
        };
        let ids: Vec<u64> = set.members.iter().map(|m| m.action_id).collect();
        self.seen.borrow().unseen(&set.set_id, set.revision, &ids)
    }

    /// Handles one key.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Intent> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('q') | KeyCode::Char('c')) {
            let working = self
                .snapshot()
                .is_some_and(|s| s.projection.lifecycle == heartwood_events::Lifecycle::Running);
            if working && !self.quit_armed {
                self.quit_armed = true;
                self.notice = Some(
                    "The agent is working. Press Ctrl-C again to quit: the running action is \
                     stopped and recorded as interrupted, and the session waits for your next \
                     instruction. Any other key keeps working."
                        .to_owned(),
                );
                return None;
            }
            return Some(Intent::Quit);
        }
        if self.quit_armed {
            self.quit_armed = false;
            self.notice = None;
        }
        if !matches!(key.code, KeyCode::F(5..)) {
            self.workflow_armed = None;
        }
        if self.help {
            self.help = false;
            return None;
        }
        if key.code == KeyCode::F(1) {
            self.help = true;
            return None;
        }
        match &mut self.screen {
            Screen::Startup { plan, form, .. } => startup_key(plan, form, key),
            Screen::Sessions { rows, selected } => match key.code {
                KeyCode::Up => {
                    *selected = selected.saturating_sub(1);
                    None
                }
                KeyCode::Down => {
                    *selected = (*selected + 1).min(rows.len().saturating_sub(1));
                    None
                }
                KeyCode::Enter => rows.get(*selected).map(|r| Intent::Open(r.id.clone())),
                KeyCode::Char('n') => Some(Intent::NewSession),
                KeyCode::Char('s') => Some(Intent::Skills),
                KeyCode::Char('w') => Some(Intent::Workflows),
                KeyCode::Char('f') => Some(Intent::Files),
                KeyCode::Char('q') => Some(Intent::Quit),
                KeyCode::Char('?') => {
                    self.help = true;
                    None
                }
                _ => None,
            },
            Screen::Session { .. } if ctrl && key.code == KeyCode::Char('f') => Some(Intent::Files),
            Screen::Session { .. } => self.session_key(key, ctrl),
            Screen::Workflows(screen) => screen.on_key(key),
            Screen::Files(screen) => screen.on_key(key),
            Screen::Skills {
                catalog,
                selected,
                detail,
                scroll,
            } => skills_key(catalog, selected, detail, scroll, key),
        }
    }

    fn session_key(&mut self, key: KeyEvent, ctrl: bool) -> Option<Intent> {
        let pending = self
            .snapshot()
            .and_then(|s| s.projection.pending.as_ref())
            .map(|set| (set.set_id.clone(), set.revision));
        match self.focus {
            Focus::Review => self.review_key(key, ctrl, pending),
            Focus::Reason => match key.code {
                KeyCode::Enter => {
                    let reason = std::mem::take(&mut self.reason);
                    self.focus = Focus::Review;
                    let reason = (!reason.trim().is_empty()).then(|| reason.trim().to_owned());
                    pending.map(|(set, rev)| decide(set, rev, Decision::RejectAll, reason))
                }
                KeyCode::Esc => {
                    self.reason.clear();
                    self.focus = Focus::Review;
                    None
                }
                KeyCode::Backspace => {
                    self.reason.pop();
                    None
                }
                KeyCode::Char(c) if !ctrl => {
                    self.reason.push(c);
                    None
                }
                _ => None,
            },
            Focus::Input => match key.code {
                KeyCode::F(n) if n >= 5 => self.workflow_key(n),
                KeyCode::Char('r') if ctrl => Some(Intent::Submit(CommandKind::Resume)),
                KeyCode::Char('e') if ctrl => {
                    self.expanded = !self.expanded;
                    None
                }
                KeyCode::Char('?') if self.input.is_empty() => {
                    self.help = true;
                    None
                }
                KeyCode::Char(c) if !ctrl => {
                    self.input.push(c);
                    None
                }
                KeyCode::Backspace => {
                    self.input.pop();
                    None
                }
                KeyCode::Tab if pending.is_some() => {
                    self.focus = Focus::Review;
                    None
                }
                KeyCode::PageUp => {
                    self.scroll += 10;
                    None
                }
                KeyCode::PageDown => {
                    self.scroll = self.scroll.saturating_sub(10);
                    None
                }
                // Esc stops the running action now; with nothing running it leaves the session.
                KeyCode::Esc => {
                    let running = self.snapshot().is_some_and(|s| {
                        s.projection
                            .allows(heartwood_events::CommandName::Interrupt)
                    });
                    Some(if running {
                        Intent::Submit(CommandKind::Interrupt)
                    } else {
                        Intent::Back
                    })
                }
                KeyCode::Enter => self.send(),
                _ => None,
            },
        }
    }

    /// Keys while the review has the keyboard (see [`Focus::Review`]).
    fn review_key(
        &mut self,
        key: KeyEvent,
        ctrl: bool,
        pending: Option<(ActionSetId, u64)>,
    ) -> Option<Intent> {
        let armed = self.armed.take();
        match key.code {
            KeyCode::Enter => match armed {
                Some(Decision::AllowOnce) => {
                    // Refused while members were never on screen: allow stays armed, so
                    // the review's footer says why (and which), and the first scroll
                    // key, which disarms, clears it.
                    if !self.unseen().is_empty() {
                        self.armed = Some(Decision::AllowOnce);
                        return None;
                    }
                    self.notice = None;
                    pending.map(|(set, rev)| decide(set, rev, Decision::AllowOnce, None))
                }
                Some(Decision::RejectAll) => {
                    self.focus = Focus::Reason;
                    None
                }
                None => None,
            },
            KeyCode::Char('a') if !ctrl && armed.is_none() => {
                self.armed = pending.is_some().then_some(Decision::AllowOnce);
                None
            }
            KeyCode::Char('r') if !ctrl && armed.is_none() => {
                self.armed = pending.is_some().then_some(Decision::RejectAll);
                None
            }
            KeyCode::Char('?') if armed.is_none() => {
                self.help = true;
                None
            }
            // `r` and then text is a rejection with that reason: the reason line opens
            // with it (`r use x` gives "use x"; `rerun it` keeps its `r`), and Enter
            // rejects. Nothing is decided until then, nothing is allowed, Esc leaves it.
            KeyCode::Char(c) if !ctrl && armed == Some(Decision::RejectAll) => {
                self.focus = Focus::Reason;
                self.reason.clear();
                if c != ' ' {
                    self.reason.push('r');
                    self.reason.push(c);
                }
                None
            }
            // Any other letter is typing, never a decision: it goes to the message
            // line (with the `a` that armed, which was typing too).
            KeyCode::Char(c) if !ctrl => {
                if armed == Some(Decision::AllowOnce) {
                    self.input.push('a');
                }
                self.input.push(c);
                self.focus = Focus::Input;
                self.notice = Some(
                    "Typing goes to the message line; the set still waits. Tab returns to \
                     the review."
                        .to_owned(),
                );
                None
            }
            KeyCode::Up => {
                self.review_scroll = self.review_scroll.saturating_sub(1);
                None
            }
            KeyCode::Down => {
                self.review_scroll += 1;
                None
            }
            KeyCode::PageUp => {
                self.review_scroll = self.review_scroll.saturating_sub(10);
                None
            }
            KeyCode::PageDown => {
                self.review_scroll += 10;
                None
            }
            KeyCode::Tab => {
                self.focus = Focus::Input;
                None
            }
            _ => None,
        }
    }

    /// A workflow control's key: submits the control the gateway offers now, unchanged; an
    /// acceptance or a cancellation asks for the same key again first.
    fn workflow_key(&mut self, n: u8) -> Option<Intent> {
        let armed = self.workflow_armed.take();
        let command = WORKFLOW_KEYS.iter().find(|(_, k)| *k == n)?.0;
        let workflow = self.snapshot()?.projection.workflow.as_ref()?;
        let Some(control) = workflow.control(command) else {
            self.notice = Some(format!(
                "F{n} ({}) is not possible now; the workflow panel lists what is",
                command.as_str().replace('_', " ")
            ));
            return None;
        };
        let asks_twice = matches!(
            command,
            CommandName::WorkflowAccept | CommandName::WorkflowCancel
        );
        if asks_twice && armed != Some(command) {
            let what = match &control.fingerprint {
                Some(f) => format!(
                    "{} (assessment {}, run revision {})",
                    control.label,
                    &f[..f.len().min(12)],
                    control.revision
                ),
                None => control.label.clone(),
            };
            self.notice = Some(format!(
                "Press F{n} again to confirm: {what}. Any other key leaves it."
            ));
            self.workflow_armed = Some(command);
            return None;
        }
        Some(Intent::Submit(control.submit.clone()))
    }

    /// The typed text, for the gateway to act on as the session stands (a task, guidance, or
    /// guidance and resuming).
    fn send(&mut self) -> Option<Intent> {
        let text = self.input.trim().to_owned();
        if text.is_empty() {
            return None;
        }
        self.input.clear();
        self.scroll = 0;
        Some(Intent::Say(text))
    }
}

fn decide(
    set_id: ActionSetId,
    revision: u64,
    decision: Decision,
    reason: Option<String>,
) -> Intent {
    Intent::Submit(CommandKind::Decide {
        set_id,
        revision,
        decision,
        reason,
    })
}

/// Keys on the skills screen: the list chooses, Enter opens a skill for review; under review
/// `a` approves the exact tree shown, `+` activates, `-` deactivates, Esc goes back.
fn skills_key(
    catalog: &CatalogView,
    selected: &mut usize,
    detail: &mut Option<Box<SkillDetail>>,
    scroll: &mut usize,
    key: KeyEvent,
) -> Option<Intent> {
    if let Some(shown) = detail {
        let view = &shown.view;
        let decide = |decision| {
            Some(Intent::DecideSkill {
                decision,
                name: view.name.clone(),
                source: view.source.clone(),
                digest: view.digest.clone(),
            })
        };
        return match key.code {
            KeyCode::Esc => {
                *detail = None;
                *scroll = 0;
                None
            }
            KeyCode::Down | KeyCode::PageDown => {
                *scroll += if key.code == KeyCode::Down { 1 } else { 10 };
                None
            }
            KeyCode::Up | KeyCode::PageUp => {
                *scroll = scroll.saturating_sub(if key.code == KeyCode::Up { 1 } else { 10 });
                None
            }
            KeyCode::Char('a') => decide(SkillDecision::Approve),
            KeyCode::Char('+') => decide(SkillDecision::Activate),
            KeyCode::Char('-') => decide(SkillDecision::Deactivate),
            _ => None,
        };
    }
    match key.code {
        KeyCode::Up => {
            *selected = selected.saturating_sub(1);
            None
        }
        KeyCode::Down => {
            *selected = (*selected + 1).min(catalog.skills.len().saturating_sub(1));
            None
        }
        KeyCode::Enter => catalog.skills.get(*selected).map(|s| Intent::ShowSkill {
            name: s.name.clone(),
            source: s.source.clone(),
        }),
        KeyCode::Esc | KeyCode::Char('q') => Some(Intent::Back),
        _ => None,
    }
}

fn startup_key(plan: &StartupPlan, form: &mut ConnectForm, key: KeyEvent) -> Option<Intent> {
    use heartwood_gateway::startup::Phase;
    if plan.phase != Phase::ModelRequired {
        return match key.code {
            KeyCode::Char('r') | KeyCode::Enter => Some(Intent::Recheck),
            KeyCode::Char('q') | KeyCode::Esc => Some(Intent::Quit),
            _ => None,
        };
    }
    let rows = ConnectForm::ROWS.len();
    match key.code {
        KeyCode::Tab | KeyCode::Down => {
            form.field = (form.field + 1) % rows;
            None
        }
        KeyCode::BackTab | KeyCode::Up => {
            form.field = (form.field + rows - 1) % rows;
            None
        }
        KeyCode::Left | KeyCode::Right if form.field == 0 => {
            form.cycle_preset(if key.code == KeyCode::Left { -1 } else { 1 });
            None
        }
        KeyCode::Backspace => {
            if let Some(text) = form.text() {
                text.pop();
            }
            None
        }
        KeyCode::Esc => Some(Intent::Quit),
        KeyCode::Enter if !form.base_url.trim().is_empty() && !form.model.trim().is_empty() => {
            Some(Intent::Connect {
                preset: form
                    .preset
                    .map(|i| heartwood_gateway::presets::PRESETS[i].id),
                base_url: form.base_url.trim().to_owned(),
                model: form.model.trim().to_owned(),
                api_key_env: Some(form.api_key_env.trim().to_owned()).filter(|v| !v.is_empty()),
            })
        }
        KeyCode::Enter => {
            form.field = if form.base_url.trim().is_empty() {
                1
            } else {
                2
            };
            None
        }
        KeyCode::Char(c) => {
            if let Some(text) = form.text() {
                text.push(c);
            }
            None
        }
        _ => None,
    }
}
