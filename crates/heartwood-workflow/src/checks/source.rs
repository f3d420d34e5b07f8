//! The source checks: Python syntax (parsed, never run) and byte comparison (which never passes on
//! bytes alone).

use super::Files;
use crate::check::CheckResult;

/// `python_syntax`: reads one Python source file and parses it, never running it. An in-process
/// parser (rustpython) accepts ordinary code at once; what it rejects is confirmed by Python's own
/// parser (`ast.parse`), so newer syntax it does not know is never failed on its word alone.
/// Unverified when the in-process parser rejects the file and no `python3` is available.
pub fn python_syntax(files: Files<'_>, result: &mut CheckResult) {
    use std::io::Write;
    use std::process::Stdio;
    let Some(source) = files.first() else {
        return result.fail("the check needs the source file");
    };
    if source.iter().all(u8::is_ascii_whitespace) {
        return result.fail("the source file is empty");
    }
    let Ok(text) = std::str::from_utf8(source) else {
        return result.fail("the source file is not UTF-8");
    };
    if rustpython_parser::parse(text, rustpython_parser::Mode::Module, "<source>").is_ok() {
        return;
    }
    // The system's Python (never a project environment's on `PATH`), isolated (`-I`), confined.
    let parser = heartwood_sandbox::host::HostCommand::without_project(
        "python3",
        &[
            "-I",
            "-c",
            "import ast, sys\ntry:\n    ast.parse(sys.stdin.buffer.read())\nexcept SyntaxError as e:\n    print(f'line {e.lineno}: {e.msg}')\n    sys.exit(1)",
        ],
    )
    .map_err(std::io::Error::other)
    .and_then(|mut parser| {
        parser
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        parser.spawn()
    });
    let mut child = match parser {
        Ok(child) => child,
        Err(e) => {
            return result
                .mark_unverified(format!("python3 is not available to parse the source: {e}"));
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(source);
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => {}
        Ok(out) if out.status.code() == Some(1) => result.fail(format!(
            "the source does not parse: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Ok(out) => result.mark_unverified(format!(
            "the Python parser did not finish: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => result.mark_unverified(format!("the Python parser could not run: {e}")),
    }
}

/// `byte_comparison`: reads an original and a reproduction. Different bytes fail (with the first
/// differing offset). Identical bytes stay unverified: a copy matches too, and a reproduction
/// also needs evidence that a reviewed run produced it.
pub fn byte_comparison(files: Files<'_>, result: &mut CheckResult) {
    let (Some(original), Some(reproduced)) = (files.first(), files.get(1)) else {
        return result.fail("the check needs the original and the reproduction");
    };
    match original
        .iter()
        .zip(reproduced.iter())
        .position(|(a, b)| a != b)
    {
        Some(at) => result.fail(format!("the files differ first at byte {at}")),
        None if original.len() != reproduced.len() => result.fail(format!(
            "the files differ in length ({} and {} bytes)",
            original.len(),
            reproduced.len()
        )),
        None => result.mark_unverified(
            "the bytes are identical, which a copy would also be; reproduction needs evidence \
             that a reviewed run produced the file",
        ),
    }
}
