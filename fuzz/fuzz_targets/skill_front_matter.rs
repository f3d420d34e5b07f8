//! A SKILL.md as every skill source hands it over: parsing any text never panics, and what
//! parses has a name that passes the skill-name rule.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok((front, _body)) = heartwood_skills::skill::parse(text) {
        assert!(heartwood_skills::skill::check_name(&front.name).is_ok());
    }
});
