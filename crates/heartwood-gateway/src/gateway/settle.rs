//! Waiting for a session to settle: the one wait every interface uses when it answers "after
//! the run stops" (the page's `?wait=settled`, the notebook's `wait()`, an embedding program),
//! so "settled" and how it is watched for are decided here, not in each.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

/// The longest the wait goes without looking at the session, updates or not: a session served
/// by another process that goes quiet, or one released and served again, is still seen.
const QUIET_LOOK: Duration = Duration::from_secs(1);

impl SessionGateway {
    /// Waits until `session` settles (finished, failed, paused, stopped, or waiting for a
    /// published decision; [`SessionProjection::is_settled`]) or `within` has passed, and
    /// answers its snapshot then, settled or not: the caller says what still running means to
    /// it. The session is looked at again after each of its updates (or a quiet second), never
    /// on a timer alone; each look runs on the blocking pool, since a session served elsewhere
    /// is read and verified from its files. Needs a Tokio runtime with timers.
    pub async fn settled(
        &self,
        session: &SessionId,
        within: Duration,
    ) -> Result<Snapshot, GatewayError> {
        let deadline = Instant::now() + within;
        // Followed before the first look, so an update between the two is not missed.
        let mut updates = self.updates(session)?;
        loop {
            let snapshot = self.current(session).await?;
            if snapshot.is_settled() || Instant::now() >= deadline {
                return Ok(snapshot);
            }
            let look_again = deadline.min(Instant::now() + QUIET_LOOK);
            tokio::select! {
                _ = updates.next() => {}
                () = tokio::time::sleep_until(look_again) => {}
            }
        }
    }

    /// The session as it stands now: [`SessionGateway::snapshot`] of everything but the events
    /// (the projection and what is live), taken on the blocking pool; what an async caller
    /// reads when its [`updates`](SessionGateway::updates) say `lagged`.
    pub async fn current(&self, session: &SessionId) -> Result<Snapshot, GatewayError> {
        self.snapshot_off_pool(session, u64::MAX).await
    }

    /// [`SessionGateway::snapshot`] with the events after `since`, taken on the blocking pool.
    pub(crate) async fn snapshot_off_pool(
        &self,
        session: &SessionId,
        since: u64,
    ) -> Result<Snapshot, GatewayError> {
        let gateway = SessionGateway {
            shared: Arc::clone(&self.shared),
        };
        let id = session.clone();
        match tokio::task::spawn_blocking(move || gateway.snapshot(&id, since)).await {
            Ok(snapshot) => snapshot,
            // A panic while reading is a defect: it is this caller's panic, not an answer.
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => Err(GatewayError::Closed(session.clone())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heartwood_events::{ActionPolicy, Command, CommandId, CommandKind, Lifecycle};

    /// A task against a model that answers after a delay: the wait returns once the run has
    /// finished (not before, and not a timer's worth later), and a wait shorter than the run
    /// returns the running snapshot when its time is up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wait_ends_when_the_run_settles_or_its_time_is_up() {
        use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
        let folder = tempfile::tempdir().expect("project");
        let project = ProjectContext::at(folder.path()).expect("a UTF-8 project path");
        let server = ScriptedModelServer::start_unrecorded(Script::of(vec![
            Turn::text("Something.").with_fault(Fault::ChunkDelayMs(200)),
        ]))
        .await
        .expect("scripted server");
        crate::config::ProjectConfig::set_route(
            &project,
            crate::config::RouteConfig::compatible(&server.base_url(), "scripted"),
        )
        .expect("route");
        let gateway = SessionGateway::new(project.clone());
        let id = SessionId::parse("settle").expect("id");
        let receipt = gateway
            .submit(Command::new(
                CommandId::parse("task").expect("id"),
                id.clone(),
                CommandKind::SubmitTask {
                    text: "Say something.".into(),
                    policy: ActionPolicy::AlwaysReview,
                },
            ))
            .await
            .expect("submitted");
        assert!(
            matches!(receipt.outcome, heartwood_events::Outcome::Applied { .. }),
            "{receipt:?}"
        );
        let early = gateway
            .settled(&id, Duration::from_millis(50))
            .await
            .expect("a snapshot");
        assert_eq!(
            early.projection.lifecycle,
            Lifecycle::Running,
            "time was up first"
        );
        let done = gateway
            .settled(&id, Duration::from_secs(60))
            .await
            .expect("a snapshot");
        assert!(
            done.projection.is_settled(),
            "{:?}",
            done.projection.lifecycle
        );
        assert_eq!(done.projection.lifecycle, Lifecycle::Finished);
        // Settled means recorded: the journal on disk, read as another interface reads it,
        // already holds every event the settled projection shows.
        let (on_disk, _) = crate::SessionAdmin::new(&project)
            .verify(id.as_str(), None)
            .expect("the session verifies");
        assert_eq!(on_disk.count, done.revision);
        gateway.close().await;
    }
}
