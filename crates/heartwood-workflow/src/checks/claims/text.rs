//! Reading a report's figures: every number a reader sees in it, in sentences, headings and
//! Markdown table cells, with the line it stands on, the digits written and the words around it.
//!
//! The text is read as a reader reads it, not as bytes: each line is put in Unicode
//! compatibility form (NFKC), invisible characters are dropped, every Unicode dash, hyphen and
//! minus sign is one ASCII hyphen, a paragraph's lines are joined before it is cut into
//! sentences (a sentence that wraps is one sentence), and a Markdown table is read cell by
//! cell, each with its column's header and its row's label as its context. A number glued to
//! letters (`R²`, `HC3`, `x1`) is part of a name, not a figure; a percentage directly before
//! `CI` or `confidence` is an interval's level.

use unicode_normalization::UnicodeNormalization;

/// How a figure is related to the quantity it states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// `= figure` (the ordinary case).
    Equal,
    /// `< figure` or `≤ figure`: the quantity is below it.
    Below,
    /// `> figure` or `≥ figure`: the quantity is above it.
    Above,
}

/// One number a reader sees.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// The report line it stands on (from 1).
    pub line: usize,
    /// As written, after normalization (`-0.31`, `31%`, `1.2e-05`, `0,31`).
    pub written: String,
    /// Its value (a percentage as written, not divided).
    pub value: f64,
    /// Half a unit of the last digit written: how far rounding to those digits moves a value.
    pub half_unit: f64,
    /// Whether it ends in `%`.
    pub percent: bool,
    /// Written with a decimal comma or digit grouping (`0,31`, `1,234`): a reader cannot tell
    /// which, so its value is not read.
    pub comma: bool,
    /// `<`, `>` or `=`.
    pub relation: Relation,
    /// The sentence (or the table row) it stands in, as written, for quoting.
    pub quote: String,
    /// The lower-cased words around it: its sentence, or the cell's header and row label.
    pub context: String,
    /// Where the figure stands in `context` (for a table cell, past its end).
    pub at: usize,
}

/// Folds a line as a reader reads it: NFKC, invisible characters dropped, dashes one hyphen.
pub(crate) fn fold(line: &str) -> String {
    line.nfkc()
        .filter(|&c| !crate::identity::default_ignorable(c))
        .map(|c| match c {
            '\u{2010}'..='\u{2015}'
            | '\u{2212}'
            | '\u{2043}'
            | '\u{FE58}'
            | '\u{FE63}'
            | '\u{FF0D}'
            | '\u{2E3A}'
            | '\u{2E3B}' => '-',
            other => other,
        })
        .collect()
}

/// Every figure in the report: an abstract or a heading states results as much as a results
/// section does, so every line is read. A heading is read as a sentence of its own, without its
/// section number (`## 3. Results`).
pub(crate) fn figures(report: &str) -> Vec<Figure> {
    let lines: Vec<String> = report.lines().map(fold).collect();
    let mut out = Vec::new();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let mut table: Vec<(usize, &str)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        let is_table = trimmed.starts_with('|');
        let heading = heading_level(line).map(|level| {
            let text = trimmed[level..].trim_start();
            list_item(text).unwrap_or(text)
        });
        let breaks = trimmed.is_empty() || heading.is_some() || is_table;
        if breaks || list_item(trimmed).is_some() {
            read_paragraph(&paragraph, &mut out);
            paragraph.clear();
        }
        if !is_table {
            read_table(&table, &mut out);
            table.clear();
        }
        if let Some(text) = heading {
            read_paragraph(&[(i + 1, text)], &mut out);
        } else if is_table {
            table.push((i + 1, trimmed));
        } else if !breaks {
            let body = list_item(trimmed).unwrap_or(trimmed);
            paragraph.push((i + 1, body));
        }
    }
    read_paragraph(&paragraph, &mut out);
    read_table(&table, &mut out);
    out
}

/// The level of a Markdown heading (`## Results` is 2).
fn heading_level(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    let level = trimmed.chars().take_while(|&c| c == '#').count();
    let rest = &trimmed[level..];
    (1..=6)
        .contains(&level)
        .then_some(level)
        .filter(|_| rest.is_empty() || rest.starts_with(' '))
}

