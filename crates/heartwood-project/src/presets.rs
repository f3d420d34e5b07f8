//! Presets for common model services (and the ChatGPT subscription, signed in instead of keyed): a base URL, the conventional variable for the key, a
//! model to start with and, where known, list prices. `model connect --preset`, the terminal
//! interface's connect form and the page offer the same list, and [`route`] turns a choice into
//! a route (explicit values win over the preset's).
//!
//! Prices are the providers' published list prices on [`PRICES_AS_OF`], in US dollars per
//! million tokens; a model not listed here has no price (its usage cost is shown as unknown),
//! and the researcher may set one with `--price-in`/`--price-out`. A server on this machine
//! costs nothing per token, so local presets price every model at zero.

use serde::Serialize;

use crate::config::{RouteCategory, RouteConfig, RoutePrices};

/// The date the listed prices were read from the providers' pricing pages.
pub const PRICES_AS_OF: &str = "2025-06";

/// A preset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preset {
    /// Its name on the command line (`openai`, `ollama`, ...).
    pub id: &'static str,
    /// Its name for people.
    pub name: &'static str,
    /// The route category.
    pub category: RouteCategory,
    /// The service's OpenAI-compatible base URL.
    pub base_url: &'static str,
    /// The conventional variable for the key (`None`: the service takes none by default).
    pub api_key_env: Option<&'static str>,
    /// A model to start with.
    pub model: &'static str,
    /// Every model on this service is free per token (a server on this machine).
    pub free: bool,
    /// List prices of known models: (model, input, output) in micro-dollars per million tokens.
    #[serde(skip)]
    pub prices: &'static [(&'static str, u64, u64)],
}

impl Preset {
    /// The prices of `model` on this service, when known.
    pub fn prices_of(&self, model: &str) -> Option<RoutePrices> {
        if self.free {
            return Some(RoutePrices {
                input_micros_per_mtok: 0,
                output_micros_per_mtok: 0,
            });
        }
        self.prices
            .iter()
            .find(|(name, _, _)| *name == model)
            .map(|&(_, input, output)| RoutePrices {
                input_micros_per_mtok: input,
                output_micros_per_mtok: output,
            })
    }
}

/// The presets, in the order they are offered.
pub const PRESETS: &[Preset] = &[
    Preset {
        id: "openai",
        name: "OpenAI",
        category: RouteCategory::Hosted,
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
        model: "gpt-4.1-mini",
        free: false,
        prices: &[
            ("gpt-4.1", 2_000_000, 8_000_000),
            ("gpt-4.1-mini", 400_000, 1_600_000),
            ("gpt-4.1-nano", 100_000, 400_000),
            ("gpt-4o", 2_500_000, 10_000_000),
            ("gpt-4o-mini", 150_000, 600_000),
            ("o4-mini", 1_100_000, 4_400_000),
        ],
    },
    Preset {
        id: "openrouter",
        name: "OpenRouter",
        category: RouteCategory::Hosted,
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: Some("OPENROUTER_API_KEY"),
        model: "openai/gpt-4.1-mini",
        free: false,
        prices: &[
            ("openai/gpt-4.1-mini", 400_000, 1_600_000),
            ("openai/gpt-4o-mini", 150_000, 600_000),
        ],
    },
    Preset {
        id: "together",
        name: "Together AI",
        category: RouteCategory::Hosted,
        base_url: "https://api.together.xyz/v1",
        api_key_env: Some("TOGETHER_API_KEY"),
        model: "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        free: false,
        prices: &[("meta-llama/Llama-3.3-70B-Instruct-Turbo", 880_000, 880_000)],
    },
    Preset {
        id: "groq",
        name: "Groq",
        category: RouteCategory::Hosted,
        base_url: "https://api.groq.com/openai/v1",
        api_key_env: Some("GROQ_API_KEY"),
        model: "llama-3.3-70b-versatile",
        free: false,
        prices: &[
            ("llama-3.3-70b-versatile", 590_000, 790_000),
            ("llama-3.1-8b-instant", 50_000, 80_000),
        ],
    },
    Preset {
        id: "chatgpt",
        name: "ChatGPT subscription (sign in)",
        category: RouteCategory::Subscription,
        base_url: crate::subscription::DEFAULT_BASE_URL,
        api_key_env: None,
        model: "gpt-5-codex",
        free: false,
        prices: &[],
    },
    Preset {
        id: "ollama",
        name: "Ollama on this machine",
        category: RouteCategory::Compatible,
        base_url: "http://localhost:11434/v1",
        api_key_env: None,
        model: "qwen2.5-coder:7b",
        free: true,
        prices: &[],
    },
    Preset {
        id: "vllm",
        name: "vLLM on this machine",
        category: RouteCategory::Compatible,
        base_url: "http://localhost:8000/v1",
        api_key_env: None,
        model: "Qwen/Qwen2.5-Coder-7B-Instruct",
        free: true,
        prices: &[],
    },
    Preset {
        id: "llama-cpp",
        name: "llama.cpp server on this machine",
        category: RouteCategory::Compatible,
        base_url: "http://localhost:8080/v1",
        api_key_env: None,
        model: "default",
        free: true,
        prices: &[],
    },
];

