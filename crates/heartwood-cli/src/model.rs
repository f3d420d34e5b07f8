//! `heartwood model connect | show | signin | presets`: the project's model route (local models:
//! [`crate::local_models`]).

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use heartwood_gateway::ProjectContext;
use heartwood_gateway::config::{ProjectConfig, RouteCategory, RouteConfig, RoutePrices};
use heartwood_gateway::presets;

/// The `model` subcommands.
#[derive(Subcommand)]
pub enum ModelCommand {
    /// Connect this project to a model route (writes .heartwood/config.toml).
    ///
    /// The route is checked first: the service must accept a connection and, where it lists
    /// its models, list the one chosen. Exit codes: 0 checked and saved, 2 not saved (the check
    /// failed; nothing was written), 3 saved with --save-anyway although the check failed.
    Connect(ConnectArgs),
    /// Sign in with a ChatGPT subscription (device code: open the page shown, type the code).
    /// The tokens are kept in your user configuration folder (mode 0600), never in a project.
    Signin {
        /// Print the device code and progress as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Forget the ChatGPT sign-in.
    Signout,
    /// List the presets for common services (base URL, key variable, a model, prices).
    Presets {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the project's model route.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Local(crate::local_models::LocalCommand),
}

/// `heartwood model connect`'s options: the route, and how it is saved.
#[derive(Clone, Args)]
pub struct ConnectArgs {
    /// A common service's settings (see `heartwood model presets`); the options given
    /// replace the preset's.
    #[arg(long)]
    pub preset: Option<String>,
    /// How the model is reached (`research`: the platform's own model transport, whose
    /// base URL and model the platform supplies).
    #[arg(long, value_enum, required_unless_present = "preset")]
    pub category: Option<Category>,
    /// The service's OpenAI-compatible base URL, e.g. http://localhost:11434/v1.
    #[arg(long)]
    pub base_url: Option<String>,
    /// The model name the service expects.
    #[arg(long)]
    pub model: Option<String>,
    /// Price in US dollars per million input tokens (with --price-out), so usage is shown
    /// in money; presets know the list prices of some models.
    #[arg(long, requires = "price_out")]
    pub price_in: Option<String>,
    /// Price in US dollars per million output tokens.
    #[arg(long, requires = "price_in")]
    pub price_out: Option<String>,
    /// For `--category replay`: the recorded exchanges to serve (a session's
    /// `.heartwood/sessions/ID/backend/exchanges.jsonl`).
    #[arg(long)]
    pub recording: Option<String>,
    /// The environment variable that holds the API key (the key itself is never stored).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Upper bound on prompt tokens per model call.
    #[arg(long, default_value_t = 100_000)]
    pub max_input_tokens: u64,
    /// Upper bound on reply tokens per model call.
    #[arg(long, default_value_t = 4_096)]
    pub max_output_tokens: u64,
    /// Seconds one model call may take, retries included; past it the run stops with an
    /// error you can resume from.
    #[arg(long, default_value_t = 300)]
    pub timeout_secs: u64,
    /// The agent engine for the project's new sessions (see `heartwood backend`).
    #[arg(long, value_enum)]
    pub backend: Option<crate::backend::Engine>,
    /// Save the route even when the service cannot be reached or does not list the model
    /// (exit code 3).
    #[arg(long)]
    pub save_anyway: bool,
    /// Save it as your default route (in your user configuration), which every project
    /// without a route of its own uses, instead of this project's.
    #[arg(long, conflicts_with = "backend")]
    pub user: bool,
    /// Say only what was checked and saved, not the project's whole status afterwards (for
    /// scripts, and for batches connecting many projects).
    #[arg(long)]
    pub quiet: bool,
}

impl ConnectArgs {
    /// The route these options describe (a preset's settings with the options given over
    /// them), not yet checked or saved.
    pub fn route(&self, project: &ProjectContext) -> Result<RouteConfig> {
        let prices = match (&self.price_in, &self.price_out) {
            (Some(input), Some(output)) => Some(RoutePrices {
                input_micros_per_mtok: presets::parse_dollars(input)?,
                output_micros_per_mtok: presets::parse_dollars(output)?,
            }),
            _ => None,
        };
        let asked = heartwood_gateway::route_request::RouteRequest {
            preset: self.preset.clone(),
            category: self.category.map(RouteCategory::from),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            api_key_env: self.api_key_env.clone(),
            recording: self.recording.clone(),
            prices,
        };
        let mut route = heartwood_gateway::route_request::route_for(project, asked)?;
        route.max_input_tokens = self.max_input_tokens;
        route.max_output_tokens = self.max_output_tokens;
        route.timeout_secs = self.timeout_secs;
        Ok(route)
    }
}

/// Route categories as the command line spells them.
#[derive(Clone, Copy, ValueEnum)]
pub enum Category {
    /// A hosted provider reached with an API key.
    Hosted,
    /// An OpenAI-compatible service (vLLM, Ollama, llama.cpp server, LiteLLM, ...).
    Compatible,
    /// An endpoint the research environment provides.
    Research,
    /// A local model Heartwood manages.
    Local,
    /// The recorded replies of an earlier session (no model service needed).
    Replay,
    /// A ChatGPT subscription (sign in first with `heartwood model signin`).
    Subscription,
}

impl From<Category> for RouteCategory {
    fn from(c: Category) -> Self {
        match c {
            Category::Hosted => RouteCategory::Hosted,
            Category::Compatible => RouteCategory::Compatible,
            Category::Research => RouteCategory::Research,
            Category::Local => RouteCategory::Local,
            Category::Replay => RouteCategory::Replay,
            Category::Subscription => RouteCategory::Subscription,
        }
    }
}

/// Runs one `model` subcommand.
pub fn run(project: &ProjectContext, cmd: ModelCommand) -> Result<ExitCode> {
    match cmd {
        ModelCommand::Connect(args) => connect(project, args),
        ModelCommand::Signin { json } => sign_in(json),
        ModelCommand::Local(cmd) => crate::local_models::run(project, cmd),
        ModelCommand::Signout => {
            if heartwood_gateway::subscription::sign_out()? {
                say!("signed out; the tokens were deleted");
            } else {
                say!("nobody was signed in");
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelCommand::Presets { json } => list_presets(json),
        ModelCommand::Show { json } => show(project, json),
    }
}

/// `model connect`: checks the route, saves it when the check passes (or when told to anyway)
/// and shows where the project now stands.
fn connect(project: &ProjectContext, args: ConnectArgs) -> Result<ExitCode> {
    let route = args.route(project)?;
    let ConnectArgs {
        backend,
        save_anyway,
        user,
        quiet,
        ..
    } = args;
    let scope = if user {
        heartwood_gateway::route_check::Scope::User
    } else {
        heartwood_gateway::route_check::Scope::Project
    };
    let connected = heartwood_gateway::route_check::connect(project, route, save_anyway, scope)?;
    if let Some(models) = &connected.check.models {
        say!(
            "the service lists {} model(s): {}",
            models.len(),
            models.join(", ")
        );
    }
    if let Some(note) = &connected.check.listing_note {
        say!("note: {note}");
    }
    if !connected.saved {
        eprintln!(
            "heartwood: not saved: {}; fix the route, or add --save-anyway to save it as \
             it is",
            connected.refusal.as_deref().unwrap_or("the check failed")
        );
        return Ok(ExitCode::from(2));
    }
    if let Some(engine) = backend {
        ProjectConfig::set_backend(project, engine.into())?;
    }
    if let Some(path) = &connected.saved_to {
        say!("saved to {path}");
    }
    match (&connected.refusal, quiet) {
        (Some(why), true) => say!("saved anyway: {why}"),
        (None, true) => say!("connected"),
        (Some(why), false) => say!("saved anyway: {why}; the project's status is now:"),
        (None, false) => say!("connected; the project's status is now:"),
    }
    if !quiet {
        crate::status::print_plan(&heartwood_gateway::startup::plan(project)?);
    }
    Ok(if connected.refusal.is_some() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

/// `model presets`: the common services, their key variables and list prices.
fn list_presets(json: bool) -> Result<ExitCode> {
    if json {
        say!("{}", serde_json::to_string_pretty(presets::PRESETS)?);
        return Ok(ExitCode::SUCCESS);
    }
    for p in presets::PRESETS {
        let prices = if p.free {
            "free per token".to_owned()
        } else if p.prices.is_empty() {
            "no prices known".to_owned()
        } else {
            format!(
                "list prices of {} models ({})",
                p.prices.len(),
                presets::PRICES_AS_OF
            )
        };
        say!(
            "{:<11} {:<34} {:<32} key {:<20} model {} ({prices})",
            p.id,
            p.name,
            p.base_url,
            p.api_key_env.unwrap_or("(none)"),
            p.model
        );
    }
    say!("\nheartwood model connect --preset NAME [--model M] [--price-in D --price-out D]");
    Ok(ExitCode::SUCCESS)
}

/// `model show`: the connected route, with where its credentials stand and what that allows.
fn show(project: &ProjectContext, json: bool) -> Result<ExitCode> {
    let config = ProjectConfig::load(project)?;
    match (config.model.clone(), json) {
        (None, true) => say!("null"),
        (None, false) => {
            say!("no model is connected; run heartwood model connect --help")
        }
        (Some(mut route), true) => {
            // Shown, not stored: credentials in the URL stay in the config file.
            route.base_url = route.display_url();
            say!("{}", serde_json::to_string_pretty(&route)?)
        }
        (Some(route), false) => {
            if let Some(path) = &config.route_from_user {
                say!("from              your default route in {path}");
            }
            say!("category          {}", route.category.as_str());
            say!("base URL          {}", route.display_url());
            say!("model             {}", route.model);
            say!(
                "API key from      {}",
                route.api_key_env.as_deref().unwrap_or("(none)")
            );
            say!("input budget      {} tokens", route.max_input_tokens);
            say!("output budget     {} tokens", route.max_output_tokens);
            say!("call timeout      {} s", route.timeout_secs);
            let platform = config.platform()?;
            let boundary = heartwood_gateway::platform::boundary(&platform, &route);
            let automation = heartwood_gateway::platform::automation(
                boundary,
                heartwood_gateway::platform::credential_name(&route).as_deref(),
            );
            say!("credentials       {}", boundary.as_str());
            say!(
                "automation        {}: {}",
                if automation.allowed {
                    "low-risk allowed"
                } else {
                    "off"
                },
                automation.reason
            );
            say!(
                "prices            {}",
                route.prices.map_or(
                    "not set (usage cost is shown as unknown)".to_owned(),
                    |p| format!(
                        "${} in, ${} out per million tokens",
                        dollars(p.input_micros_per_mtok),
                        dollars(p.output_micros_per_mtok)
                    )
                )
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Micro-dollars as dollars, without trailing zeros past the cents.
fn dollars(micros: u64) -> String {
    let fraction = format!("{:06}", micros % 1_000_000);
    let fraction = fraction.trim_end_matches('0');
    format!("{}.{fraction:0<2}", micros / 1_000_000)
}

/// The device-code sign-in: shows the code and the page, polls until approved or expired.
fn sign_in(json: bool) -> Result<ExitCode> {
    use heartwood_gateway::subscription::{Progress, SignIn};
    heartwood_cli::runtime::block_on(heartwood_cli::runtime::Workers::Two, async {
        let sign_in = SignIn::start().await?;
        let pending = sign_in.pending();
        if json {
            say!("{}", serde_json::to_string(&pending)?);
        } else {
            say!(
                "Open {} and enter the code {}  (it expires in {} minutes)",
                pending.verification_url,
                pending.user_code,
                pending.expires_in_secs / 60
            );
            say!("Waiting for you to approve...");
        }
        loop {
            tokio::time::sleep(sign_in.interval()).await;
            match sign_in.poll().await? {
                Progress::Waiting { .. } => {}
                Progress::Expired => {
                    anyhow::bail!(
                        "the code expired before it was approved; run heartwood model signin again"
                    )
                }
                Progress::SignedIn(who) => {
                    if json {
                        say!("{}", serde_json::to_string(&who)?);
                    } else {
                        say!(
                            "Signed in{}{}. Connect a model with: heartwood model connect \
                             --category subscription --model gpt-5-codex",
                            who.email.map(|e| format!(" as {e}")).unwrap_or_default(),
                            who.plan.map(|p| format!(" ({p})")).unwrap_or_default()
                        );
                    }
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
    })?
}
