//! Rust values to Python values, through their JSON form: the wire types are already
//! serializable, and `json.loads` builds plain dicts and lists a notebook user can inspect.

use pyo3::prelude::*;
use serde::Serialize;

/// `value` as a Python object (dicts, lists, strings, numbers, `None`).
pub(crate) fn to_python<T: Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value).map_err(crate::failed)?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}
