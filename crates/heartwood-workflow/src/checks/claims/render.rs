//! What a reader of a report sees: its Markdown rendered (CommonMark with tables, by
//! `pulldown-cmark`) into passages of visible text, each with the source line of every part.
//!
//! Markup is dropped and entities are decoded, so `**0.31**` is `0.31` and `&minus;7` is `−7`;
//! what a reader cannot see is no wording at all: HTML comments, link destinations, image
//! paths, link reference definitions. What a reader may see is read like any other text: an
//! image's alternative text stands where the image would (a renderer shows it when the image is
//! missing, a screen reader reads it), and a link's or image's title (shown on hover) is a
//! passage of its own. Line endings are CommonMark's: LF, CRLF, or a CR alone. Raw HTML other than a comment is not
//! rendered here (a browser may show it, hide it or restyle the text around it), so it is
//! recorded: a passage holding inline HTML is marked, and an HTML block's lines are listed, for
//! the check to leave every figure near it `unverified` rather than guess.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// One run of visible text: a paragraph, heading, list item, code block or table cell.
#[derive(Debug, Clone, Default)]
pub(crate) struct Passage {
    /// The text a reader sees (soft line breaks are spaces).
    pub text: String,
    /// Where each part of `text` comes from: (offset in `text`, report line from 1).
    pub lines: Vec<(usize, usize)>,
    /// For a table cell: its column's header and its row's label, which say what it is.
    pub prefix: Vec<String>,
    /// A heading (its leading section number is not a figure).
    pub heading: bool,
    /// Raw HTML other than a comment stands inside it.
    pub html: bool,
}

impl Passage {
    /// The report line of the text at `offset`.
    pub fn line_at(&self, offset: usize) -> usize {
        self.lines
            .iter()
            .rev()
            .find(|(start, _)| *start <= offset)
            .or(self.lines.first())
            .map_or(1, |(_, line)| *line)
    }
}

/// A rendered report.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// Every passage of visible text, in order.
    pub passages: Vec<Passage>,
    /// The lines of HTML blocks (other than comments).
    pub html_lines: Vec<usize>,
}

/// Where each source line starts, for turning a byte offset into a line.
struct Lines(Vec<usize>);

impl Lines {
    fn new(source: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    fn of(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset)
    }
}

/// Where the comment opened just before `after` ends, as a browser reads it (HTML's
/// `<!-->` and `<!--->` are whole, empty comments; `--!>` closes one too), if it does.
fn comment_end(after: &str) -> Option<usize> {
    if after.starts_with('>') {
        return Some(1);
    }
    if after.starts_with("->") {
        return Some(2);
    }
    let plain = after.find("-->").map(|i| i + 3);
    let bang = after.find("--!>").map(|i| i + 4);
    match (plain, bang) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether an HTML fragment is only comments (and white space).
fn only_comments(html: &str) -> bool {
    let mut rest = html.trim();
    while let Some(after) = rest.strip_prefix("<!--") {
        let Some(end) = comment_end(after) else {
            return false;
        };
        rest = after[end..].trim_start();
    }
    rest.is_empty()
}

/// The rendering state.
#[derive(Default)]
struct Renderer {
    out: Rendered,
    current: Option<Passage>,
    /// Inside an inline comment.
    in_comment: bool,
    /// Titles of links and images in the current passage, each a passage of its own.
    titles: Vec<Passage>,
    in_html_block: Option<(usize, String)>,
    in_head: bool,
    header: Vec<String>,
    row: Vec<String>,
    column: usize,
}

impl Renderer {
    fn flush(&mut self) {
        if let Some(passage) = self.current.take()
            && (!passage.text.trim().is_empty() || passage.html)
        {
            self.out.passages.push(passage);
        }
        self.out.passages.append(&mut self.titles);
    }

    fn passage(&mut self) -> &mut Passage {
        self.current.get_or_insert_with(Passage::default)
    }

    fn text(&mut self, text: &str, line: usize) {
        if self.in_comment {
            return;
        }
        let passage = self.passage();
        let mut offset = passage.text.len();
        passage.lines.push((offset, line));
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                passage.text.push(' ');
                offset = passage.text.len();
                passage.lines.push((offset, line + i));
            }
            passage.text.push_str(part);
        }
    }

    fn inline_html(&mut self, html: &str) {
        let trimmed = html.trim();
        if self.in_comment {
            self.in_comment = !(trimmed.contains("-->") || trimmed.contains("--!>"));
            return;
        }
        if let Some(after) = trimmed.strip_prefix("<!--") {
            match comment_end(after) {
                // Text after a comment inside one inline fragment: a browser shows it.
                Some(end) if !after[end..].trim().is_empty() => self.passage().html = true,
                Some(_) => {}
                None => self.in_comment = true,
            }
            return;
        }
        self.passage().html = true;
    }

    fn start(&mut self, tag: &Tag<'_>, line: usize) {
        match tag {
            Tag::Image { title, .. } | Tag::Link { title, .. } => {
                if !title.trim().is_empty() && !self.in_comment {
                    self.titles.push(Passage {
                        text: title.to_string(),
                        lines: vec![(0, line)],
                        ..Passage::default()
                    });
                }
            }
            Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript => {}
            Tag::HtmlBlock => {
                self.flush();
                self.in_html_block = Some((0, String::new()));
            }
            Tag::Heading { .. } => {
                self.flush();
                self.passage().heading = true;
            }
            Tag::TableHead => {
                self.in_head = true;
                self.header.clear();
                self.column = 0;
            }
            Tag::TableRow => {
                self.row.clear();
                self.column = 0;
            }
            Tag::TableCell => {
                self.flush();
                let mut prefix = Vec::new();
                if !self.in_head {
                    prefix.extend(self.header.get(self.column).cloned());
                    if self.column > 0 {
                        prefix.extend(self.row.first().cloned());
                    }
                }
                self.passage().prefix = prefix;
            }
            _ => self.flush(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Image
            | TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link => {}
            TagEnd::HtmlBlock => {
                if let Some((line, html)) = self.in_html_block.take()
                    && !only_comments(&html)
                {
                    self.out.html_lines.push(line);
                }
            }
            TagEnd::TableCell => {
                let text = self
                    .current
                    .as_ref()
                    .map(|p| p.text.trim().to_owned())
                    .unwrap_or_default();
                if self.in_head {
                    self.header.push(text);
                } else {
                    self.row.push(text);
                }
                self.column += 1;
                self.flush();
            }
            TagEnd::TableHead => self.in_head = false,
            _ => self.flush(),
        }
    }
}

