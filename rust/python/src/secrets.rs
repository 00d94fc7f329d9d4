//! `_core.SecretScanner` and `_core.secret_builtin_rules`.

use std::sync::Arc;

use mindcore_kernels::secrets::{DecodeLimits, Finding, Offsets, Scanner, Selection, BUILTIN};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyString;

use crate::convert::{invalid, kernel_err, wrong_type};

/// `texts` (any iterable of str, not a str itself) as borrowed UTF-8, with errors that name
/// the offending item. Lone surrogates raise `UnicodeEncodeError` (the wrapper retries).
fn str_items(texts: &Bound<'_, PyAny>) -> PyResult<Vec<PyBackedStr>> {
    if texts.is_instance_of::<PyString>() {
        return Err(wrong_type(
            "texts: expected a sequence of str, got str (wrap it in a list)",
        ));
    }
    let mut out = Vec::with_capacity(texts.len().unwrap_or(0));
    for (i, item) in texts.try_iter()?.enumerate() {
        let item = item?;
        let s = item.cast::<PyString>().map_err(|_| {
            wrong_type(format!(
                "texts[{i}]: expected str, got {}",
                item.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_else(|_| "?".into())
            ))
        })?;
        out.push(PyBackedStr::try_from(s.clone())?);
    }
    Ok(out)
}

/// A compiled rule set; findings cross as `(rule_id, start, end)` tuples with `str` offsets.
#[pyclass(name = "SecretScanner", module = "mindcore._core", frozen)]
pub struct PySecretScanner {
    inner: Arc<Scanner>,
    ids: Vec<Py<PyString>>,
}

/// One finding as Python sees it: `(rule_id, start, end)`.
type PyFinding = (Py<PyString>, usize, usize);

impl PySecretScanner {
    fn tuples(&self, py: Python<'_>, found: &[Finding]) -> Vec<PyFinding> {
        found
            .iter()
            .map(|f| (self.ids[f.rule].clone_ref(py), f.start, f.end))
            .collect()
    }
}

#[pymethods]
impl PySecretScanner {
    /// `rules` are `(id, pattern)` pairs appended after the built-in rules: those on by default
    /// (when `builtin`), plus the ids in `enable`, minus those in `disable`.
    #[new]
    #[pyo3(signature = (rules, builtin, enable = Vec::new(), disable = Vec::new()))]
    fn new(
        py: Python<'_>,
        rules: Vec<(String, String)>,
        builtin: bool,
        enable: Vec<String>,
        disable: Vec<String>,
    ) -> PyResult<Self> {
        let selection = Selection {
            defaults: builtin,
            enable,
            disable,
        };
        let inner = py
            .detach(|| Scanner::with_selection(&rules, &selection))
            .map_err(kernel_err)?;
        let ids = inner.rule_ids().map(|id| PyString::intern(py, id).unbind()).collect();
        Ok(Self {
            inner: Arc::new(inner),
            ids,
        })
    }

    #[getter]
    fn rule_ids(&self, py: Python<'_>) -> Vec<Py<PyString>> {
        self.ids.iter().map(|s| s.clone_ref(py)).collect()
    }

    fn scan(&self, py: Python<'_>, text: PyBackedStr) -> Vec<PyFinding> {
        let found = py.detach(|| self.inner.scan(&text, Offsets::Chars));
        self.tuples(py, &found)
    }

    fn scan_batch(&self, py: Python<'_>, texts: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<PyFinding>>> {
        let texts = str_items(texts)?;
        let found = py.detach(|| self.inner.scan_batch(&texts, Offsets::Chars));
        Ok(found.iter().map(|f| self.tuples(py, f)).collect())
    }

    fn contains(&self, py: Python<'_>, text: PyBackedStr) -> bool {
        py.detach(|| self.inner.contains(&text))
    }

    fn contains_batch(&self, py: Python<'_>, texts: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let texts = str_items(texts)?;
        Ok(py.detach(|| self.inner.contains_batch(&texts)))
    }

    /// `contains` of each text or of one of its decoded forms (JSON string escapes over its
    /// first `max_chars` characters, then at most `max_runs` percent-encoded and base64 runs),
    /// in parallel: what `SecretPolicy` refuses.
    fn contains_batch_decoded(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        max_chars: usize,
        max_runs: usize,
    ) -> PyResult<Vec<bool>> {
        let texts = str_items(texts)?;
        let limits = DecodeLimits { max_chars, max_runs };
        Ok(py.detach(|| self.inner.contains_decoded_batch(&texts, limits)))
    }

    /// The index of the first of `texts` (JSON texts) holding a string (an object key or a
    /// value) that `contains_batch_decoded` flags, or a `\u` escape of a lone surrogate; `None`
    /// when there is none. Each distinct string is scanned once, in parallel.
    fn first_flagged_json(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        max_chars: usize,
        max_runs: usize,
    ) -> PyResult<Option<usize>> {
        let texts = str_items(texts)?;
        let limits = DecodeLimits { max_chars, max_runs };
        py.detach(|| self.inner.first_flagged_json(&texts, limits))
            .map_err(|(i, at)| invalid(format!("texts[{i}]: not a JSON text (stopped at byte {at})")))
    }

    fn redact(&self, py: Python<'_>, text: PyBackedStr, placeholder: PyBackedStr) -> String {
        py.detach(|| self.inner.redact(&text, &placeholder))
    }

    fn redact_batch(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        placeholder: PyBackedStr,
    ) -> PyResult<Vec<String>> {
        let texts = str_items(texts)?;
        Ok(py.detach(|| self.inner.redact_batch(&texts, &placeholder)))
    }
}

/// One built-in rule as Python sees it.
type PyBuiltinRule = (&'static str, &'static str, &'static str, &'static str, u8, u8, &'static str, bool);

/// The built-in rules as `(id, pattern, description, kind, min_classes, min_distinct, category,
/// on_by_default)`, in scan order: those on by default, or all of them with `include_off` (for
/// documentation and for the Python reference implementation in the tests).
#[pyfunction]
#[pyo3(signature = (include_off = false))]
fn secret_builtin_rules(include_off: bool) -> Vec<PyBuiltinRule> {
    BUILTIN
        .iter()
        .filter(|r| include_off || r.on_by_default)
        .map(|r| {
            (
                r.id,
                r.pattern,
                r.description,
                r.check.kind.name(),
                r.check.min_classes,
                r.check.min_distinct,
                r.category.name(),
                r.on_by_default,
            )
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySecretScanner>()?;
    m.add_function(wrap_pyfunction!(secret_builtin_rules, m)?)?;
    Ok(())
}
