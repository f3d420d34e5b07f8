//! The curated skills shipped with Heartwood, compiled in at this build's revision (the
//! sources are `bundled/` in this crate; the suite validates them on every build).

/// A skill's files as `(path, bytes)`.
pub type Files = &'static [(&'static str, &'static [u8])];

/// Each bundled skill: its name and its files.
pub const BUNDLED: [(&str, Files); 3] = [
    (
        "group-disjoint-splits",
        &[(
            "SKILL.md",
            include_bytes!("../bundled/group-disjoint-splits/SKILL.md"),
        )],
    ),
    (
        "reading-a-data-dictionary",
        &[(
            "SKILL.md",
            include_bytes!("../bundled/reading-a-data-dictionary/SKILL.md"),
        )],
    ),
    (
        "writing-a-readiness-report",
        &[(
            "SKILL.md",
            include_bytes!("../bundled/writing-a-readiness-report/SKILL.md"),
        )],
    ),
];
