//! Specialists and batches of advisory tasks: the parent's pause and interrupt reach every child, and a mixed or repeated set is no batch.

use super::*;

#[tokio::test]
async fn interrupting_the_parent_interrupts_a_specialist_waiting_on_its_model() {
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[(
            "task",
            json!({"subagent_type": "planner", "description": "plan", "prompt": "plan it"}),
        )]),
        // The child's model call hangs.
        Turn::fault(Fault::Silent),
    ]))
    .await;
    let mut config = f.config(ConfirmationPolicy::NeverConfirm);
    config.specialists = vec![heartwood_agent::conversation::SpecialistConfig {
        role: "planner".into(),
        description: "plans".into(),
        system_prompt: "You plan.".into(),
        max_iterations: 2,
        max_tokens: 10_000,
        result_schema: None,
    }];
    let mut conversation = Conversation::open(config).expect("open");
    let interrupt = conversation.interrupt_handle();
    conversation.on_event(move |event, _| {
        // Once the task is under way, the researcher stops the run.
        if matches!(event.kind, EventKind::Started { .. }) {
            let interrupt = interrupt.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                interrupt.interrupt();
            });
        }
    });
    conversation.send_message("Plan.").expect("message");
    let stopped = tokio::time::timeout(Duration::from_secs(20), conversation.run())
        .await
        .expect("the hanging child was interrupted")
        .expect("run");
    assert_eq!(stopped, ExecutionStatus::Paused);
    let observed = conversation
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Observation { observation, .. } => Some(observation.clone()),
            _ => None,
        })
        .expect("the task's observation");
    assert!(
        observed.is_error && observed.content.contains("interrupted"),
        "{observed:?}"
    );
    assert_eq!(
        f.server.requests().len(),
        2,
        "the parent's call and the child's"
    );
    conversation.close().await;
}

fn planner() -> heartwood_agent::conversation::SpecialistConfig {
    heartwood_agent::conversation::SpecialistConfig {
        role: "planner".into(),
        description: "plans".into(),
        system_prompt: "You plan.".into(),
        max_iterations: 2,
        max_tokens: 10_000,
        result_schema: None,
    }
}

/// Three distinct planner tasks in one set: an advisory batch.
fn three_tasks() -> Turn {
    let ask = |n: u32| {
        (
            "task",
            json!({"subagent_type": "planner", "description": format!("plan {n}"),
                   "prompt": format!("plan part {n}")}),
        )
    };
    Turn::calls(&[ask(1), ask(2), ask(3)])
}

#[tokio::test]
async fn a_pause_asked_before_an_admitted_batch_starts_means_no_child_starts() {
    let f = Fixture::new(Script::of(vec![
        three_tasks(),
        Turn::text("part"),
        Turn::text("part"),
        Turn::text("part"),
        Turn::text("planned"),
    ]))
    .await;
    let mut config = f.config(ConfirmationPolicy::AlwaysConfirm);
    config.specialists = vec![planner()];
    let mut conversation = Conversation::open(config).expect("open");
    conversation.send_message("Plan.").expect("message");
    let waiting = conversation.run().await.expect("run");
    assert_eq!(waiting, ExecutionStatus::WaitingForConfirmation);
    assert!(conversation.pending_is_advisory_batch());
    conversation.approve_pending_in_parallel(3).expect("allow");
    conversation.pause_handle().pause();
    let stopped = conversation.run().await.expect("run");
    assert_eq!(stopped, ExecutionStatus::Paused);
    let started = |c: &Conversation| {
        c.events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Started { .. }))
            .count()
    };
    assert_eq!(started(&conversation), 0, "no child started");
    assert_eq!(f.server.requests().len(), 1, "only the parent's call");
    // Continued, the allowed children run (in order: the admission was for that dispatch).
    let finished = conversation.run().await.expect("run");
    assert_eq!(finished, ExecutionStatus::Finished);
    assert_eq!(started(&conversation), 3);
    conversation.close().await;
}

#[tokio::test]
async fn an_interrupt_stops_every_running_child_of_a_batch() {
    let f = Fixture::new(Script::of(vec![
        three_tasks(),
        Turn::fault(Fault::Silent),
        Turn::fault(Fault::Silent),
        Turn::fault(Fault::Silent),
    ]))
    .await;
    let mut config = f.config(ConfirmationPolicy::AlwaysConfirm);
    config.specialists = vec![planner()];
    let mut conversation = Conversation::open(config).expect("open");
    conversation.send_message("Plan.").expect("message");
    conversation.run().await.expect("run");
    conversation.approve_pending_in_parallel(3).expect("allow");
    let interrupt = conversation.interrupt_handle();
    let starts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = starts.clone();
    conversation.on_event(move |event, _| {
        if matches!(event.kind, EventKind::Started { .. })
            && counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 2
        {
            let interrupt = interrupt.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                interrupt.interrupt();
            });
        }
    });
    let stopped = tokio::time::timeout(Duration::from_secs(20), conversation.run())
        .await
        .expect("every hanging child was interrupted")
        .expect("run");
    assert_eq!(stopped, ExecutionStatus::Paused);
    let interrupted = conversation
        .events()
        .iter()
        .filter(|e| match &e.kind {
            EventKind::Observation { observation, .. } => {
                observation.is_error && observation.content.contains("interrupted")
            }
            _ => false,
        })
        .count();
    assert_eq!(
        interrupted, 3,
        "all three children were running and all stopped"
    );
    assert_eq!(
        f.server.requests().len(),
        4,
        "the parent's call and three children's"
    );
    conversation.close().await;
}

#[tokio::test]
async fn a_mixed_set_or_one_asking_the_same_twice_is_no_batch_and_runs_in_order() {
    let same = (
        "task",
        json!({"subagent_type": "planner", "description": "plan", "prompt": "plan it"}),
    );
    let mixed = Turn::calls(&[same.clone(), ("think", json!({"thought": "and note it"}))]);
    for proposed in [mixed, Turn::calls(&[same.clone(), same.clone()])] {
        let f = Fixture::new(Script::of(vec![
            proposed,
            Turn::text("part one"),
            Turn::text("part two"),
            Turn::text("planned"),
        ]))
        .await;
        let mut config = f.config(ConfirmationPolicy::AlwaysConfirm);
        config.specialists = vec![planner()];
        let mut conversation = Conversation::open(config).expect("open");
        conversation.send_message("Plan.").expect("message");
        conversation.run().await.expect("run");
        assert!(!conversation.pending_is_advisory_batch());
        conversation.approve_pending_in_parallel(3).expect("allow");
        assert_eq!(
            conversation.run().await.expect("run"),
            ExecutionStatus::Finished
        );
        // In order: each action completed before the next one started.
        let order: Vec<(u64, bool)> = conversation
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Started { action_id } => Some((*action_id, true)),
                EventKind::Observation { action_id, .. } => Some((*action_id, false)),
                _ => None,
            })
            .collect();
        for pair in order.chunks(2) {
            assert!(
                pair.len() == 2 && pair[0].1 && !pair[1].1 && pair[0].0 == pair[1].0,
                "{order:?}"
            );
        }
        conversation.close().await;
    }
}