/// The text of a list item after its marker (`- `, `* `, `+ `, `1. `, `1) `).
fn list_item(line: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return Some(rest);
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = &line[digits..];
    (digits > 0 && digits < 4)
        .then(|| rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")))
        .flatten()
}

/// Joins a paragraph's lines, cuts it into sentences and reads each sentence's figures.
fn read_paragraph(lines: &[(usize, &str)], out: &mut Vec<Figure>) {
    if lines.is_empty() {
        return;
    }
    let mut joined = String::new();
    // Where each line starts in the joined text.
    let mut starts: Vec<(usize, usize)> = Vec::new();
    for (number, text) in lines {
        if !joined.is_empty() {
            joined.push(' ');
        }
        starts.push((joined.len(), *number));
        joined.push_str(text);
    }
    let line_at = |offset: usize| {
        starts
            .iter()
            .rev()
            .find(|(start, _)| *start <= offset)
            .map_or(0, |(_, n)| *n)
    };
    for (start, sentence) in sentences(&joined) {
        let context = sentence.to_lowercase();
        for token in tokens(sentence) {
            // Lower-casing keeps offsets for the scripts reports are written in; clamp anyway.
            let at = token.start.min(context.len());
            let line = line_at(start + token.start);
            out.push(token.figure(line, sentence, &context, at));
        }
    }
}

/// A paragraph's sentences with where each starts: cut after `.`, `;`, `!` or `?` followed by
/// white space (a decimal point is followed by a digit, so numbers stay whole).
fn sentences(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let ends = matches!(b, b'.' | b';' | b'!' | b'?')
            && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace);
        if ends {
            out.push((start, &text[start..=i]));
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push((start, &text[start..]));
    }
    out.retain(|(_, s)| !s.trim().is_empty());
    out
}

/// The cells of a table row, between its pipes (`\|` is a pipe inside a cell).
fn cells(row: &str) -> Vec<&str> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = inner.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
            out.push(inner[start..i].trim());
            start = i + 1;
        }
    }
    out.push(inner[start..].trim());
    out
}

/// Reads a Markdown table: each cell's figures, with its column header and row label as
/// context (the header's own figures with the header row as context).
fn read_table(rows: &[(usize, &str)], out: &mut Vec<Figure>) {
    let Some(&(_, header_row)) = rows.first() else {
        return;
    };
    let header = cells(header_row);
    for &(line, row) in rows {
        let row_cells = cells(row);
        let separator = row_cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
        if separator {
            continue;
        }
        let label = row_cells.first().copied().unwrap_or_default();
        for (column, cell) in row_cells.iter().enumerate() {
            let heading = header.get(column).copied().unwrap_or_default();
            let context = format!("{heading} | {label}").to_lowercase();
            for token in tokens(cell) {
                let at = context.len();
                out.push(token.figure(line, row.trim(), &context, at));
            }
        }
    }
}

/// A number as the tokenizer found it.
#[derive(Debug)]
struct Token {
    start: usize,
    written: String,
    value: f64,
    half_unit: f64,
    percent: bool,
    comma: bool,
    relation: Relation,
}

impl Token {
    fn figure(self, line: usize, quote: &str, context: &str, at: usize) -> Figure {
        Figure {
            line,
            written: self.written,
            value: self.value,
            half_unit: self.half_unit,
            percent: self.percent,
            comma: self.comma,
            relation: self.relation,
            quote: quote.trim().to_owned(),
            context: context.to_owned(),
            at,
        }
    }
}

/// Every figure in `text` (see the module documentation for what is not one).
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (offset, c) = chars[i];
        let starts_number = c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|n| n.1.is_ascii_digit()));
        let glued = i > 0 && {
            let p = chars[i - 1].1;
            p.is_alphanumeric() || p == '_' || (p == '.' && c != '.')
        };
        if !starts_number || glued {
            i += 1;
            continue;
        }
        let (token, next) = read_number(text, &chars, i);
        // A number directly followed by a letter is part of a name (`3rd`, `2x`).
        let named = chars
            .get(next)
            .is_some_and(|n| n.1.is_alphabetic() || n.1 == '_');
        let level = token.percent && {
            let after = text[chars.get(next).map_or(text.len(), |n| n.0)..]
                .trim_start()
                .to_lowercase();
            after.starts_with("ci") || after.starts_with("confidence")
        };
        if !named && !level {
            let mut token = token;
            token.start = offset;
            out.push(token);
        }
        i = next.max(i + 1);
    }
    out
}

