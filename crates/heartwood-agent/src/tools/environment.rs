//! The environment the terminal tool's shell starts with: built from an allowlist, never
//! inherited whole. Whatever is not on the list (cloud credentials, tokens, a model key under
//! any name) never reaches a command the model writes; a hidden name is left out even when the
//! list would let it through.

use std::ffi::OsString;

/// What a shell needs to work and what research tooling commonly reads: the user and locale,
/// temporary folders, language environments (Python, Conda, R, Julia, Java), thread counts and
/// GPUs, and proxies and certificate bundles. Exact names only: a prefix such as `NVIDIA_*`
/// would also pass `NVIDIA_API_TOKEN`.
pub const STANDARD_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_MEASUREMENT",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TERM",
    "COLORTERM",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CONDA_EXE",
    "CONDA_PYTHON_EXE",
    "CONDA_SHLVL",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "PYTHONPATH",
    "PYTHONUSERBASE",
    "PIP_INDEX_URL",
    "R_HOME",
    "R_LIBS",
    "R_LIBS_USER",
    "R_LIBS_SITE",
    "JULIA_DEPOT_PATH",
    "JULIA_PROJECT",
    "JULIA_NUM_THREADS",
    "JAVA_HOME",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CARGO_HOME",
    "RUSTUP_HOME",
];

/// Words that make a variable's name look secret: such a variable passes only when an
/// allowlist entry names it exactly, never through a prefix.
const SECRET_WORDS: [&str; 6] = ["TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// The allowlist and the names always left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEnvironment {
    allow: Vec<String>,
    hidden: Vec<String>,
    /// The hosts commands may reach through Heartwood's proxy (none: no network).
    network: Vec<String>,
}

impl Default for ToolEnvironment {
    /// [`STANDARD_ALLOW`], nothing hidden.
    fn default() -> Self {
        ToolEnvironment::new(STANDARD_ALLOW.iter().map(|s| (*s).to_owned()).collect())
    }
}

impl ToolEnvironment {
    /// Only the variables `allow` names (a trailing `*` is a prefix).
    pub fn new(allow: Vec<String>) -> Self {
        ToolEnvironment {
            allow,
            hidden: Vec::new(),
            network: Vec::new(),
        }
    }

    /// Also allows `more`.
    pub fn allowing(mut self, more: impl IntoIterator<Item = String>) -> Self {
        self.allow.extend(more);
        self
    }

    /// Lets confined commands reach `hosts` (and nothing else) through Heartwood's proxy.
    pub fn reaching_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.network.extend(hosts);
        self
    }

    /// The hosts confined commands may reach.
    pub fn network(&self) -> heartwood_sandbox::network::NetworkPolicy {
        heartwood_sandbox::network::NetworkPolicy::new(self.network.iter().cloned())
    }

    /// Leaves `names` out whatever the list says (a model route's credential).
    pub fn hiding(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.hidden.extend(names);
        self
    }

    /// Whether a variable called `name` reaches the shell: named exactly by the list, or
    /// matching a prefix entry (a project's own list may have them) when the name does not
    /// look secret. A hidden name never does.
    pub fn allows(&self, name: &str) -> bool {
        if self.hidden.iter().any(|h| h == name) {
            return false;
        }
        let upper = name.to_ascii_uppercase();
        let looks_secret = SECRET_WORDS.iter().any(|w| upper.contains(w));
        self.allow
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => !looks_secret && name.starts_with(prefix),
                None => name == pattern,
            })
    }

    /// The variables of this process that reach the shell, each value with any credential
    /// inside it taken out (see [`without_credentials`]).
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        self.allowed_vars()
            .map(|(name, value)| {
                let kept = without_credentials(value.as_encoded_bytes());
                (name, std::os::unix::ffi::OsStringExt::from_vec(kept))
            })
            .collect()
    }

    /// The variables of this process the list lets through, as they are.
    fn allowed_vars(&self) -> impl Iterator<Item = (OsString, OsString)> + '_ {
        std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(|n| self.allows(n)))
    }

    /// The allowed variables of this process whose values carried a credential, which the
    /// shell gets without it (for `heartwood status`).
    pub fn scrubbed(&self) -> Vec<String> {
        self.allowed_vars()
            .filter(|(_, value)| {
                without_credentials(value.as_encoded_bytes()) != value.as_encoded_bytes()
            })
            .filter_map(|(name, _)| name.into_string().ok())
            .collect()
    }

    /// The hidden names.
    pub fn hidden(&self) -> &[String] {
        &self.hidden
    }
}

