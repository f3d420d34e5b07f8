//! Tables and data dictionaries, read within the check limits.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Deserialize;

use crate::check::{MAX_COLUMNS, MAX_ROWS};
use crate::recent::Recent;

/// A CSV table: a header and rows of text fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each with one field per column.
    pub rows: Vec<Row>,
}

/// The tables most recently parsed, by their bytes: a stage's table and split, and the
/// previous stage's.
static RECENT: Recent<Vec<u8>, Result<Arc<Table>, TableError>> = Recent::new(4);

/// Forgets the remembered tables.
pub(crate) fn forget() {
    RECENT.clear();
}

/// One row: its fields in one buffer (a table at the limits would otherwise be over a million
/// separate strings). Indexing past the last field gives an empty field.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(csv::StringRecord);

impl Row {
    /// The fields as written, in column order (as many as the row has).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter()
    }
}

impl std::ops::Index<usize> for Row {
    type Output = str;

    fn index(&self, column: usize) -> &str {
        self.0.get(column).unwrap_or_default()
    }
}

/// Why a table could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// Over a limit: the check is unverified.
    Limit(String),
    /// Not a well-formed table: the check fails.
    Malformed(String),
}

impl Table {
    /// Parses CSV bytes (UTF-8, header first), refusing more than the row and column limits.
    pub fn parse(bytes: &[u8]) -> Result<Self, TableError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| TableError::Malformed(format!("not UTF-8 text: {e}")))?;
        // Fields are taken as written: " 7.5" is not a number, as it would not be to most readers.
        let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let columns: Vec<String> = reader
            .headers()
            .map_err(|e| TableError::Malformed(e.to_string()))?
            .iter()
            .map(str::to_owned)
            .collect();
        refuse_repeated_names(&columns)?;
        if columns.len() > MAX_COLUMNS {
            return Err(TableError::Limit(format!(
                "the table has {} columns; checks read at most {MAX_COLUMNS}",
                columns.len()
            )));
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| TableError::Malformed(e.to_string()))?;
            if rows.len() == MAX_ROWS {
                return Err(TableError::Limit(format!(
                    "the table has more than {MAX_ROWS} rows, the most checks read"
                )));
            }
            rows.push(Row(record));
        }
        Ok(Table { columns, rows })
    }

    /// [`Table::parse`], sharing the result with the checks that read the same bytes: the
    /// stages of a definition read one table (and its split) several times, and parsing it
    /// dominates their cost. The most recent tables are remembered, each returned only for
    /// identical bytes.
    pub fn parse_shared(bytes: &[u8]) -> Result<Arc<Self>, TableError> {
        RECENT.answer(
            |cached| cached.as_slice() == bytes,
            || bytes.to_vec(),
            || Table::parse(bytes).map(Arc::new),
        )
    }

    /// The index of a column.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// A header that names a column twice is no table: readers disagree on which of the two a
/// name means (the first, the last, or both merged), so no check can say which one it judged.
/// Two names a reader takes for one (`score` and `score `, or with a look-alike letter: see
/// [`crate::identity`]) are refused the same way.
fn refuse_repeated_names(columns: &[String]) -> Result<(), TableError> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, name) in columns.iter().enumerate() {
        if let Some(first) = seen.insert(crate::identity::canonical(name), i) {
            let what = if columns[first] == *name {
                format!("the header names column {name:?} twice")
            } else {
                format!(
                    "the header names columns {:?} and {name:?}, which a reader takes for one \
                     (they differ only in spacing, case, Unicode form, invisible characters or \
                     look-alike letters)",
                    columns[first]
                )
            };
            return Err(TableError::Malformed(format!(
                "{what} (columns {} and {}); rename one so every column has one name",
                first + 1,
                i + 1
            )));
        }
    }
    Ok(())
}

/// A data dictionary: what each column means and may hold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dictionary {
    /// The column that identifies a row.
    pub primary_key: String,
    /// The column that groups rows (a split keeps groups apart).
    pub group: String,
    /// The outcome column.
    pub outcome: String,
    /// Columns permitted as predictors.
    pub predictors: Vec<String>,
    /// Groups whose rows form the held-out partition.
    pub held_out_groups: Vec<String>,
    /// Validity rules per column.
    pub columns: BTreeMap<String, ColumnRule>,
    /// If set, every group must have at least this many rows.
    #[serde(default)]
    pub min_rows_per_group: Option<usize>,
}

/// What one column may hold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnRule {
    /// `number` or `text`.
    #[serde(rename = "type")]
    pub kind: ColumnType,
    /// Whether every row needs a value.
    #[serde(default)]
    pub required: bool,
    /// Smallest permitted number.
    #[serde(default)]
    pub min: Option<f64>,
    /// Largest permitted number.
    #[serde(default)]
    pub max: Option<f64>,
    /// Permitted values, if restricted.
    #[serde(default)]
    pub allowed: Option<Vec<String>>,
}

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    /// A finite decimal number.
    Number,
    /// Any text.
    Text,
}

/// A field as a finite number.
pub fn number(field: &str) -> Option<f64> {
    field.parse::<f64>().ok().filter(|v| v.is_finite())
}
