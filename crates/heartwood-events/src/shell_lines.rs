//! How a proposed command's lines read: which start a command (shown after a `$` prompt) and
//! which belong to the one before (a here-document's body and its terminator, a line continued
//! with a trailing backslash), so every interface shows a heredoc as the script it is instead
//! of a `$` per line.

/// One line of a command, as interfaces show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellLine<'a> {
    /// The line's text.
    pub text: &'a str,
    /// Whether it starts a command (else it is the body or continuation of the one before).
    pub starts_command: bool,
}

impl ShellLine<'_> {
    /// What goes before the line: `$ ` where it starts a command, `> ` for text typed into a
    /// running program (`input`), and indentation where it continues the command before.
    pub fn prompt(&self, input: bool) -> &'static str {
        match (input, self.starts_command) {
            (true, _) => "> ",
            (false, true) => "$ ",
            (false, false) => "  ",
        }
    }
}

/// The lines of `command`, each marked as starting a command or continuing one.
pub fn shell_lines(command: &str) -> Vec<ShellLine<'_>> {
    let mut out = Vec::new();
    // Here-documents opened on earlier lines and not yet ended: (terminator, tabs stripped).
    let mut open: std::collections::VecDeque<(String, bool)> = Default::default();
    let mut continued = false;
    for text in command.split('\n') {
        if let Some((word, strip_tabs)) = open.front() {
            let line = if *strip_tabs {
                text.trim_start_matches('\t')
            } else {
                text
            };
            if line == word {
                open.pop_front();
            }
            out.push(ShellLine {
                text,
                starts_command: false,
            });
            continue;
        }
        out.push(ShellLine {
            text,
            starts_command: !continued,
        });
        continued = text.ends_with('\\') && !text.ends_with("\\\\");
        open.extend(heredocs(text));
    }
    out
}

/// The here-documents a line opens: each `<<WORD`, `<<-WORD`, `<<'WORD'` or `<<"WORD"` outside
/// quotes (`<<<` is a here-string, not a document).
fn heredocs(line: &str) -> Vec<(String, bool)> {
    let bytes = line.as_bytes();
    let mut found = Vec::new();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()) => break,
            None if line[i..].starts_with("<<<") => {
                i += 3;
                continue;
            }
            None if line[i..].starts_with("<<") => {
                let mut j = i + 2;
                let strip_tabs = bytes.get(j) == Some(&b'-');
                if strip_tabs {
                    j += 1;
                }
                while bytes.get(j).is_some_and(|c| *c == b' ' || *c == b'\t') {
                    j += 1;
                }
                let rest = &line[j..];
                let (word, used) = match rest.as_bytes().first() {
                    Some(q @ (b'\'' | b'"')) => {
                        let end = rest[1..].find(*q as char).map_or(rest.len(), |e| e + 1);
                        (rest[1..end].to_owned(), (end + 1).min(rest.len()))
                    }
                    _ => {
                        let end = rest
                            .find(|c: char| c.is_whitespace() || ";&|<>()".contains(c))
                            .unwrap_or(rest.len());
                        (rest[..end].replace(['\\', '"', '\''], ""), end)
                    }
                };
                if !word.is_empty() {
                    found.push((word, strip_tabs));
                }
                i = j + used.max(1);
                continue;
            }
            None => {}
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::shell_lines;

    fn starts(command: &str) -> Vec<bool> {
        shell_lines(command)
            .iter()
            .map(|l| l.starts_command)
            .collect()
    }

    #[test]
    fn a_heredoc_body_and_its_terminator_continue_the_command_that_opened_it() {
        let script = "cat > fit.py <<'EOF'\nimport csv\nprint(1)\nEOF\npython3 fit.py";
        assert_eq!(starts(script), [true, false, false, false, true]);
        assert_eq!(
            starts("cat <<-END | sort\n\tb\n\ta\n\tEND\necho done"),
            [true, false, false, false, true]
        );
        assert_eq!(
            starts("a <<A; b <<B\n1\nA\n2\nB\nc"),
            [true, false, false, false, false, true]
        );
    }

    #[test]
    fn here_strings_quotes_comments_and_continuations() {
        assert_eq!(
            starts("tr a b <<< 'x'\necho y"),
            [true, true],
            "a here-string"
        );
        assert_eq!(starts("echo '<<EOF'\necho y"), [true, true], "quoted");
        assert_eq!(starts("echo x # <<EOF\necho y"), [true, true], "a comment");
        assert_eq!(
            starts("python3 run.py \\\n  --fast\necho z"),
            [true, false, true]
        );
    }
}
