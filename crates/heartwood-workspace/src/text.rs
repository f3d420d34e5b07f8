//! Text files: UTF-8 only, bounded in bytes and lines, with a line range.

use serde::Serialize;

use crate::confined::{AccessError, read_bounded};
use crate::{ProjectPath, Workspace};

/// Bounds for [`Workspace::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TextLimits {
    /// Most bytes read from the file.
    pub max_bytes: u64,
    /// Most lines returned.
    pub max_lines: usize,
}

impl Default for TextLimits {
    fn default() -> Self {
        TextLimits {
            max_bytes: 1024 * 1024,
            max_lines: 2_000,
        }
    }
}

/// What a text request found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextStatus {
    /// Text; `content` holds the requested lines.
    Text,
    /// Not UTF-8 text (a NUL byte or invalid UTF-8); no content is returned.
    Binary,
}

/// A text file, or the reason it is not shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TextFile {
    /// The file.
    pub path: ProjectPath,
    /// Text or binary.
    pub status: TextStatus,
    /// The file's size in bytes.
    pub size: u64,
    /// The lines shown, joined with their line ends (empty when binary).
    pub content: String,
    /// The first line shown (1-based).
    pub first_line: usize,
    /// How many lines are shown.
    pub lines: usize,
    /// Whether the file goes on past what is shown (by the byte or the line bound).
    pub truncated: bool,
    /// The bounds applied.
    pub limits: TextLimits,
}

impl Workspace {
    /// Reads a UTF-8 text file, from line `first_line` (1-based) on.
    pub fn text(
        &self,
        path: &ProjectPath,
        first_line: usize,
        limits: TextLimits,
    ) -> Result<TextFile, AccessError> {
        let opened = self.root.open_file(path)?;
        let size = crate::confined::size_of(&opened.1);
        let (bytes, complete) = read_bounded(path, opened, limits.max_bytes)?;
        let mut file = TextFile {
            path: path.clone(),
            status: TextStatus::Binary,
            size,
            content: String::new(),
            first_line: first_line.max(1),
            lines: 0,
            truncated: !complete,
            limits,
        };
        let Some(text) = as_text(&bytes, complete) else {
            return Ok(file);
        };
        file.status = TextStatus::Text;
        let skip = file.first_line - 1;
        let mut shown = 0;
        for line in text.split_inclusive('\n').skip(skip) {
            if shown == limits.max_lines {
                file.truncated = true;
                break;
            }
            file.content.push_str(line);
            shown += 1;
        }
        file.lines = shown;
        Ok(file)
    }
}

/// The bytes as text, or `None` when they are binary. A cut file may end inside a character;
/// that partial character is dropped rather than counted as binary.
pub(crate) fn as_text(bytes: &[u8], complete: bool) -> Option<&str> {
    if bytes.contains(&0) {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(e) if !complete && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}
