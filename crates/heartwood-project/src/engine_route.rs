//! A stored route as the engine's [`heartwood_agent::model::ModelRoute`] (budgets, replay,
//! prices and, for a ChatGPT subscription, the sign-in it uses), and the subscription route's
//! constructor. Apart from `config`, which holds what the files say and depends on no service.

use std::path::Path;

use crate::config::{RouteCategory, RouteConfig};

impl RouteConfig {
    /// A ChatGPT subscription route for `model`, at the configured Responses endpoint.
    pub fn subscription(model: &str) -> Self {
        RouteConfig::of(
            RouteCategory::Subscription,
            &crate::subscription::base_url(),
            model,
        )
    }

    /// The engine's route for this configuration, in `project`.
    pub fn model_route(&self, project: &Path) -> heartwood_agent::model::ModelRoute {
        let mut route = heartwood_agent::model::ModelRoute::compatible(&self.base_url, &self.model);
        route.replay = self.recording_path(project);
        route.api_key_env.clone_from(&self.api_key_env);
        route.max_input_tokens = self.max_input_tokens;
        route.max_output_tokens = self.max_output_tokens;
        route.total_timeout = std::time::Duration::from_secs(self.timeout_secs);
        if self.category == RouteCategory::Subscription {
            route.subscription = crate::subscription::store().ok().map(|store| {
                heartwood_agent::model::Subscription {
                    endpoints: crate::subscription::endpoints(),
                    store,
                }
            });
        }
        route.prices = self.prices.map(|p| heartwood_agent::model::Prices {
            prompt_micros_per_mtok: p.input_micros_per_mtok,
            completion_micros_per_mtok: p.output_micros_per_mtok,
        });
        route
    }
}
