//! Reviewing what waits for a decision: a set shown whole, its diffs and long files, rejecting with a reason, allow only once every member was on screen, a skill's tree.

use super::*;

#[test]
fn a_pending_set_is_reviewed_whole() {
    let app = session_app(snapshot(pending_events(), ""));
    assert_eq!(
        app.focus,
        Focus::Review,
        "the review panel takes focus when a set appears"
    );
    insta::assert_snapshot!(draw(&app));
}

#[test]
fn rejecting_asks_for_a_reason_and_names_the_set_and_revision_shown() {
    let mut app = session_app(snapshot(pending_events(), ""));
    assert_eq!(app.on_key(key(KeyCode::Char('r'))), None);
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        None,
        "r then Enter asks for a reason"
    );
    for c in "use the held-out groups".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!(draw(&app));
    let intent = app.on_key(key(KeyCode::Enter));
    assert_eq!(
        intent,
        Some(Intent::Submit(CommandKind::Decide {
            set_id: ActionSetId::parse("set-4").expect("id"),
            revision: 8,
            decision: Decision::RejectAll,
            reason: Some("use the held-out groups".into()),
        }))
    );
    app.focus = Focus::Review;
    assert_eq!(app.on_key(key(KeyCode::Char('a'))), None, "a only arms");
    let allow = app.on_key(key(KeyCode::Enter));
    assert!(matches!(
        allow,
        Some(Intent::Submit(CommandKind::Decide {
            decision: Decision::AllowOnce,
            revision: 8,
            ..
        }))
    ));
}

#[test]
fn r_then_text_starts_the_rejection_reason_and_a_sentence_still_cannot_allow() {
    let mut app = session_app(snapshot(pending_events(), ""));
    for c in "r use the held-out groups".chars() {
        assert_eq!(app.on_key(key(KeyCode::Char(c))), None, "typing decided");
    }
    assert_eq!(app.focus, Focus::Reason);
    assert!(app.input.is_empty(), "sent as guidance: {:?}", app.input);
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::Submit(CommandKind::Decide {
            set_id: ActionSetId::parse("set-4").expect("id"),
            revision: 8,
            decision: Decision::RejectAll,
            reason: Some("use the held-out groups".into()),
        }))
    );
    // A word that starts with `r` is kept whole as the reason.
    let mut app = session_app(snapshot(pending_events(), ""));
    for c in "run the tests again".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    assert_eq!(app.reason, "run the tests again");
    assert!(matches!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::Submit(CommandKind::Decide {
            decision: Decision::RejectAll,
            ..
        }))
    ));
    // `a` and then text is typing on the message line, never an allow.
    let mut app = session_app(snapshot(pending_events(), ""));
    for c in "add a test".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::Say("add a test".into()))
    );
}

/// A pending set of the given members (ids from 4), reviewed against `project`.
fn pending_with(project: &std::path::Path, members: Vec<ActionProposal>) -> Snapshot {
    let revision = 4 + members.len() as u64 + 2;
    let mut events = vec![
        Event::SessionRegistered {
            backend: "native".into(),
            workflow: None,
        },
        task("Tidy the analysis"),
    ];
    events.extend(
        members
            .iter()
            .map(|m| Event::ActionProposed { action: m.clone() }),
    );
    events.push(lifecycle(Lifecycle::WaitingForDecision));
    events.push(Event::ActionSetPending {
        set: ActionSet {
            set_id: ActionSetId::parse("set-4").expect("id"),
            revision,
            members,
        },
    });
    snapshot_in(project, events, "")
}