/// `value` with the user information of every URL in it removed (`https://user:token@host/`
/// becomes `https://host/`): a token in `PIP_INDEX_URL` or a password in `https_proxy` is a
/// credential whatever the variable's name, and the command that needs it asks for a decision
/// to be given it some other way. A value without one is returned as it is.
pub fn without_credentials(value: &[u8]) -> Vec<u8> {
    let with_schemes = without_url_credentials(value);
    // A proxy may be written without its scheme (`alice:secret@proxy:3128`): a word with a
    // `user:password@` start, and no `/` before the `@`, loses that start too. An address
    // (`someone@example.org`) has no `:` there and is kept.
    let separator = |b: &u8| matches!(b, b' ' | b',' | b';');
    let mut out = Vec::with_capacity(with_schemes.len());
    for word in with_schemes.split_inclusive(separator) {
        match word.iter().position(|b| *b == b'@') {
            Some(at) if word[..at].contains(&b':') && !word[..at].contains(&b'/') => {
                out.extend_from_slice(&word[at + 1..]);
            }
            _ => out.extend_from_slice(word),
        }
    }
    out
}

/// `value` with the user information of every `scheme://` URL in it removed.
fn without_url_credentials(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = find(rest, b"://") {
        let authority_start = at + 3;
        out.extend_from_slice(&rest[..authority_start]);
        let tail = &rest[authority_start..];
        let end = tail
            .iter()
            .position(|b| {
                matches!(
                    b,
                    b'/' | b'?' | b'#' | b' ' | b',' | b';' | b'\t' | b'\n' | b'"' | b'\''
                )
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.iter().rposition(|b| *b == b'@') {
            Some(user_end) => out.extend_from_slice(&authority[user_end + 1..]),
            None => out.extend_from_slice(authority),
        }
        rest = &tail[end..];
    }
    out.extend_from_slice(rest);
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_inside_values_are_taken_out() {
        let cases: [(&str, &str); 6] = [
            (
                "https://user:tok3n@pypi.example.org/simple",
                "https://pypi.example.org/simple",
            ),
            ("http://alice:pw@proxy:3128", "http://proxy:3128"),
            (
                "https://a:b@one.org/x https://two.org/y,http://c@three.org",
                "https://one.org/x https://two.org/y,http://three.org",
            ),
            ("/usr/local/bin:/usr/bin", "/usr/local/bin:/usr/bin"),
            ("user@example.org", "user@example.org"),
            ("alice:PW@proxy.corp:3128", "proxy.corp:3128"),
        ];
        for (given, kept) in cases {
            assert_eq!(
                String::from_utf8(without_credentials(given.as_bytes())).expect("utf8"),
                kept
            );
        }
    }

    #[test]
    fn a_prefix_never_passes_a_name_that_looks_secret_an_exact_entry_does() {
        let env = ToolEnvironment::default().allowing(
            ["NVIDIA_*", "CONDA_*", "MY_SERVICE_TOKEN"]
                .into_iter()
                .map(str::to_owned),
        );
        for no in [
            "NVIDIA_API_TOKEN",
            "CONDA_SECRET",
            "CUDA_API_KEY",
            "LC_PASSWORD",
        ] {
            assert!(!env.allows(no), "{no}");
        }
        for yes in [
            "NVIDIA_TF32_OVERRIDE",
            "CONDA_ENVS_PATH",
            "MY_SERVICE_TOKEN",
        ] {
            assert!(env.allows(yes), "{yes}");
        }
        assert!(
            STANDARD_ALLOW.iter().all(|n| !n.ends_with('*')),
            "the default list names variables exactly"
        );
    }

    #[test]
    fn only_listed_names_pass_and_hidden_ones_never() {
        let env = ToolEnvironment::default()
            .allowing(["AWS_PROFILE".to_owned()])
            .hiding(["LC_SECRET".to_owned()]);
        for yes in ["PATH", "LC_ALL", "CONDA_PREFIX", "AWS_PROFILE"] {
            assert!(env.allows(yes), "{yes}");
        }
        for no in [
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "LC_SECRET",
            "PATHX",
            "path",
        ] {
            assert!(!env.allows(no), "{no}");
        }
    }
}
