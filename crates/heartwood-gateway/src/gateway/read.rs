//! The gateway's reads: the session rows, snapshots and projections, a run's figure and
//! preview, and updates to follow. (Typed text is a command, [`heartwood_events::CommandKind::Say`], decided
//! through [`SessionGateway::submit`] like any other.)

use super::*;

impl SessionGateway {
    /// The project's most recently active sessions (at most `limit`) as list rows. A session
    /// this process serves is read from memory; another from the projection its last writer
    /// left bound to the journal's end, and only when there is none (or the journal has moved
    /// on) by verifying and replaying it. So a list that refreshes often stays cheap.
    pub fn rows(&self, limit: usize) -> Result<Vec<SessionRow>, GatewayError> {
        let mut rows = Vec::new();
        for summary in self.sessions()?.into_iter().take(limit) {
            // Bound first: a guard in the `match` would be held while the session is read.
            let served = lock(&self.shared.live).get(&summary.id).cloned();
            if let Some(live) = served {
                rows.push(live.row(summary.last_activity));
                continue;
            }
            rows.push(match self.cached_projection(&summary.id) {
                Ok(p) => {
                    let stopped = crate::admin::stopped_status(&summary, &p);
                    let mut row = SessionRow::of(&p, summary.last_activity.clone());
                    if let Some(status) = stopped {
                        row.status_line = status;
                    }
                    row
                }
                Err(e) => SessionRow {
                    session: summary.id.clone(),
                    last_activity: summary.last_activity.clone(),
                    lifecycle: None,
                    status_line: format!("cannot be read: {e}"),
                    pending: false,
                    title: None,
                    waits_for: None,
                },
            });
            if summary.interrupted
                && !lock(&self.shared.live).contains_key(&summary.id)
                && let Some(row) = rows.last_mut()
            {
                row.status_line = crate::admin::interrupted_status(&summary.id);
            }
        }
        Ok(rows)
    }

    /// The stored session's projection from its cache when that still matches the journal,
    /// else verified and replayed.
    fn cached_projection(&self, session: &SessionId) -> Result<SessionProjection, GatewayError> {
        let cached = self
            .shared
            .store
            .reader(session)?
            .derived_as::<SessionProjection>();
        match cached {
            Some(projection) => Ok(projection),
            None => self.projection(session),
        }
    }

    /// The picture of the model the session's workflow run has just assessed, drawn from the
    /// files its checks read (see `figure.rs`). `Ok(None)` when there is none to draw.
    /// Reads files: call it off async tasks.
    pub fn workflow_figure(
        &self,
        session: &SessionId,
    ) -> Result<Option<heartwood_events::workflow::ModelFigure>, GatewayError> {
        let projection = self.snapshot(session, u64::MAX)?.projection;
        match &projection.workflow {
            Some(w) => crate::figure::model_figure(&self.shared.project, w),
            None => Ok(None),
        }
    }

    /// A bounded preview of a file the session's workflow run binds, saying whether it still
    /// has the bytes the latest checks judged. Reads files: call it off async tasks.
    pub fn workflow_preview(
        &self,
        session: &SessionId,
        path: &str,
    ) -> Result<crate::preview::BoundFilePreview, GatewayError> {
        let projection = self.snapshot(session, u64::MAX)?.projection;
        let workflow = projection
            .workflow
            .ok_or_else(|| crate::error::SessionRefusal::NoWorkflow(session.clone()))?;
        crate::preview::bound_file(&self.shared.project, &workflow, path)
    }

    /// The events after `since` and the projection, taken together. A session this process is
    /// not serving is read from disk, verified first, and creates nothing; a valid id with no
    /// session yet (one an interface just made up for its first task) has the blank snapshot.
    /// A read never takes a session over: a run nobody serves is shown stopped, saying how to
    /// continue it, and an append a crash interrupted is shown as the intact record before
    /// it, until someone acts ([`SessionGateway::serve`], or any command).
    pub fn snapshot(&self, session: &SessionId, since: u64) -> Result<Snapshot, GatewayError> {
        let served = lock(&self.shared.live).get(session).cloned();
        if let Some(live) = served {
            let core = live.lock();
            // A failed write stops the session here: what follows would not be recorded.
            if let Some(writer) = core.writer_ref() {
                writer.ensure_usable()?;
            }
            return Ok(core.snapshot(since));
        }
        if !self.shared.store.exists(session) {
            return Ok(crate::live::blank_snapshot(session.clone()));
        }
        // Served by another process: its snapshot is the live one (review, output, streamed
        // text); the files on disk are the fallback.
        if let Some(remote) = self.remote(session)
            && let Ok(snapshot) = remote.snapshot(since)
        {
            return Ok(snapshot);
        }
        let reader = self.shared.store.reader(session)?;
        // Verification and decoding read the same files; doing them side by side halves the
        // wait, and nothing decoded is used unless verification passes.
        let (verified, events) = std::thread::scope(|scope| {
            let verifying = scope.spawn(|| reader.verify());
            let events = reader.events();
            (verifying.join(), events)
        });
        // A panic while verifying is a defect: it is this caller's panic, not an answer.
        // An append a crash interrupted (the record intact, the append whole in the recovery
        // journal) is shown as the intact record; completing it is a write, which a read
        // never does: serving the session (`serve`, any command) or `sessions recover` does.
        let append_waits = match verified.unwrap_or_else(|panic| std::panic::resume_unwind(panic)) {
            Ok(_) => false,
            Err(heartwood_audit::AuditError::Interrupted { .. }) => true,
            Err(e) => return Err(e.into()),
        };
        let events = decoded(events?)?;
        let mut projection = reducer::replay(session.clone(), &events);
        // A run is open on disk but nobody serves it (no live process holds its lease): its
        // process ended mid-run. It is shown stopped, saying how to take it over; looking at
        // it does not (see `serve`). In a shared store another replica may drive it: it is
        // shown as recorded.
        let nobody_holds = self.shared.store.shared().is_none()
            && !reader
                .writer()
                .is_some_and(|w| heartwood_audit::WriterInfo::looks_alive(&w));
        if !projection.is_settled() && nobody_holds {
            reducer::as_cut_off(&mut projection, crate::admin::cut_off_reason(session));
        }
        if append_waits {
            projection.status_line = crate::admin::interrupted_status(session);
        }
        let revision = projection.revision;
        let from = usize::try_from(since)
            .unwrap_or(usize::MAX)
            .min(events.len());
        let review = projection
            .pending
            .as_ref()
            .map(|set| crate::review::review_in(&self.shared.project, set));
        Ok(Snapshot {
            events: events.into_iter().skip(from).map(Arc::new).collect(),
            projection,
            revision,
            durable: revision,
            transient_revision: 0,
            streaming: String::new(),
            output: None,
            review,
        })
    }

    /// The session's projection now.
    pub fn projection(&self, session: &SessionId) -> Result<SessionProjection, GatewayError> {
        let since = u64::MAX;
        Ok(self.snapshot(session, since)?.projection)
    }

    /// Updates to the session from now on, wherever it is served (here, by another process,
    /// or by nobody yet); see `follow.rs`. Watching is not acting: the session's writer
    /// lease is not taken. A `lagged` update means "take a snapshot".
    pub fn subscribe(
        &self,
        session: &SessionId,
    ) -> Result<broadcast::Receiver<Update>, GatewayError> {
        Ok(crate::follow::subscribe(&self.shared, session))
    }
}
