//! The page, embedded in the binary: its structure (`assets/index.html`), styles
//! (`assets/page.css`) and script (`assets/page.js`) are kept apart to be read and checked on
//! their own, and served as one document, so the page needs no second request and its policy
//! allows no script from anywhere else.

use std::sync::LazyLock;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The document with its styles and script in place; the base path is written in per request.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    include_str!("../assets/index.html")
        .replacen("/*%%STYLE%%*/", include_str!("../assets/page.css"), 1)
        .replacen("//%%SCRIPT%%", include_str!("../assets/page.js"), 1)
});

/// The page; the only thing written into it is the (non-secret) base path, which the policy
/// has already checked.
pub(crate) fn page(base: &str) -> Response {
    let html = DOCUMENT.replace("%%HEARTWOOD_BASE%%", base);
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            ),
        ],
        html,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    /// Each part is in the document once, whole, and no placeholder but the base is left.
    #[test]
    fn the_document_holds_its_styles_and_script() {
        let html: &str = &super::DOCUMENT;
        assert!(html.contains(include_str!("../assets/page.css")));
        assert!(html.contains(include_str!("../assets/page.js")));
        assert!(!html.contains("%%STYLE%%") && !html.contains("%%SCRIPT%%"));
        assert_eq!(html.matches("%%HEARTWOOD_BASE%%").count(), 1);
    }
}
