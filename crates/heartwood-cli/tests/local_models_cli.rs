//! Local models through the real binary: a tiny GGUF model the test writes itself (random
//! weights, Python's `gguf` package) is imported under a license decision bound to its
//! manifest's SHA-256, selected as the credential-free `local` route, started in the real
//! llama-cpp-python runtime, asked one chat completion and then a whole agent turn through the
//! gateway, exported twice to byte-identical bundles and imported into another project as
//! `unvalidated`. A trusted catalog entry downloads from a hub on loopback as `validated`, and
//! one too large for this machine is refused before any byte is fetched.
//!
//! Needs the runtime's environment (`heartwood model install-runtime`, or
//! `HEARTWOOD_MODELS_VENV`); without it the runtime test says so and passes, unless
//! `HEARTWOOD_REQUIRE_LOCAL_RUNTIME` is set (as CI does).

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use heartwood_testkit::hub::HubServer;
use serde_json::Value;
use support::{code, text};

fn hw(project: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(project)
        .output()
        .expect("run heartwood")
}

/// The SHA-256 a review asks the researcher to accept.
fn accept_sha(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert_eq!(
        code(out),
        2,
        "a review writes nothing: {stdout}{}",
        text(&out.stderr)
    );
    stdout
        .split("--accept-license ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no decision asked for: {stdout}"))
        .to_owned()
}

fn phase(project: &Path) -> String {
    let out = hw(project, &["status", "--json"], &[]);
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    format!(
        "{}: {} -> {}",
        plan["phase"].as_str().unwrap_or(""),
        plan["explanation"].as_str().unwrap_or(""),
        plan["next_action"].as_str().unwrap_or("")
    )
}

fn runtime_python() -> Option<PathBuf> {
    let venv = std::env::var_os("HEARTWOOD_MODELS_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/heartwood/models-venv"))
        })?;
    let python = venv.join("bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import llama_cpp.server, gguf"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("HEARTWOOD_REQUIRE_LOCAL_RUNTIME").is_none(),
        "HEARTWOOD_REQUIRE_LOCAL_RUNTIME is set, and {} has no llama_cpp.server",
        venv.display()
    );
    eprintln!("skipped: no local model runtime in {}", venv.display());
    None
}

fn tiny_model(python: &Path, dir: &Path) -> PathBuf {
    let out = dir.join("heartwood-tiny.gguf");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/models/tiny_gguf.py");
    let made = std::process::Command::new(python)
        .arg(script)
        .arg(&out)
        .output()
        .expect("python");
    assert!(made.status.success(), "{}", text(&made.stderr));
    out
}

