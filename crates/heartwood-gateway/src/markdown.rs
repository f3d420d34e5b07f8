//! The agent's Markdown as [`Block`]s: parsed here once (CommonMark, with pulldown-cmark), so
//! the terminal and the page render the same structure and neither parses on its own. Links
//! keep their text; raw HTML is kept as text, never interpreted.

use heartwood_events::{Block, Inline};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

/// The blocks of `text`.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut spans: Vec<Inline> = Vec::new();
    let mut style = Style::default();
    let mut code: Option<(Option<String>, String)> = None;
    // Open lists (their start number, if numbered) and the items collected for the innermost.
    let mut lists: Vec<(Option<u64>, Vec<Vec<Inline>>)> = Vec::new();
    let mut quote = 0usize;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(str::to_owned)
                        .filter(|l| !l.is_empty()),
                    CodeBlockKind::Indented => None,
                };
                code = Some((language, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((language, text)) = code.take() {
                    out.push(Block::Code { language, text });
                }
            }
            Event::Text(t) if code.is_some() => {
                if let Some((_, text)) = code.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::Start(Tag::List(start)) => lists.push((start, Vec::new())),
            Event::End(TagEnd::List(_)) => {
                if let Some((start, items)) = lists.pop() {
                    match lists.last_mut().and_then(|(_, items)| items.last_mut()) {
                        // A nested list continues its parent item, one item per line.
                        Some(parent) => {
                            for item in items {
                                parent.push(plain("\n  • "));
                                parent.extend(item);
                            }
                        }
                        None => out.push(Block::List { start, items }),
                    }
                }
            }
            Event::Start(Tag::Item) => {
                flush_into_item(&mut lists, &mut spans);
                if let Some((_, items)) = lists.last_mut() {
                    items.push(Vec::new());
                }
            }
            Event::End(TagEnd::Item) => flush_into_item(&mut lists, &mut spans),
            Event::Start(Tag::BlockQuote(_)) => quote += 1,
            Event::End(TagEnd::BlockQuote(_)) => {
                quote = quote.saturating_sub(1);
                if !spans.is_empty() {
                    out.push(Block::Quote {
                        spans: std::mem::take(&mut spans),
                    });
                }
            }
            Event::End(TagEnd::Heading(level)) => out.push(Block::Heading {
                level: heading_level(level),
                spans: std::mem::take(&mut spans),
            }),
            Event::End(TagEnd::Paragraph) => {
                if !lists.is_empty() {
                    // A paragraph inside a list item is that item's text.
                    spans.push(plain(" "));
                } else if quote > 0 {
                    spans.push(plain("\n"));
                } else if !spans.is_empty() {
                    out.push(Block::Paragraph {
                        spans: std::mem::take(&mut spans),
                    });
                }
            }
            Event::Start(Tag::Strong) => style.strong = true,
            Event::End(TagEnd::Strong) => style.strong = false,
            Event::Start(Tag::Emphasis) => style.emphasis = true,
            Event::End(TagEnd::Emphasis) => style.emphasis = false,
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => {
                spans.push(style.inline(&t, false));
            }
            Event::Code(t) => spans.push(style.inline(&t, true)),
            Event::SoftBreak => spans.push(plain(" ")),
            Event::HardBreak => spans.push(plain("\n")),
            Event::Rule => out.push(Block::Rule),
            _ => {}
        }
    }
    if !spans.is_empty() {
        out.push(Block::Paragraph { spans });
    }
    out
}

#[derive(Default, Clone, Copy)]
struct Style {
    strong: bool,
    emphasis: bool,
}

impl Style {
    fn inline(self, text: &str, code: bool) -> Inline {
        Inline {
            text: text.to_owned(),
            strong: self.strong,
            emphasis: self.emphasis,
            code,
        }
    }
}

fn plain(text: &str) -> Inline {
    Style::default().inline(text, false)
}

fn flush_into_item(lists: &mut [(Option<u64>, Vec<Vec<Inline>>)], spans: &mut Vec<Inline>) {
    if spans.is_empty() {
        return;
    }
    if let Some(item) = lists.last_mut().and_then(|(_, items)| items.last_mut()) {
        // Trailing separators from paragraph ends are not part of the text.
        while spans.last().is_some_and(|s| s.text.trim().is_empty()) {
            spans.pop();
        }
        item.append(spans);
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(spans: &[Inline]) -> String {
        spans.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn headings_emphasis_lists_and_code_become_blocks() {
        let parsed = blocks(
            "## Result\n\nThe slope is **0.75** and *significant*; see `model.json`.\n\n\
             1. fit\n2. check\n\n- a\n- b\n\n```python\nprint(1)\n```\n\n> careful\n",
        );
        assert!(
            matches!(&parsed[0], Block::Heading { level: 2, spans } if texts(spans) == "Result")
        );
        let Block::Paragraph { spans } = &parsed[1] else {
            panic!("{parsed:?}");
        };
        assert!(spans.iter().any(|s| s.strong && s.text == "0.75"));
        assert!(spans.iter().any(|s| s.emphasis && s.text == "significant"));
        assert!(spans.iter().any(|s| s.code && s.text == "model.json"));
        assert!(!texts(spans).contains("**"));
        assert!(
            matches!(&parsed[2], Block::List { start: Some(1), items } if items.len() == 2 && texts(&items[1]) == "check")
        );
        assert!(matches!(&parsed[3], Block::List { start: None, items } if items.len() == 2));
        assert!(
            matches!(&parsed[4], Block::Code { language: Some(l), text } if l == "python" && text == "print(1)\n")
        );
        assert!(matches!(&parsed[5], Block::Quote { spans } if texts(spans).trim() == "careful"));
    }

    #[test]
    fn html_stays_text() {
        let parsed = blocks("<script>alert(1)</script>");
        let text: String = parsed
            .iter()
            .map(|b| match b {
                Block::Paragraph { spans } => texts(spans),
                other => format!("{other:?}"),
            })
            .collect();
        assert!(text.contains("<script>"), "{parsed:?}");
    }
}
