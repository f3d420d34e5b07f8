//! An agent message's Markdown, parsed once by the gateway into blocks every interface renders
//! (headings, paragraphs, lists, code with its language, quotes), so no interface shows raw
//! `**…**` and none parses Markdown on its own. Text stays text: an interface escapes it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "block", rename_all = "snake_case")]
pub enum Block {
    /// A heading (level 1 to 6).
    Heading {
        /// The level.
        level: u8,
        /// Its text.
        spans: Vec<Inline>,
    },
    /// A paragraph.
    Paragraph {
        /// Its text.
        spans: Vec<Inline>,
    },
    /// A list.
    List {
        /// Numbered (from `start`) or bulleted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
        /// Each item's text.
        items: Vec<Vec<Inline>>,
    },
    /// A code block, verbatim.
    Code {
        /// The language named after the fence, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        /// The code.
        text: String,
    },
    /// A quotation.
    Quote {
        /// Its text.
        spans: Vec<Inline>,
    },
    /// A horizontal rule.
    Rule,
}

/// A run of text with one style.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Inline {
    /// The text.
    pub text: String,
    /// Bold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strong: bool,
    /// Italic.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emphasis: bool,
    /// Inline code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
}