#[test]
fn a_tiny_model_is_imported_run_answered_exported_and_moved() {
    let Some(python) = runtime_python() else {
        return;
    };
    let work = tempfile::tempdir().expect("work");
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    let gguf = tiny_model(&python, work.path());
    let gguf = gguf.to_str().expect("utf-8");
    let import = [
        "model",
        "import",
        gguf,
        "--license",
        "apache-2.0",
        "--name",
        "tiny",
        "--context",
        "16384",
        "--chat-format",
        "chatml",
    ];

    // No decision, nothing written; a wrong decision, nothing written.
    let sha = accept_sha(&hw(p, &import, &[]));
    assert!(!p.join(".heartwood/models/tiny").exists());
    assert!(
        !p.join(".heartwood/models/transfers").exists(),
        "the review said nothing was written, and left a transfer's view behind"
    );
    let wrong = hw(
        p,
        &[&import[..], &["--accept-license", &"0".repeat(64)]].concat(),
        &[],
    );
    assert_ne!(code(&wrong), 0);
    assert!(
        text(&wrong.stderr).contains("decide again"),
        "{}",
        text(&wrong.stderr)
    );
    let imported = hw(p, &[&import[..], &["--accept-license", &sha]].concat(), &[]);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let listed: Value =
        serde_json::from_slice(&hw(p, &["model", "list", "--json"], &[]).stdout).expect("json");
    assert_eq!(listed[0]["name"], "tiny");
    assert_eq!(listed[0]["validation"], "unvalidated");
    assert_eq!(listed[0]["manifest_sha256"], sha.as_str());

    // Selected: the plan asks for compute until the runtime answers.
    let used = hw(p, &["model", "use", "tiny"], &[]);
    assert!(used.status.success(), "{}", text(&used.stderr));
    let before = phase(p);
    assert!(
        before.starts_with("compute_required") && before.contains("heartwood model start"),
        "{before}"
    );
    let started = hw(p, &["model", "start"], &[]);
    assert!(
        started.status.success(),
        "{}{}",
        text(&started.stdout),
        text(&started.stderr)
    );
    let result = std::panic::catch_unwind(|| {
        assert!(phase(p).starts_with("ready"), "{}", phase(p));
        let shown: Value =
            serde_json::from_slice(&hw(p, &["model", "show", "--json"], &[]).stdout).expect("json");
        assert_eq!(shown["category"], "local");
        assert!(
            shown.get("api_key_env").is_none(),
            "a local route holds no credential"
        );
        // The model's 16384-token context holds the prompt and the reply together.
        assert_eq!(shown["max_output_tokens"], 4096);
        assert_eq!(shown["max_input_tokens"], 16384 - 4096);
        let base_url = shown["base_url"].as_str().expect("base URL").to_owned();

        // One chat completion through the route's address.
        let reply = std::process::Command::new("python3")
            .args([
                "-c",
                "import json, sys, urllib.request\n\
                 body = json.dumps({'model': 'tiny', 'max_tokens': 8, 'messages': [{'role': 'user', 'content': 'hello'}]}).encode()\n\
                 r = urllib.request.urlopen(urllib.request.Request(sys.argv[1] + '/chat/completions', body, {'Content-Type': 'application/json'}), timeout=60)\n\
                 print(json.load(r)['choices'][0]['message']['role'])",
                &base_url,
            ])
            .output()
            .expect("python3");
        assert_eq!(
            text(&reply.stdout).trim(),
            "assistant",
            "{}",
            text(&reply.stderr)
        );

        // A whole agent turn through the gateway (what the model says is noise).
        let turn = hw(p, &["exec", "--json", "say hello"], &[]);
        let events = text(&turn.stdout);
        assert!(turn.status.success(), "{events}{}", text(&turn.stderr));
        assert!(
            events.contains(r#""role":"agent""#) && events.contains(r#""lifecycle":"finished""#),
            "the turn did not finish with the model's answer: {events}"
        );
    });
    let stopped = hw(p, &["model", "stop"], &[]);
    assert!(
        text(&stopped.stdout).contains("stopped"),
        "{}",
        text(&stopped.stdout)
    );
    if let Err(panic) = result {
        let log =
            std::fs::read_to_string(p.join(".heartwood/models/runtime.log")).unwrap_or_default();
        eprintln!("runtime log:\n{log}");
        std::panic::resume_unwind(panic);
    }
    assert!(phase(p).starts_with("compute_required"), "{}", phase(p));

    // Two exports, byte for byte the same; imported elsewhere as unvalidated.
    let first = work.path().join("tiny.zip");
    let second = work.path().join("again.zip");
    for out in [&first, &second] {
        let exported = hw(
            p,
            &["model", "export", "tiny", out.to_str().expect("utf-8")],
            &[],
        );
        assert!(exported.status.success(), "{}", text(&exported.stderr));
    }
    assert_eq!(
        std::fs::read(&first).expect("read"),
        std::fs::read(&second).expect("read")
    );
    let other = tempfile::tempdir().expect("other");
    let bundle = first.to_str().expect("utf-8");
    let review = hw(other.path(), &["model", "import", bundle], &[]);
    assert!(
        text(&review.stdout).contains("unvalidated"),
        "{}",
        text(&review.stdout)
    );
    assert_eq!(
        accept_sha(&review),
        sha,
        "the bundle carries the same manifest"
    );
    let moved = hw(
        other.path(),
        &["model", "import", bundle, "--accept-license", &sha],
        &[],
    );
    assert!(moved.status.success(), "{}", text(&moved.stderr));
    let listed = text(&hw(other.path(), &["model", "list"], &[]).stdout);
    assert!(
        listed.contains("tiny") && listed.contains("unvalidated"),
        "{listed}"
    );
}

#[test]
fn a_catalog_model_downloads_validated_and_one_too_large_is_refused_first() {
    let hub = HubServer::start();
    let weights: Vec<u8> = (0..150_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let commit = hub.publish(
        "heartwood-tests/tiny-GGUF",
        "main",
        "apache-2.0",
        &[("tiny.gguf", &weights)],
    );
    let sha256 = {
        let out = std::process::Command::new("python3")
            .args(["-c", "import hashlib, sys; print(hashlib.sha256(bytes(i * 7 % 251 for i in range(150000))).hexdigest())"])
            .output()
            .expect("python3");
        text(&out.stdout).trim().to_owned()
    };
    let work = tempfile::tempdir().expect("work");
    let catalog = work.path().join("models.toml");
    let entry = |id: &str, memory: u64| {
        format!(
            "[[model]]\nid = \"{id}\"\nrepository = \"heartwood-tests/tiny-GGUF\"\nrevision = \"{commit}\"\n\
             license = \"apache-2.0\"\nmodel_file = \"tiny.gguf\"\ncontext_length = 512\nmemory_bytes = {memory}\n\
             files = [{{ path = \"tiny.gguf\", size = 150000, sha256 = \"{sha256}\" }}]\n"
        )
    };
    std::fs::write(&catalog, entry("tiny", 1 << 30) + &entry("huge", 1 << 50)).expect("catalog");
    let endpoint = hub.endpoint();
    let env = [
        ("HF_ENDPOINT", endpoint.as_str()),
        ("HEARTWOOD_MODEL_CATALOG", catalog.to_str().expect("utf-8")),
    ];
    let project = tempfile::tempdir().expect("project");
    let p = project.path();

    let huge = hw(p, &["model", "download", "--catalog", "huge"], &env);
    assert_eq!(code(&huge), 2);
    assert!(
        text(&huge.stderr).contains("1048576.0 GiB"),
        "{}",
        text(&huge.stderr)
    );
    let forced = hw(
        p,
        &[
            "model",
            "download",
            "--catalog",
            "huge",
            "--accept-license",
            &"a".repeat(64),
        ],
        &env,
    );
    assert_ne!(code(&forced), 0);
    assert!(
        text(&forced.stderr).contains("needs"),
        "{}",
        text(&forced.stderr)
    );
    assert!(
        hub.fetched().is_empty(),
        "a model that cannot fit was fetched"
    );

    let sha = accept_sha(&hw(p, &["model", "download", "--catalog", "tiny"], &env));
    let done = hw(
        p,
        &[
            "model",
            "download",
            "--catalog",
            "tiny",
            "--accept-license",
            &sha,
        ],
        &env,
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(
        text(&done.stdout).contains("validated"),
        "{}",
        text(&done.stdout)
    );
    assert_eq!(hub.fetched(), [format!("{commit}/tiny.gguf")]);

    // Its bundle, imported offline elsewhere, is rehydrated from the catalog: validated.
    let bundle = work.path().join("tiny.zip");
    let exported = hw(
        p,
        &["model", "export", "tiny", bundle.to_str().expect("utf-8")],
        &env,
    );
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let other = tempfile::tempdir().expect("other");
    let offline = [("HF_ENDPOINT", "http://127.0.0.1:9"), env[1]];
    let review = hw(
        other.path(),
        &["model", "import", bundle.to_str().expect("utf-8")],
        &offline,
    );
    let sha = accept_sha(&review);
    let imported = hw(
        other.path(),
        &[
            "model",
            "import",
            bundle.to_str().expect("utf-8"),
            "--accept-license",
            &sha,
        ],
        &offline,
    );
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let listed = text(&hw(other.path(), &["model", "list"], &offline).stdout);
    assert!(
        listed.contains("tiny") && listed.contains(" validated"),
        "{listed}"
    );
    assert_eq!(hub.fetched().len(), 1, "the import reached the hub");

    // The specification: "The request is bound to the SHA-256 identity of the exact manifest
    // shown during review." A hub download whose files match a catalog entry, reviewed with
    // other settings (the catalog says 512 tokens of context), is stored exactly as reviewed.
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let from_hub = [
        "model",
        "download",
        "heartwood-tests/tiny-GGUF",
        "--revision",
        "main",
        "--context",
        "4096",
    ];
    let reviewed = accept_sha(&hw(elsewhere.path(), &from_hub, &env));
    let stored = hw(
        elsewhere.path(),
        &[&from_hub[..], &["--accept-license", &reviewed]].concat(),
        &env,
    );
    assert!(stored.status.success(), "{}", text(&stored.stderr));
    let listed: Value =
        serde_json::from_slice(&hw(elsewhere.path(), &["model", "list", "--json"], &env).stdout)
            .expect("json");
    let from_hub = listed
        .as_array()
        .and_then(|l| l.iter().find(|m| m["name"] == "tiny-gguf"))
        .unwrap_or_else(|| panic!("the download is listed: {listed}"));
    assert_eq!(
        from_hub["manifest_sha256"],
        reviewed.as_str(),
        "the stored manifest is the one reviewed and accepted: {listed}"
    );
}
