//! `heartwood.stats.fit`: the statistics reference the workflow checks and `heartwood stats fit`
//! use, on a CSV table named by path or given as its text (a DataFrame's `to_csv()`), returned
//! as the same object `stats fit --json` prints.

use pyo3::prelude::*;

use heartwood_gateway::stats::{ErrorsRequest, Family, FitRequest, fit_csv};

use crate::{convert, failed};

/// Fits a linear (gaussian) or logistic (binomial) model; `table` is a path or CSV text.
#[pyfunction]
#[pyo3(signature = (table, outcome, predictors, categorical=None, fixed_effects=None, intercept=true, se="classical", family="gaussian", is_text=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _stats_fit(
    py: Python<'_>,
    table: String,
    outcome: String,
    predictors: Vec<String>,
    categorical: Option<Vec<String>>,
    fixed_effects: Option<String>,
    intercept: bool,
    se: &str,
    family: &str,
    is_text: bool,
) -> PyResult<Py<PyAny>> {
    let errors: ErrorsRequest = se.parse().map_err(failed)?;
    let family = match family {
        "gaussian" => Family::Gaussian,
        "binomial" => Family::Binomial,
        other => {
            return Err(failed(format!(
                "family {other:?} is not known; use \"gaussian\" or \"binomial\""
            )));
        }
    };
    let request = FitRequest {
        outcome,
        predictors,
        categorical: categorical.unwrap_or_default(),
        fixed_effects,
        intercept,
        family,
        errors,
    };
    let fit = py.detach(move || {
        if is_text {
            fit_csv(std::io::Cursor::new(table.into_bytes()), &request).map_err(failed)
        } else {
            let file = std::fs::File::open(&table).map_err(|e| {
                failed(format!(
                    "cannot open {table}: {e}; give the path of a CSV file"
                ))
            })?;
            fit_csv(std::io::BufReader::new(file), &request).map_err(failed)
        }
    })?;
    convert::to_python(py, &fit)
}