/// Renders a report into what a reader sees.
pub(crate) fn render(source: &str) -> Rendered {
    // A CR alone ends a line in CommonMark as LF and CRLF do; read every ending as LF so the
    // lines counted are the lines a renderer shows.
    let unified;
    let source = if source.contains('\r') {
        unified = source.replace("\r\n", "\n").replace('\r', "\n");
        unified.as_str()
    } else {
        source
    };
    let lines = Lines::new(source);
    let mut r = Renderer::default();
    let parser = Parser::new_ext(source, Options::ENABLE_TABLES).into_offset_iter();
    for (event, range) in parser {
        let line = lines.of(range.start);
        match event {
            Event::Start(tag) => r.start(&tag, line),
            Event::End(tag) => r.end(tag),
            Event::Text(text) | Event::Code(text) => r.text(&text, line),
            Event::InlineMath(text) | Event::DisplayMath(text) => r.text(&text, line),
            Event::SoftBreak | Event::HardBreak => r.text(" ", line),
            Event::Html(html) => {
                if let Some((first, block)) = r.in_html_block.as_mut() {
                    if block.is_empty() {
                        *first = line;
                    }
                    block.push_str(&html);
                } else {
                    r.out.html_lines.push(line);
                }
            }
            Event::InlineHtml(html) => r.inline_html(&html),
            Event::FootnoteReference(name) => r.text(&name, line),
            Event::Rule | Event::TaskListMarker(_) => {}
        }
    }
    r.flush();
    r.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        render(source)
            .passages
            .into_iter()
            .map(|p| p.text.trim().to_owned())
            .collect()
    }

    #[test]
    fn markup_urls_and_comments_are_not_wording() {
        assert_eq!(
            texts("On the [held-out](http://training) site R² <!-- training --> is **0.99**.\n"),
            vec!["On the held-out site R²  is 0.99."]
        );
        assert_eq!(
            texts("[x](http://y \"the title\") RMSE &#x30;.58 &minus;1\n"),
            vec!["x RMSE 0.58 −1", "the title"]
        );
        let quoted = render("> 0.90 is the\n> held-out R².\n");
        assert_eq!(quoted.passages[0].text, "0.90 is the held-out R².");
        assert_eq!(quoted.passages[0].line_at(14), 2);
    }

    #[test]
    fn alternative_text_is_read_where_the_image_stands_and_titles_on_their_own() {
        assert_eq!(
            texts("![The held-out MAE is 2.5.](fig.png \"RMSE 3.1\")\n"),
            vec!["The held-out MAE is 2.5.", "RMSE 3.1"]
        );
    }

    #[test]
    fn a_carriage_return_alone_ends_a_line() {
        let r = render("# R\r\rThe held-out RMSE\ris 0.58.\r");
        assert_eq!(r.passages[1].text, "The held-out RMSE is 0.58.");
        assert_eq!(r.passages[1].line_at(0), 3);
        assert_eq!(r.passages[1].line_at(20), 4);
    }

    #[test]
    fn raw_html_is_recorded_not_rendered() {
        let r =
            render("RMSE <b>0.01</b>.\n\n<div hidden>\n\nR² 0.9\n\n</div>\n\n<!-- a note -->\n");
        assert!(r.passages[0].html);
        assert!(!r.passages[1].html);
        assert_eq!(r.html_lines, vec![3, 7]);
    }

    #[test]
    fn a_table_cell_carries_its_header_and_row_label() {
        let r = render("sample | R²\n---|---\nheld-out | 0.99\n");
        let cell = r.passages.last().expect("a cell");
        assert_eq!(cell.text, "0.99");
        assert_eq!(cell.prefix, vec!["R²".to_owned(), "held-out".to_owned()]);
        assert_eq!(cell.line_at(0), 3);
    }
}