#[test]
fn the_review_shows_every_line_of_a_command_and_the_diff_of_an_edit() {
    let project = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        project.path().join("analyze.py"),
        "import csv\nrows = list(csv.reader(open('data/a.csv')))\nprint(len(rows))\n",
    )
    .expect("write");
    let members = vec![
        proposal(
            4,
            "terminal",
            r#"{"command":"cd data\nls -l\npython -c \"import os; os.remove('data/a.csv')\"","summary":"look at the data, then delete a.csv"}"#,
            RiskLevel::High,
        ),
        proposal(
            5,
            "file_editor",
            r#"{"command":"str_replace","path":"analyze.py","old_str":"print(len(rows))","new_str":"print(len(rows) - 1)  # without the header"}"#,
            RiskLevel::Medium,
        ),
        proposal(
            6,
            "file_editor",
            r#"{"command":"str_replace","path":"analyze.py","old_str":"not in the file","new_str":"x"}"#,
            RiskLevel::Medium,
        ),
    ];
    let app = session_app(pending_with(project.path(), members));
    let screen = draw(&app);
    // The destructive last line and the risk label are on screen, not cut off.
    assert!(screen.contains("os.remove('data/a.csv')"), "{screen}");
    assert!(screen.contains("[high risk]"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_large_created_file_is_cut_with_a_count_and_the_rest_scrolls() {
    let project = tempfile::tempdir().expect("tempdir");
    let text: String = (1..=1_000).map(|i| format!("line {i}\n")).collect();
    let arguments = serde_json::json!({"command": "create", "path": "big.txt", "file_text": text});
    let members = vec![proposal(
        4,
        "file_editor",
        &arguments.to_string(),
        RiskLevel::Medium,
    )];
    let mut app = session_app(pending_with(project.path(), members));
    let top = draw(&app);
    assert!(top.contains("+ line 1 "), "{top}");
    for _ in 0..50 {
        app.on_key(key(KeyCode::PageDown));
    }
    let bottom = draw(&app);
    assert!(bottom.contains("+ line 400"), "{bottom}");
    assert!(!bottom.contains("+ line 401"), "{bottom}");
    assert!(bottom.contains("600 more lines not shown here"), "{bottom}");
}

#[test]
fn typing_while_a_set_waits_decides_nothing() {
    for sentence in ["add more checks", "ok", "yes do it"] {
        let mut app = session_app(snapshot(pending_events(), ""));
        assert_eq!(app.focus, Focus::Review);
        for c in sentence.chars() {
            assert_eq!(
                app.on_key(key(KeyCode::Char(c))),
                None,
                "{c:?} decided something"
            );
        }
        // Enter after the sentence sends it as text; it never decides.
        match app.on_key(key(KeyCode::Enter)) {
            None => {}
            Some(Intent::Say(text)) => assert_eq!(text, sentence),
            other => panic!("{sentence:?} then Enter gave {other:?}"),
        }
        if sentence.len() > 1 {
            assert_eq!(app.focus, Focus::Input, "typing moved to the message line");
        }
    }
    // An armed allow is shown, and any key but Enter cancels it.
    let mut app = session_app(snapshot(pending_events(), ""));
    app.on_key(key(KeyCode::Char('a')));
    let armed = draw(&app);
    assert!(
        armed.contains("Press Enter to allow all 2 actions once"),
        "{armed}"
    );
    assert_eq!(app.on_key(key(KeyCode::Down)), None);
    assert_eq!(app.on_key(key(KeyCode::Enter)), None);
}

#[test]
fn a_skill_under_review_is_shown_whole_and_a_approves_the_tree_shown() {
    let project = tempfile::tempdir().expect("project");
    std::fs::create_dir(project.path().join(".heartwood")).expect("state");
    let elsewhere = tempfile::tempdir().expect("skills");
    let dir = elsewhere.path().join("check-units");
    std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: check-units\ndescription: Check units first.\n---\nUNITS-BODY line\n",
    )
    .expect("write");
    std::fs::write(dir.join("scripts/units.py"), "print(1)\n").expect("write");
    let context = heartwood_gateway::ProjectContext::at(project.path()).expect("project");
    let skills = heartwood_gateway::skills::SkillsService::open(&context);
    skills.add_local(&dir).expect("add");
    let catalog = skills.catalog().expect("catalog");
    let detail = skills.show("check-units", None).expect("show");
    let digest = detail.view.digest.clone().expect("digest");

    let mut app = App::new(Screen::Skills {
        catalog: Box::new(catalog.clone()),
        selected: 0,
        detail: None,
        scroll: 0,
    });
    let list = draw(&app);
    assert!(list.contains("check-units"), "{list}");
    assert!(list.contains("needs review and approval"), "{list}");
    assert!(list.contains("group-disjoint-splits"), "{list}");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::ShowSkill {
            name: "check-units".into(),
            source: detail.view.source.clone()
        })
    );

    app.screen = Screen::Skills {
        catalog: Box::new(catalog),
        selected: 0,
        detail: Some(Box::new(detail.clone())),
        scroll: 0,
    };
    let shown = draw(&app);
    for expected in [
        "scripts/units.py  9 bytes",
        "SKILL.md",
        "UNITS-BODY line",
        "unreviewed",
        &digest[..40],
    ] {
        assert!(shown.contains(expected), "{expected:?} missing:\n{shown}");
    }
    assert_eq!(
        app.on_key(key(KeyCode::Char('a'))),
        Some(Intent::DecideSkill {
            decision: super::super::intent::SkillDecision::Approve,
            name: "check-units".into(),
            source: detail.view.source.clone(),
            digest: Some(digest),
        })
    );
    assert_eq!(app.on_key(key(KeyCode::Esc)), None, "Esc closes the review");
    assert_eq!(app.on_key(key(KeyCode::Esc)), Some(Intent::Back));
}

/// A set of three commands, each a long script: at 80×24 the later ones start off screen.
fn long_set(project: &std::path::Path) -> Snapshot {
    let script = |n: u64| {
        let lines: Vec<String> = (0..30).map(|i| format!("echo step {n}.{i}")).collect();
        serde_json::json!({ "command": lines.join("\n") }).to_string()
    };
    pending_with(
        project,
        (4..7)
            .map(|id| proposal(id, "terminal", &script(id), RiskLevel::Medium))
            .collect(),
    )
}

#[test]
fn allow_waits_until_every_member_was_on_screen() {
    let project = tempfile::tempdir().expect("project");
    let mut app = session_app(long_set(project.path()));
    let screen = draw_at(&app, 80, 24);
    assert!(screen.contains("not shown yet"), "{screen}");
    app.on_key(key(KeyCode::Char('a')));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        None,
        "allowed unseen actions"
    );
    let refused = draw_at(&app, 80, 24);
    assert!(
        refused.contains("not allowed") && refused.contains("#5, #6"),
        "{refused}"
    );
    // Reading on, a page at a time, shows every member (and the refusal goes with the first
    // scroll); then allow goes through.
    for _ in 0..20 {
        app.on_key(key(KeyCode::PageDown));
        let screen = draw_at(&app, 80, 24);
        assert!(!screen.contains("not allowed"), "{screen}");
    }
    assert!(app.unseen().is_empty(), "{:?}", app.unseen());
    app.on_key(key(KeyCode::Char('a')));
    assert!(matches!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::Submit(CommandKind::Decide {
            decision: Decision::AllowOnce,
            ..
        }))
    ));
    // Where the whole set fits on screen, it is seen at once.
    let mut wide = session_app(long_set(project.path()));
    draw_at(&wide, 200, 120);
    wide.on_key(key(KeyCode::Char('a')));
    assert!(wide.on_key(key(KeyCode::Enter)).is_some());
}
