//! The Skills routes: the catalog, one skill in detail (its `SKILL.md`, as the researcher
//! reviews it), and the decisions on a skill: approve the exact tree shown, activate,
//! deactivate.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use heartwood_gateway::skills::{CatalogView, SkillDetail, SkillView, SkillsService};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Route, act, answers, of, read};
use crate::answer::{blocking, blocking_json, failure, json_response, plain};
use crate::body::JsonBody;
use crate::server::AppState;

pub(super) fn routes() -> Vec<Route> {
    vec![
        read(
            "/api/skills",
            "Every skill offered and every source, revalidated.",
            answers::<CatalogView>(),
        )
        .served_by(|| get(catalog)),
        read(
            "/api/skills/show",
            "One skill with its full SKILL.md.",
            answers::<SkillDetail>(),
        )
        .query(of::<SkillName>())
        .served_by(|| get(show)),
        act(
            "/api/skills/{decision}",
            "A decision on a skill: `approve` (the exact `digest` shown), `activate` or \
             `deactivate`; answers the skill's catalog entry.",
            answers::<SkillView>(),
        )
        .body(of::<SkillDecision>())
        .served_by(|| post(decide)),
    ]
}

/// A skill by name, and the source offering it when more than one does.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SkillName {
    /// Its name.
    pub name: String,
    /// The source's id (`bundled`, `signed:<name>`, `local:<path>`).
    #[serde(default)]
    pub source: Option<String>,
}

/// A decision on one skill.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillDecision {
    /// Its name.
    pub name: String,
    /// The source's id, when more than one offers it.
    #[serde(default)]
    pub source: Option<String>,
    /// For `approve`: the digest of the tree the researcher reviewed.
    #[serde(default)]
    pub digest: Option<String>,
}

async fn catalog(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || SkillsService::open(&app.project).catalog()).await
}

async fn show(
    State(app): State<Arc<AppState>>,
    Query(SkillName { name, source }): Query<SkillName>,
) -> Response {
    blocking_json(move || SkillsService::open(&app.project).show(&name, source.as_deref())).await
}

/// What is decided.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decided {
    Approve,
    Activate,
    Deactivate,
}

async fn decide(
    State(app): State<Arc<AppState>>,
    decision: Result<Path<Decided>, PathRejection>,
    JsonBody(asked): JsonBody<SkillDecision>,
) -> Response {
    let Ok(Path(decision)) = decision else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    blocking(move || {
        let skills = SkillsService::open(&app.project);
        let source = asked.source.as_deref();
        let answer = match decision {
            Decided::Approve => match &asked.digest {
                Some(digest) => skills.approve(&asked.name, source, digest),
                None => return plain(StatusCode::BAD_REQUEST, "approve needs the digest reviewed"),
            },
            Decided::Activate => skills.activate(&asked.name, source),
            Decided::Deactivate => skills
                .deactivate(&asked.name)
                .and_then(|_| skills.show(&asked.name, source).map(|d| d.view)),
        };
        match answer {
            Ok(view) => json_response(StatusCode::OK, &view),
            Err(e) => failure(e),
        }
    })
    .await
}
