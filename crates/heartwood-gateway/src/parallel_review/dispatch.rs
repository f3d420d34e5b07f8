//! The worker's two moments of a parallel review: offering the batch when its set is shown,
//! and admitting (or refusing) the consented batch when the allowed set is dispatched. Each
//! reads the projection under the session's lock, does its file and evidence I/O on the
//! blocking pool with no lock held, then checks again under the lock before it journals.

use std::sync::{Arc, Weak};

use heartwood_events::Event;

use super::evidence::RouteIdentity;
use super::preparer;
use crate::ProjectContext;
use crate::live::Live;

/// What a session's worker knows of the route it runs on, for review batches.
pub(crate) struct ReviewRoute {
    /// The project (evidence is never read from inside it).
    pub(crate) project: ProjectContext,
    /// The route's identity, as qualification evidence names it.
    pub(crate) identity: RouteIdentity,
}

/// Journals the offer for the review batch now waiting, once per set: a preview to consent to
/// when the route is qualified and the engine `runs_batches`, else why it runs in order.
pub(crate) async fn offer(live: &Weak<Live>, route: &Arc<ReviewRoute>, runs_batches: bool) {
    let Some(live) = live.upgrade() else {
        return;
    };
    let snapshot = {
        let core = live.lock();
        let p = core.projection();
        match preparer::batch_in_review(p) {
            Some((set_id, ..)) if !offered(p, &set_id) => p.clone(),
            _ => return,
        }
    };
    let route = Arc::clone(route);
    let prepared = tokio::task::spawn_blocking(move || {
        preparer::offer(&route.project, &route.identity, runs_batches, &snapshot)
    })
    .await;
    let Ok(Some(event)) = prepared else {
        return;
    };
    let mut core = live.lock();
    // Journaled only for the set still waiting, and only once.
    let still = match (&event, preparer::batch_in_review(core.projection())) {
        (Event::ReviewExecutionPrepared { set_id, .. }, Some((now, ..))) => {
            *set_id == now && !offered(core.projection(), &now)
        }
        _ => false,
    };
    if still && !core.is_released() {
        let _ = core.record(vec![event]);
    }
}

fn offered(p: &heartwood_events::SessionProjection, set_id: &str) -> bool {
    p.workflow
        .as_ref()
        .and_then(|w| w.review_execution.as_ref())
        .is_some_and(|r| r.set_id == set_id)
}

/// At dispatch of the set just allowed: when the researcher consented to its preview, finds
/// the preview still true and journals the admission (returning the parallelism), or
/// journals what changed and returns `None` (the set runs in order).
pub(crate) async fn admit(live: &Weak<Live>, route: &Arc<ReviewRoute>) -> Option<u32> {
    let live = live.upgrade()?;
    let (preview, consent_seq, workflow) = {
        let core = live.lock();
        let (preview, seq) = preparer::consented(core.projection(), core.events())?;
        (preview, seq, core.projection().workflow.clone()?)
    };
    let (route, shown) = (Arc::clone(route), preview.clone());
    let files = tokio::task::spawn_blocking(move || {
        preparer::recheck_files(&route.project, &route.identity, &workflow, &shown)
    })
    .await
    .unwrap_or_else(|e| Err(preparer::InOrder::Unfinished(e)));
    let mut core = live.lock();
    if core.is_released() {
        return None;
    }
    let verdict = files.and_then(|()| {
        preparer::recheck_state(core.projection(), core.events(), &preview, consent_seq)
    });
    let event = match &verdict {
        Ok(parallelism) => Event::ReviewParallelAdmitted {
            preview: preview.digest.clone(),
            parallelism: *parallelism,
        },
        Err(reason) => Event::ReviewParallelRefused {
            preview: preview.digest.clone(),
            reason: reason.to_string(),
        },
    };
    core.record(vec![event]).ok()?;
    verdict.ok()
}
