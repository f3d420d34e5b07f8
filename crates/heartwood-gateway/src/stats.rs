//! The statistics reference for interfaces (`heartwood stats fit`, later the notebook): a CSV
//! table read within published limits, each needed cell's text handed to heartwood-stats as
//! written (so decimals reach the solver unrounded), and the fit. Interfaces name this module,
//! never heartwood-stats.

use std::io::Read;

pub use heartwood_stats::{
    Coefficient, Family, Fit, MAX_CELLS, MAX_COEFFICIENTS, MAX_LEVELS, MAX_ROWS, Precision,
    StatsError, Status,
};
use heartwood_stats::{Column, Model, Predictor, StdErrors};

/// The largest table read, in bytes.
pub const MAX_TABLE_BYTES: u64 = 4 << 30;
/// The most columns a table may have.
pub const MAX_TABLE_COLUMNS: usize = 4096;

/// Which standard errors to report, by column name for clusters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorsRequest {
    /// Classical.
    Classical,
    /// HC0.
    Hc0,
    /// HC1.
    Hc1,
    /// HC2.
    Hc2,
    /// HC3.
    Hc3,
    /// Cluster-robust (CR1) by the named column.
    Cluster(String),
}

/// A name that is not a kind of standard errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a kind of standard errors; use classical, hc0, hc1, hc2, hc3 or cluster:COLUMN"
)]
pub struct UnknownErrors(pub String);

impl std::str::FromStr for ErrorsRequest {
    type Err = UnknownErrors;

    /// `classical`, `hc0`–`hc3`, or `cluster:COLUMN`.
    fn from_str(text: &str) -> Result<Self, UnknownErrors> {
        Ok(match text {
            "classical" => ErrorsRequest::Classical,
            "hc0" => ErrorsRequest::Hc0,
            "hc1" => ErrorsRequest::Hc1,
            "hc2" => ErrorsRequest::Hc2,
            "hc3" => ErrorsRequest::Hc3,
            other => match other.strip_prefix("cluster:") {
                Some(column) if !column.is_empty() => ErrorsRequest::Cluster(column.to_owned()),
                _ => return Err(UnknownErrors(other.to_owned())),
            },
        })
    }
}

/// A model over a table's columns, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitRequest {
    /// The outcome column.
    pub outcome: String,
    /// Numeric predictors, in the order reported.
    pub predictors: Vec<String>,
    /// Categorical predictors (dummy coded), reported after the numeric ones.
    pub categorical: Vec<String>,
    /// A column whose levels are absorbed as one-way fixed effects.
    pub fixed_effects: Option<String>,
    /// Whether to fit an intercept.
    pub intercept: bool,
    /// The family.
    pub family: Family,
    /// The standard errors.
    pub errors: ErrorsRequest,
}

