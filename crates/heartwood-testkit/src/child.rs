//! Running one test again in a child process with environment variables set: the environment
//! is process-wide (and setting it while other threads run is undefined behaviour), so a test
//! of behaviour that reads it — a platform's markers, a route's key — runs where it can be set
//! before the process starts.

use std::ffi::OsStr;

/// The variable that marks the child.
const CHILD: &str = "HEARTWOOD_TEST_CHILD";

/// In the parent: runs the test named `test` in a fresh copy of this test binary with `vars`
/// set, panics unless exactly that test ran and passed, and returns `false`. In the child:
/// returns `true`, and the caller goes on with the test's body.
///
/// ```no_run
/// #[test]
/// fn reads_the_platform_file() {
///     if !heartwood_testkit::child::rerun_with(
///         "reads_the_platform_file",
///         &[("HEARTWOOD_PLATFORM_FILE", "/tmp/p.toml".as_ref())],
///     ) {
///         return;
///     }
///     // The body runs here, in the child.
/// }
/// ```
pub fn rerun_with(test: &str, vars: &[(&str, &OsStr)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let binary = std::env::current_exe().expect("the test binary's path");
    let output = std::process::Command::new(binary)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let ran = stdout.contains("test result: ok. 1 passed");
    assert!(
        output.status.success() && ran,
        "the test {test} failed in its child process:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    false
}
