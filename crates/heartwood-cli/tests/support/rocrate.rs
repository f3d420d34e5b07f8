//! Validating an exported crate as CI does: `roc-validator` at the REQUIRED level against
//! RO-Crate 1.1 and the Run Crate profiles it provides, then loading it with the `rocrate`
//! library, both from the venv `HEARTWOOD_ROCRATE_VENV` names. Shared by the workflow-run and
//! the batch crate tests so both crates meet the same bar.

use std::path::Path;

use serde_json::Value;

use super::text;

/// The profiles every crate is validated against.
pub const PROFILES: [&str; 4] = [
    "ro-crate-1.1",
    "provenance-run-crate-0.5",
    "workflow-run-crate-0.5",
    "process-run-crate-0.5",
];

/// Validates `krate` at the REQUIRED level against every profile in `profiles` (no issue
/// allowed) and loads it with `rocrate`, whose main entity must be `main_entity` (`None`: the
/// crate states none). Skipped with a reason without the venv, except under `CI=true`.
pub fn validate(krate: &Path, profiles: &[&str], main_entity: Option<&str>) {
    let Some(venv) = std::env::var_os("HEARTWOOD_ROCRATE_VENV") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true needs HEARTWOOD_ROCRATE_VENV"
        );
        eprintln!(
            "skipped: HEARTWOOD_ROCRATE_VENV is not set, so roc-validator and rocrate cannot run"
        );
        return;
    };
    let venv = Path::new(&venv);
    // Where w3id.org is out of reach, the 1.1 context comes from the venv (see .ci/run).
    let cache = tempfile::tempdir().expect("cache");
    let cache_path = cache.path().join("http");
    let context = venv.join("ro-crate-1.1-context.jsonld");
    if context.exists() {
        let seeder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/ro-crate/seed_validator_cache.py");
        let seeded = std::process::Command::new(venv.join("bin/python"))
            .arg(seeder)
            .arg(&cache_path)
            .arg(&context)
            .output()
            .expect("seed");
        assert!(seeded.status.success(), "{}", text(&seeded.stderr));
    }
    for profile in profiles {
        let out = std::process::Command::new(venv.join("bin/rocrate-validator"))
            .args([
                "-y", "validate", "-p", profile, "-l", "required", "-f", "json",
            ])
            .args(["--skip-availability-check", "--cache-path"])
            .arg(&cache_path)
            .arg(krate)
            .output()
            .expect("rocrate-validator");
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{profile}: {}{}", text(&out.stdout), text(&out.stderr)));
        assert_eq!(report["passed"], true, "{profile}: {report:#}");
    }
    let loaded = std::process::Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sys, rocrate.rocrate as r; c = r.ROCrate(sys.argv[1]); \
             m = c.mainEntity; print(len(c.get_entities()), m.id if m else '-')",
        ])
        .arg(krate)
        .output()
        .expect("python");
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
    let said = text(&loaded.stdout);
    let main = said
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    assert_eq!(main, main_entity.unwrap_or("-"), "{said}");
}