/// Why a table could not be fitted. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StatsInputError {
    /// The table could not be read.
    #[error("the table could not be read: {0}")]
    Read(#[from] std::io::Error),
    /// Not a well-formed CSV table.
    #[error("the table is not well-formed CSV ({0}); give a UTF-8 CSV file with a header row")]
    Malformed(String),
    /// Over a size limit.
    #[error("the table is larger than {MAX_TABLE_BYTES} bytes; fit a sample of its rows")]
    TooLarge,
    /// No header or no rows.
    #[error("the table is empty; give a CSV file with a header row and at least one data row")]
    Empty,
    /// A column the request names is not in the header.
    #[error("there is no column {name:?}; the table's columns are {available}")]
    MissingColumn {
        /// The name asked for.
        name: String,
        /// The header's names (shortened).
        available: String,
    },
    /// A header naming a column twice.
    #[error("the header names column {0:?} twice; rename one so every column has one name")]
    RepeatedColumn(String),
    /// A cell that is not a number, or is empty.
    #[error("row {row} of column {column:?} is {what}; {advice}")]
    Cell {
        /// The column.
        column: String,
        /// The data row, counting from 1 after the header.
        row: usize,
        /// What the cell is.
        what: String,
        /// What to do.
        advice: &'static str,
    },
    /// Too many rows.
    #[error("the table has more than {MAX_ROWS} rows, the most a fit reads; fit a sample")]
    TooManyRows,
    /// The model itself was refused.
    #[error(transparent)]
    Model(#[from] StatsError),
}

/// What each needed column becomes.
enum Sink {
    Numeric(Column),
    Labels(Vec<String>),
}

/// Reads a CSV table (header first, at most [`MAX_TABLE_BYTES`]) and fits `request`.
pub fn fit_csv(reader: impl Read, request: &FitRequest) -> Result<Fit, StatsInputError> {
    let mut bounded = reader.take(MAX_TABLE_BYTES + 1);
    let mut bytes = Vec::new();
    bounded.read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TABLE_BYTES {
        return Err(StatsInputError::TooLarge);
    }
    let mut csv = csv::ReaderBuilder::new().from_reader(bytes.as_slice());
    let header: Vec<String> = csv
        .headers()
        .map_err(|e| StatsInputError::Malformed(e.to_string()))?
        .iter()
        .map(str::to_owned)
        .collect();
    if header.is_empty() || header.iter().all(String::is_empty) {
        return Err(StatsInputError::Empty);
    }
    if header.len() > MAX_TABLE_COLUMNS {
        return Err(StatsInputError::Malformed(format!(
            "{} columns, over the limit of {MAX_TABLE_COLUMNS}",
            header.len()
        )));
    }
    for (i, name) in header.iter().enumerate() {
        if header[..i].contains(name) {
            return Err(StatsInputError::RepeatedColumn(name.clone()));
        }
    }
    let wanted = wanted_columns(request);
    let mut sinks: Vec<(usize, String, Sink)> = Vec::with_capacity(wanted.len());
    for (name, numeric) in &wanted {
        let at = header.iter().position(|h| h == name).ok_or_else(|| {
            StatsInputError::MissingColumn {
                name: name.clone(),
                available: available(&header),
            }
        })?;
        let sink = if *numeric {
            Sink::Numeric(Column::new())
        } else {
            Sink::Labels(Vec::new())
        };
        sinks.push((at, name.clone(), sink));
    }
    let mut record = csv::StringRecord::new();
    let mut row = 0;
    while csv
        .read_record(&mut record)
        .map_err(|e| StatsInputError::Malformed(e.to_string()))?
    {
        row += 1;
        if row > MAX_ROWS {
            return Err(StatsInputError::TooManyRows);
        }
        for (at, name, sink) in &mut sinks {
            let cell = record.get(*at).unwrap_or("");
            take_cell(sink, name, row, cell)?;
        }
    }
    if row == 0 {
        return Err(StatsInputError::Empty);
    }
    Ok(heartwood_stats::fit(&model(request, sinks))?)
}

/// Every column the request reads, each once, with whether it must be numeric.
fn wanted_columns(request: &FitRequest) -> Vec<(String, bool)> {
    let mut wanted: Vec<(String, bool)> = vec![(request.outcome.clone(), true)];
    let mut add = |name: &String, numeric: bool| {
        if !wanted.iter().any(|(w, n)| w == name && *n == numeric) {
            wanted.push((name.clone(), numeric));
        }
    };
    for p in &request.predictors {
        add(p, true);
    }
    for c in &request.categorical {
        add(c, false);
    }
    if let Some(fe) = &request.fixed_effects {
        add(fe, false);
    }
    if let ErrorsRequest::Cluster(c) = &request.errors {
        add(c, false);
    }
    wanted
}

fn take_cell(sink: &mut Sink, column: &str, row: usize, cell: &str) -> Result<(), StatsInputError> {
    let problem = |what: String, advice| StatsInputError::Cell {
        column: column.to_owned(),
        row,
        what,
        advice,
    };
    match sink {
        Sink::Labels(labels) => {
            if cell.is_empty() {
                return Err(problem(
                    "empty".into(),
                    "give every row a label, or remove the row",
                ));
            }
            labels.push(cell.to_owned());
        }
        Sink::Numeric(values) => {
            if cell.is_empty() {
                return Err(problem(
                    "empty".into(),
                    "fill the value or remove the row (rows with missing values are not dropped silently)",
                ));
            }
            values.push_text(cell).map_err(|e| {
                let shown: String = cell.chars().take(40).collect();
                match e {
                    heartwood_stats::CellError::NotANumber => problem(
                        format!("not a number ({shown:?})"),
                        "give a plain decimal such as 12.5 or -3e-4, without spaces or units",
                    ),
                    heartwood_stats::CellError::OutOfRange => problem(
                        format!("out of range ({shown:?})"),
                        "values must lie within about 1e±300; rescale the column",
                    ),
                }
            })?;
        }
    }
    Ok(())
}

/// The header's names, at most twenty, for a message.
fn available(header: &[String]) -> String {
    let mut shown: Vec<String> = header.iter().take(20).map(|h| format!("{h:?}")).collect();
    if header.len() > 20 {
        shown.push(format!("and {} more", header.len() - 20));
    }
    shown.join(", ")
}

fn model(request: &FitRequest, mut sinks: Vec<(usize, String, Sink)>) -> Model {
    let mut take_numeric = |name: &str| -> Column {
        sinks
            .iter_mut()
            .find_map(|(_, n, sink)| match sink {
                Sink::Numeric(c) if n == name => Some(std::mem::take(c)),
                _ => None,
            })
            .unwrap_or_default()
    };
    let outcome = take_numeric(&request.outcome);
    let numeric: Vec<Predictor> = request
        .predictors
        .iter()
        .map(|name| Predictor::Numeric {
            name: name.clone(),
            column: take_numeric(name),
        })
        .collect();
    let labels = |name: &str| -> Vec<String> {
        sinks
            .iter()
            .find_map(|(_, n, sink)| match sink {
                Sink::Labels(l) if n == name => Some(l.clone()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let mut predictors = numeric;
    for name in &request.categorical {
        predictors.push(Predictor::Categorical {
            name: name.clone(),
            labels: labels(name),
        });
    }
    let errors = match &request.errors {
        ErrorsRequest::Classical => StdErrors::Classical,
        ErrorsRequest::Hc0 => StdErrors::Hc0,
        ErrorsRequest::Hc1 => StdErrors::Hc1,
        ErrorsRequest::Hc2 => StdErrors::Hc2,
        ErrorsRequest::Hc3 => StdErrors::Hc3,
        ErrorsRequest::Cluster(column) => StdErrors::Cluster(labels(column)),
    };
    Model {
        outcome,
        predictors,
        intercept: request.intercept,
        fixed_effects: request.fixed_effects.as_deref().map(labels),
        family: request.family,
        errors,
    }
}
