//! A model route as an interface asks for it (a preset with choices, or a category with its
//! fields), turned into the route to check and save. The command line's `model connect` and the
//! terminal interface's connect form both ask here, so a route means the same whichever asked.

use crate::config::{ProjectConfig, RouteCategory, RouteConfig, RoutePrices};
use crate::{ProjectContext, ProjectError, RouteRefusal, presets};

/// What the researcher asked for. Empty strings count as not given.
#[derive(Debug, Clone, Default)]
pub struct RouteRequest {
    /// A preset's id (`heartwood model presets`); its category and defaults apply.
    pub preset: Option<String>,
    /// The category, when no preset is named.
    pub category: Option<RouteCategory>,
    /// The service's base URL.
    pub base_url: Option<String>,
    /// The model's name.
    pub model: Option<String>,
    /// The variable holding the API key; `Some("")` means the service takes none.
    pub api_key_env: Option<String>,
    /// A replay route's recording.
    pub recording: Option<String>,
    /// List prices, when the researcher gave them.
    pub prices: Option<RoutePrices>,
}

/// The route `asked` describes in `project`, with the default budgets and timeout; refused
/// with what is missing. Nothing is checked against the service or saved here.
pub fn route_for(
    project: &ProjectContext,
    asked: RouteRequest,
) -> Result<RouteConfig, ProjectError> {
    let given = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let (model, base_url, prices) = (given(asked.model), given(asked.base_url), asked.prices);
    let route = match (&asked.preset, asked.category) {
        (Some(id), _) => {
            let preset = presets::find(id)?;
            presets::route(
                preset,
                presets::Choice {
                    model,
                    base_url,
                    api_key_env: asked.api_key_env,
                    prices,
                },
            )
        }
        (None, Some(RouteCategory::Local)) => {
            return Err(RouteRefusal::LocalNeedsStore.into());
        }
        (None, Some(RouteCategory::Subscription)) => {
            let Some(model) = model else {
                return Err(RouteRefusal::SubscriptionNeedsModel.into());
            };
            RouteConfig {
                prices,
                ..RouteConfig::subscription(&model)
            }
        }
        (None, Some(RouteCategory::Research)) => {
            let platform = ProjectConfig::load(project)?.platform()?;
            let Some(transport) = platform.model_transport else {
                return Err(RouteRefusal::NoPlatformTransport(
                    platform.platform.as_str().to_owned(),
                )
                .into());
            };
            RouteConfig {
                category: RouteCategory::Research,
                prices,
                ..RouteConfig::compatible(
                    base_url.as_deref().unwrap_or(&transport.base_url),
                    model.as_deref().unwrap_or(&transport.model),
                )
            }
        }
        (None, Some(category)) => {
            let replay = category == RouteCategory::Replay;
            let (Some(base_url), Some(model)) = (
                base_url.or_else(|| replay.then(|| "replay".to_owned())),
                model.or_else(|| replay.then(|| "recorded".to_owned())),
            ) else {
                return Err(RouteRefusal::NeedsUrlAndModel.into());
            };
            RouteConfig {
                category,
                api_key_env: asked.api_key_env,
                recording: asked.recording,
                prices,
                ..RouteConfig::compatible(&base_url, &model)
            }
        }
        (None, None) => return Err(RouteRefusal::NeedsCategory.into()),
    };
    // An emptied key field means the service takes none.
    Ok(RouteConfig {
        api_key_env: route.api_key_env.filter(|v| !v.is_empty()),
        ..route
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, ProjectContext) {
        let folder = tempfile::tempdir().expect("project");
        std::fs::create_dir(folder.path().join(".heartwood")).expect("state");
        let context = ProjectContext::at(folder.path()).expect("project");
        (folder, context)
    }

    #[test]
    fn a_preset_takes_the_choices_given_and_an_emptied_key_means_none() {
        let (_folder, project) = project();
        let route = route_for(
            &project,
            RouteRequest {
                preset: Some("openai".into()),
                model: Some("gpt-4o".into()),
                base_url: Some(" ".into()),
                api_key_env: Some(String::new()),
                ..Default::default()
            },
        )
        .expect("a preset route");
        assert_eq!(route.category, RouteCategory::Hosted);
        assert_eq!(route.model, "gpt-4o");
        assert_eq!(
            route.base_url, "https://api.openai.com/v1",
            "a blank URL is not given"
        );
        assert_eq!(route.api_key_env, None);
        assert!(
            route.prices.is_some(),
            "the preset's list price for the chosen model"
        );
    }

    #[test]
    fn a_category_without_its_fields_is_refused_with_what_is_missing() {
        let (_folder, project) = project();
        let blank_form = RouteRequest {
            category: Some(RouteCategory::Compatible),
            base_url: Some("http://127.0.0.1:8000/v1".into()),
            model: Some(String::new()),
            ..Default::default()
        };
        let refused = route_for(&project, blank_form).expect_err("no model");
        assert!(
            refused.to_string().contains("a model are needed"),
            "{refused}"
        );
        let nothing = route_for(&project, RouteRequest::default()).expect_err("nothing asked");
        assert!(
            nothing.to_string().contains("--category or --preset"),
            "{nothing}"
        );
        let local = RouteRequest {
            category: Some(RouteCategory::Local),
            ..Default::default()
        };
        let local = route_for(&project, local).expect_err("local is chosen by model use");
        assert!(local.to_string().contains("heartwood model use"), "{local}");
    }

    #[test]
    fn a_replay_route_needs_only_its_recording() {
        let (_folder, project) = project();
        let route = route_for(
            &project,
            RouteRequest {
                category: Some(RouteCategory::Replay),
                recording: Some("run.jsonl".into()),
                ..Default::default()
            },
        )
        .expect("a replay route");
        assert_eq!(route.category, RouteCategory::Replay);
        assert_eq!(route.recording.as_deref(), Some("run.jsonl"));
        assert_eq!(route.model, "recorded");
    }
}
