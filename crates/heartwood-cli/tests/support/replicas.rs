//! What the replica tests share: the launch capability file a deployment provides, and an HTTP
//! response read as its status and JSON body.

use std::path::{Path, PathBuf};

/// A capability file in `dir`, mode 0600 as `serve --capability-file` requires, and its secret.
pub fn capability_file(dir: &Path) -> (PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let secret = "feedfacecafebeef".repeat(4);
    let path = dir.join("capability");
    std::fs::write(&path, format!("{secret}\n")).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    (path, secret)
}

/// The status code of an HTTP response, and its body as text.
pub fn answer_text(response: &str) -> (u16, String) {
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

/// The status code of an HTTP response, and its JSON body (null when it has none).
pub fn answer(response: &str) -> (u16, serde_json::Value) {
    let (status, body) = answer_text(response);
    (
        status,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    )
}
