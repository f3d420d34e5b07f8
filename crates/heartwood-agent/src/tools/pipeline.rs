//! The one small shell language the risk rules may call low risk, recognized by construction:
//! a pipeline of simple commands whose words are plain or quoted text. Anything outside it (a
//! separator `;` `&&` `||` `&`, a newline, a redirection, a substitution `$( )` or backticks, a
//! process substitution `<( )`, a subshell or group, a here-document, a variable or tilde
//! expansion, an escape, a comment, brace or bracket patterns, a non-ASCII character) is not
//! recognized, and an unrecognized command waits for a person. This is not a bash parser: it
//! accepts a language so small that what bash would run is exactly the words it returns.

/// Characters a word may hold outside quotes. No glob: a pattern expands to file names the
/// project controls, and a file named `--compress-program=bash` is an option to `sort`.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./,:=@%+".contains(c)
}

/// Characters a double-quoted word may hold (nothing that expands inside double quotes).
fn double_quotable(c: char) -> bool {
    (c.is_ascii_graphic() || c == ' ') && !"$`\\!\"".contains(c)
}

/// The pipeline's commands and their words, if `command` is in the language; else `None`.
pub fn simple_pipeline(command: &str) -> Option<Vec<Vec<String>>> {
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    commands.last_mut()?.push(w);
                }
            }
            '|' => {
                if let Some(w) = word.take() {
                    commands.last_mut()?.push(w);
                }
                if chars.peek() == Some(&'|') || commands.last()?.is_empty() {
                    return None;
                }
                commands.push(Vec::new());
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        '\n' | '\r' => return None,
                        q => w.push(q),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        q if double_quotable(q) => w.push(q),
                        _ => return None,
                    }
                }
            }
            c if plain(c) => word.get_or_insert_with(String::new).push(c),
            _ => return None,
        }
    }
    if let Some(w) = word.take() {
        commands.last_mut()?.push(w);
    }
    if commands.iter().any(Vec::is_empty) {
        return None;
    }
    Some(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_pipelines_are_recognized() {
        assert_eq!(
            simple_pipeline("cat 'a b.csv' | head -n 5"),
            Some(vec![
                vec!["cat".to_owned(), "a b.csv".to_owned()],
                vec!["head".to_owned(), "-n".to_owned(), "5".to_owned()],
            ])
        );
        assert_eq!(
            simple_pipeline("grep \"x y\" data.csv"),
            Some(vec![vec!["grep".into(), "x y".into(), "data.csv".into()]])
        );
        for not in [
            "ls\nrm -rf x",
            "ls; id",
            "ls && id",
            "ls || id",
            "ls & id",
            "echo $(id)",
            "echo `id`",
            "cat <(id)",
            "cat < f",
            "ls > f",
            "(id)",
            "{ id; }",
            "echo $HOME",
            "echo \"$HOME\"",
            "echo ~/x",
            "echo a\\ b",
            "ls # c",
            "cat <<EOF",
            "ls |",
            "| ls",
            "ls | | wc",
            "echo 'unterminated",
            "ls données",
            "sort -S 1 *",
            "cat ?",
            "cat data/*.csv",
            "echo a\rid",
        ] {
            assert_eq!(simple_pipeline(not), None, "{not:?}");
        }
    }
}