/// The preset named `id`; the error lists the names.
pub fn find(id: &str) -> Result<&'static Preset, crate::ProjectError> {
    PRESETS.iter().find(|p| p.id == id).ok_or_else(|| {
        crate::Absent::Preset {
            id: id.to_owned(),
            known: PRESETS.iter().map(|p| p.id).collect(),
        }
        .into()
    })
}

/// What a researcher chose besides the preset; each `Some` replaces the preset's value.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// The model.
    pub model: Option<String>,
    /// The base URL.
    pub base_url: Option<String>,
    /// The key's variable.
    pub api_key_env: Option<String>,
    /// Prices (input, output) per million tokens in micro-dollars.
    pub prices: Option<RoutePrices>,
}

/// The route for `preset` as chosen: the preset's values where nothing was chosen, and the
/// preset's list prices for the model when no price was given and the model is listed.
pub fn route(preset: &Preset, choice: Choice) -> RouteConfig {
    let model = choice.model.unwrap_or_else(|| preset.model.to_owned());
    let prices = choice.prices.or_else(|| preset.prices_of(&model));
    if preset.category == RouteCategory::Subscription {
        // Signed in, not keyed; its endpoint is the configured one unless one was typed.
        let mut route = RouteConfig::subscription(&model);
        if let Some(base_url) = choice.base_url {
            route.base_url = base_url.trim_end_matches('/').to_owned();
        }
        route.prices = prices;
        return route;
    }
    RouteConfig {
        category: preset.category,
        api_key_env: choice
            .api_key_env
            .or_else(|| preset.api_key_env.map(str::to_owned)),
        prices,
        ..RouteConfig::compatible(
            choice.base_url.as_deref().unwrap_or(preset.base_url),
            &model,
        )
    }
}

/// Dollars per million tokens as written by people (`0.15`, `2`, `10.50`) in micro-dollars,
/// exactly (no floating point).
pub fn parse_dollars(text: &str) -> Result<u64, crate::ProjectError> {
    let bad = || crate::ProjectError::NotAPrice(text.to_owned());
    let text = text.trim().trim_start_matches('$');
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !fraction.chars().all(|c| c.is_ascii_digit())
        || fraction.len() > 6
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let fraction: u64 = format!("{fraction:0<6}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(1_000_000)
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_fills_what_was_not_chosen_and_prices_known_models_only() {
        let openai = find("openai").expect("preset");
        let listed = route(
            openai,
            Choice {
                model: Some("gpt-4o-mini".into()),
                ..Choice::default()
            },
        );
        assert_eq!(listed.base_url, "https://api.openai.com/v1");
        assert_eq!(listed.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(
            listed.prices,
            Some(RoutePrices {
                input_micros_per_mtok: 150_000,
                output_micros_per_mtok: 600_000
            })
        );
        listed.validate().expect("a preset route is valid");
        let unlisted = route(
            openai,
            Choice {
                model: Some("some-new-model".into()),
                ..Choice::default()
            },
        );
        assert_eq!(
            unlisted.prices, None,
            "an unknown model is never priced at 0"
        );
        let ollama = route(find("ollama").expect("preset"), Choice::default());
        assert_eq!(ollama.api_key_env, None);
        assert_eq!(ollama.prices.map(|p| p.output_micros_per_mtok), Some(0));
        assert!(
            find("acme")
                .expect_err("unknown")
                .to_string()
                .contains("openai, openrouter")
        );
    }

    #[test]
    fn prices_are_read_exactly() {
        assert_eq!(parse_dollars("0.15").ok(), Some(150_000));
        assert_eq!(parse_dollars("$2").ok(), Some(2_000_000));
        assert_eq!(parse_dollars("10.5").ok(), Some(10_500_000));
        assert_eq!(parse_dollars(".000001").ok(), Some(1));
        for bad in ["", ".", "-1", "1e3", "0.0000001", "abc"] {
            assert!(parse_dollars(bad).is_err(), "{bad:?} accepted");
        }
    }
}
