//! The platform as the real binary sees it: detection from markers set in the environment
//! (Terra's) and from a deployment file (Carina's), shown by `heartwood status`; `heartwood
//! serve` refusing an ingress mode the platform does not offer and, on Terra, serving through
//! the Jupyter proxy with the right base path by itself; presets and prices through `model
//! connect` and `model show`.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use heartwood_testkit::{Script, ScriptedModelServer};

const TERRA: [(&str, &str); 3] = [
    ("GOOGLE_PROJECT", "terra-proj-7"),
    ("WORKSPACE_BUCKET", "gs://fc-0000"),
    ("CLUSTER_NAME", "saturn-abc"),
];

fn heartwood_with(project: &std::path::Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .envs(vars.iter().copied())
        .env_remove("HEARTWOOD_PLATFORM_FILE")
        .current_dir(project)
        .output()
        .expect("run heartwood")
}

#[test]
fn status_names_the_platform_detected_from_its_markers_or_its_deployment_file() {
    let project = tempfile::tempdir().expect("project");
    let plain = support::text(&heartwood_with(project.path(), &[], &["status"]).stdout);
    assert!(plain.contains("platform  generic"), "{plain}");

    let terra = heartwood_with(project.path(), &TERRA, &["status", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&terra.stdout).expect("json");
    assert_eq!(plan["platform"]["platform"], "terra");
    assert!(
        plan["platform"]["detected_by"]
            .as_str()
            .is_some_and(|why| why.contains("WORKSPACE_BUCKET"))
    );
    assert!(
        plan["platform"]["tool_env_allow"]
            .as_array()
            .is_some_and(|v| v.iter().any(|n| n == "WORKSPACE_BUCKET"))
    );

    let deployment = project.path().join("platform.toml");
    let mount = tempfile::tempdir().expect("mount");
    std::fs::write(
        &deployment,
        format!(
            "platform = \"carina\"\n[[data_mounts]]\npath = {:?}\npurpose = \"cohort\"\n",
            mount.path().to_string_lossy()
        ),
    )
    .expect("deployment");
    let carina = Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .arg("status")
        .env("HEARTWOOD_PLATFORM_FILE", &deployment)
        .current_dir(project.path())
        .output()
        .expect("status");
    let text = support::text(&carina.stdout);
    assert!(text.contains("platform  carina"), "{text}");
    assert!(text.contains("says so"), "{text}");
    assert!(
        text.contains(&format!("mount     {}", mount.path().display()))
            && text.contains("read-only"),
        "{text}"
    );
    assert!(
        !text.contains("hosted"),
        "Carina allows no hosted routes by default: {text}"
    );

    // A deployment file that cannot be parsed is said, not guessed past.
    std::fs::write(&deployment, "platform = \"moon\"\n").expect("deployment");
    let broken = Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .arg("status")
        .env("HEARTWOOD_PLATFORM_FILE", &deployment)
        .current_dir(project.path())
        .output()
        .expect("status");
    let text = support::text(&broken.stdout);
    assert!(
        text.contains("is not valid") && text.contains("platform.toml"),
        "{text}"
    );
}

#[test]
fn serve_refuses_an_ingress_the_platform_does_not_offer_and_proposes_terra_s_proxy() {
    let project = tempfile::tempdir().expect("project");
    let refused = heartwood_with(
        project.path(),
        &TERRA,
        &[
            "serve",
            "--trusted-proxy",
            "10.0.0.9",
            "--origin",
            "https://example.org",
            "--base-path",
            "/hw/",
        ],
    );
    assert!(!refused.status.success());
    let why = support::text(&refused.stderr);
    assert!(
        why.contains("does not offer the trusted_proxy ingress mode")
            && why.contains("nothing was started"),
        "{why}"
    );
    // Without a host for the proxy, the exact command is proposed.
    let proposed = heartwood_with(project.path(), &TERRA, &["serve"]);
    assert!(!proposed.status.success());
    let text = support::text(&proposed.stderr);
    assert!(
        text.contains("--jupyter-prefix /notebooks/terra-proj-7/saturn-abc/proxy/"),
        "{text}"
    );

    // With the host declared by the deployment, it serves there by itself.
    let deployment = project.path().join("platform.toml");
    std::fs::write(
        &deployment,
        "jupyter_external_host = \"notebooks.example.org\"\n",
    )
    .expect("deployment");
    let mut server = Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .arg("serve")
        .envs(TERRA)
        .env("HEARTWOOD_PLATFORM_FILE", &deployment)
        .current_dir(project.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let stdout = server.stdout.take().expect("stdout");
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("?token="))
        .expect("the link is printed");
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        url.trim()
            .starts_with("https://notebooks.example.org/notebooks/terra-proj-7/saturn-abc/proxy/"),
        "{url}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preset_and_prices_are_saved_and_shown() {
    let project = tempfile::tempdir().expect("project");
    let server = ScriptedModelServer::start(Script::of(Vec::new()))
        .await
        .expect("server");
    let base = server.base_url();
    let connected = support::heartwood_async(
        project.path(),
        &[
            "model",
            "connect",
            "--preset",
            "vllm",
            "--base-url",
            &base,
            "--model",
            "scripted",
            "--price-in",
            "0.15",
            "--price-out",
            "0.6",
        ],
    )
    .await;
    assert!(
        connected.status.success(),
        "{}",
        support::text(&connected.stderr)
    );
    let shown = support::text(
        &support::heartwood_async(project.path(), &["model", "show"])
            .await
            .stdout,
    );
    assert!(shown.contains("category          compatible"), "{shown}");
    assert!(
        shown.contains("$0.15 in, $0.60 out per million tokens"),
        "{shown}"
    );
    assert!(
        shown.contains("credentials       credential_free"),
        "{shown}"
    );
    assert!(
        shown.contains("automation        low-risk allowed"),
        "{shown}"
    );
    // A hosted preset brings its key variable, and a listed model its list prices.
    let hosted = support::heartwood_async(
        project.path(),
        &[
            "model",
            "connect",
            "--preset",
            "openai",
            "--base-url",
            &base,
            "--model",
            "scripted",
            "--save-anyway",
        ],
    )
    .await;
    let json = support::heartwood_async(project.path(), &["model", "show", "--json"]).await;
    let route: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(
        route["api_key_env"],
        "OPENAI_API_KEY",
        "{}",
        support::text(&hosted.stderr)
    );
    assert_eq!(route["category"], "hosted");
    assert!(
        route["prices"].is_null(),
        "scripted is not a listed OpenAI model"
    );
    let unknown =
        support::heartwood_async(project.path(), &["model", "connect", "--preset", "acme"]).await;
    assert!(!unknown.status.success());
    assert!(support::text(&unknown.stderr).contains("openai, openrouter, together, groq, chatgpt"));
}