/// Reads the number starting at char `i` (a digit or a point): sign, digits, a decimal point
/// or comma, an exponent, a percent sign; returns it and the index after it.
fn read_number(text: &str, chars: &[(usize, char)], i: usize) -> (Token, usize) {
    let mut j = i;
    let digits = |j: &mut usize| {
        let from = *j;
        while chars.get(*j).is_some_and(|c| c.1.is_ascii_digit()) {
            *j += 1;
        }
        *j - from
    };
    digits(&mut j);
    let mut decimals = 0usize;
    let mut comma = false;
    match chars.get(j).map(|c| c.1) {
        Some('.') if chars.get(j + 1).is_some_and(|c| c.1.is_ascii_digit()) => {
            j += 1;
            decimals = digits(&mut j);
        }
        Some(',') if chars.get(j + 1).is_some_and(|c| c.1.is_ascii_digit()) => {
            comma = true;
            j += 1;
            digits(&mut j);
            // Grouped thousands go on (`1,234,567`).
            while chars.get(j).is_some_and(|c| c.1 == ',')
                && chars.get(j + 1).is_some_and(|c| c.1.is_ascii_digit())
            {
                j += 1;
                digits(&mut j);
            }
        }
        _ => {}
    }
    let mut exponent = 0i32;
    if matches!(chars.get(j).map(|c| c.1), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(chars.get(k).map(|c| c.1), Some('+' | '-')) {
            k += 1;
        }
        let from = k;
        let mut e = k;
        if digits(&mut e) > 0 {
            let end = chars.get(e).map_or(text.len(), |c| c.0);
            exponent = text[chars[from - 1].0..end]
                .trim_start_matches(['e', 'E'])
                .parse()
                .unwrap_or(0);
            j = e;
        }
    }
    let end = chars.get(j).map_or(text.len(), |c| c.0);
    let mut written = text[chars[i].0..end].to_owned();
    let percent = chars.get(j).is_some_and(|c| c.1 == '%');
    if percent {
        j += 1;
        written.push('%');
    }
    // A sign directly before the digits, itself not glued to a word or number.
    let before: &str = &text[..chars[i].0];
    let signed = before.ends_with('-')
        && !before[..before.len() - 1]
            .chars()
            .next_back()
            .is_some_and(|p| p.is_alphanumeric() || p == ')' || p == ']');
    if signed {
        written.insert(0, '-');
    }
    let prefix = if signed {
        &before[..before.len() - 1]
    } else {
        before
    };
    let relation = match prefix.trim_end().chars().next_back() {
        Some('<' | '≤') => Relation::Below,
        Some('>' | '≥') => Relation::Above,
        _ => Relation::Equal,
    };
    let number_text = written.trim_end_matches('%');
    let value = if comma {
        f64::NAN
    } else {
        number_text.parse::<f64>().unwrap_or(f64::NAN)
    };
    let half_unit = 0.5 * 10f64.powi(exponent - i32::try_from(decimals).unwrap_or(i32::MAX));
    (
        Token {
            start: 0,
            written,
            value,
            half_unit,
            percent,
            comma,
            relation,
        },
        j,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(report: &str) -> Vec<(usize, String)> {
        figures(report)
            .into_iter()
            .map(|f| (f.line, f.written))
            .collect()
    }

    #[test]
    fn figures_are_read_from_sentences_headings_and_table_cells_but_not_from_names() {
        let report = "# Study\n\nIntro 2024.\n\n## 3. Results\n\nThe held\u{2011}out R² was\n0.31 \
                      (95% CI 0.2 to −0.4; p < .001), HC3 errors.\n\n| sample | R² |\n|---|---|\n\
                      | held-out | 1.2e-05 |\n\n## Discussion of 7\n";
        assert_eq!(
            written(report),
            vec![
                (3, "2024".to_owned()),
                (8, "0.31".to_owned()),
                (8, "0.2".to_owned()),
                (8, "-0.4".to_owned()),
                (8, ".001".to_owned()),
                (12, "1.2e-05".to_owned()),
                (14, "7".to_owned()),
            ]
        );
        let all = figures(report);
        assert_eq!(all[4].relation, Relation::Below);
        assert!(
            all[1].context.contains("held-out r2 was 0.31"),
            "{}",
            all[1].context
        );
        assert!((all[5].half_unit - 0.05e-5).abs() < 1e-20);
        assert_eq!(all[5].context, "r2 | held-out");
    }

    #[test]
    fn a_decimal_comma_and_percentages_are_read_as_written() {
        let all = figures("R² 0,31 and 31% and 1,234,567 rows; 0.1, 0.2\r\n");
        let read: Vec<(&str, bool)> = all.iter().map(|f| (f.written.as_str(), f.comma)).collect();
        assert_eq!(
            read,
            vec![
                ("0,31", true),
                ("31%", false),
                ("1,234,567", true),
                ("0.1", false),
                ("0.2", false)
            ]
        );
        assert!((all[1].half_unit - 0.5).abs() < 1e-12);
    }
}
