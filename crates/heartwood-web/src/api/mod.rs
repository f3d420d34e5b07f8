//! The API's routes, declared once in [`routes`]: each names its method, path, query, body and
//! answer types beside the handler that serves it. The router is built from that table and
//! so is the published description (`docs/schema/http-api.schema.json`, and from it the page's
//! TypeScript types), so a route cannot be served without being described, nor described
//! without being served.

mod commands;
mod models;
mod project;
mod session_path;
mod sessions;
mod skills;
mod stream;
mod workspace;

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::MethodRouter;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::answer::plain;
use crate::server::AppState;

/// The schema of one type, as the description refers to it.
pub type Schematic = fn(&mut SchemaGenerator) -> Schema;

/// `T`'s schema (a reference into the description's definitions).
fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// An HTTP method the API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Reads; changes nothing.
    Get,
    /// Acts.
    Post,
}

impl Method {
    /// As HTTP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// What a route answers when it succeeds.
#[derive(Clone, Copy)]
pub enum Answer {
    /// JSON of this type.
    Json(Schematic),
    /// Something else, of this media type (a page, a picture, a stream).
    Media(&'static str),
}

/// One route: how it is reached, what it takes and answers, and what serves it.
pub struct Route {
    /// Its method.
    pub method: Method,
    /// Its path below the base path; `{name}` is a path parameter.
    pub path: &'static str,
    /// What it does, in a line.
    pub summary: &'static str,
    /// Its query parameters, when it reads any.
    pub query: Option<Schematic>,
    /// Its JSON body, when it takes one.
    pub body: Option<Schematic>,
    /// What it answers.
    pub answer: Answer,
    serve: fn() -> MethodRouter<Arc<AppState>>,
}

/// A route that reads (`GET`).
pub(crate) fn read(path: &'static str, summary: &'static str, answer: Answer) -> Route {
    Route {
        method: Method::Get,
        path,
        summary,
        query: None,
        body: None,
        answer,
        // Every route names its handler with `served_by`; one that does not answers 405, which
        // the route-table test catches.
        serve: MethodRouter::new,
    }
}

/// A route that acts (`POST`).
pub(crate) fn act(path: &'static str, summary: &'static str, answer: Answer) -> Route {
    Route {
        method: Method::Post,
        ..read(path, summary, answer)
    }
}

impl Route {
    fn query(self, query: Schematic) -> Route {
        Route {
            query: Some(query),
            ..self
        }
    }

    fn body(self, body: Schematic) -> Route {
        Route {
            body: Some(body),
            ..self
        }
    }

    fn served_by(self, serve: fn() -> MethodRouter<Arc<AppState>>) -> Route {
        Route { serve, ..self }
    }
}

/// Every route the server has, the page's included.
pub fn routes() -> Vec<Route> {
    let mut all = project::routes();
    all.extend(sessions::routes());
    all.extend(models::routes());
    all.extend(skills::routes());
    all.extend(workspace::routes());
    all
}

/// The router every admitted request is routed by, built from [`routes`].
pub(crate) fn router() -> Router<Arc<AppState>> {
    routes()
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.path, (route.serve)())
        })
        .fallback(|| async { plain(StatusCode::NOT_FOUND, "not found") })
        .method_not_allowed_fallback(|| async {
            plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "this path does not take that method; docs/schema/http-api.schema.json lists \
                 every route",
            )
        })
}

/// A JSON answer of type `T`.
fn answers<T: JsonSchema>() -> Answer {
    Answer::Json(schema::<T>)
}

/// `T`'s schema, for a route's query or body.
fn of<T: JsonSchema>() -> Schematic {
    schema::<T>
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::{Method, router, routes};
    use crate::server::AppState;
    use crate::{Capability, IngressPolicy, Mode};

    /// Each route of the table reaches a handler: none falls to the router's "not found" or
    /// "method not allowed". (The handlers' own refusals, such as a session nobody minted,
    /// answer 404 in plain words of their own, told apart by the body.)
    #[tokio::test]
    async fn every_described_route_is_served() {
        let project = tempfile::tempdir().expect("project");
        let context = heartwood_gateway::ProjectContext::at(project.path()).expect("utf-8");
        let policy = IngressPolicy::new(Mode::Loopback, 1, Capability::from_secret("s"));
        let app = router().with_state(Arc::new(AppState::new(context, policy)));
        for route in routes() {
            let path = route
                .path
                .replace("{session}", "s-nobody")
                .replace("{decision}", "activate");
            let method = match route.method {
                Method::Get => "GET",
                Method::Post => "POST",
            };
            let request = Request::builder()
                .method(method)
                .uri(&path)
                .body(Body::from("{}"))
                .expect("request");
            let response = app.clone().oneshot(request).await.expect("answer");
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .expect("body");
            let said = String::from_utf8_lossy(&bytes);
            assert_ne!(
                status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path}: {said}"
            );
            assert!(
                !(status == StatusCode::NOT_FOUND && said == "not found\n"),
                "{method} {path} is described but not served"
            );
        }
    }

    /// The check above is not vacuous: a path the table lacks falls to the router's fallback.
    #[tokio::test]
    async fn an_undescribed_route_is_not_served() {
        let project = tempfile::tempdir().expect("project");
        let context = heartwood_gateway::ProjectContext::at(project.path()).expect("utf-8");
        let policy = IngressPolicy::new(Mode::Loopback, 1, Capability::from_secret("s"));
        let app = router().with_state(Arc::new(AppState::new(context, policy)));
        let request = Request::builder()
            .uri("/api/undescribed")
            .body(Body::empty())
            .expect("request");
        let response = app.oneshot(request).await.expect("answer");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
}
