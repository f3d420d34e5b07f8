//! A project-relative path as a tool call, a command or a definition names it: parsing never
//! panics, and what is accepted stays inside the project and parses to itself again.
#![no_main]

use heartwood_workspace::{MAX_COMPONENTS, MAX_PATH_BYTES, ProjectPath};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    for parsed in [ProjectPath::parse(text), ProjectPath::parse_file(text)] {
        let Ok(path) = parsed else { continue };
        let s = path.as_str();
        assert!(!s.starts_with('/'), "an absolute path was accepted: {s:?}");
        assert!(s.len() <= MAX_PATH_BYTES);
        assert!(path.components().count() <= MAX_COMPONENTS);
        for component in path.components() {
            assert!(
                !matches!(component, "" | "." | ".."),
                "a path with the component {component:?} was accepted: {s:?}"
            );
            assert!(!component.contains(['/', '\\', '\0']), "{s:?}");
        }
        assert_eq!(
            ProjectPath::parse(s).as_ref(),
            Ok(&path),
            "a path did not parse to itself"
        );
    }
});
