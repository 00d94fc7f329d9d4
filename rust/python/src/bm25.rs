//! `_core.BM25Index`, `_core.bm25_tokenize` and `_core.ENGLISH_STOP_WORDS`.

use std::sync::RwLock;

use mindcore_kernels::analyzer::ENGLISH_STOP_WORDS;
use mindcore_kernels::bm25::{Analyzer, Bm25Index, StopWords};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyFrozenSet, PyString};

use crate::convert::{invalid, kernel_err, str_items, vector};

/// `(ids, scores)` as numpy arrays.
type TopK<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f32>>);

/// `None`, the name of a built-in list (`"english"`), or a collection of words.
fn stop_words(obj: Option<&Bound<'_, PyAny>>) -> PyResult<StopWords> {
    match obj {
        None => Ok(StopWords::None),
        Some(o) if o.is_none() => Ok(StopWords::None),
        Some(o) if o.is_instance_of::<PyString>() => match o.extract::<PyBackedStr>()?.as_ref() {
            "english" => Ok(StopWords::English),
            other => Err(invalid(format!(
                "stop_words: unknown list '{other}' (pass \"english\" or a collection of words)"
            ))),
        },
        Some(o) => Ok(StopWords::custom(str_items(o, "stop_words")?.iter().map(|s| s.to_string()))),
    }
}

fn analyzer(stem: bool, stop: Option<&Bound<'_, PyAny>>) -> PyResult<Analyzer> {
    Ok(Analyzer { stop_words: stop_words(stop)?, stem })
}

/// The index behind a lock so queries (shared) and `add` (exclusive) can run with the GIL
/// released from several Python threads at once.
#[pyclass(name = "BM25Index", module = "mindcore._core", frozen)]
pub struct PyBm25Index {
    inner: RwLock<Bm25Index>,
}

impl PyBm25Index {
    fn read<T>(&self, py: Python<'_>, f: impl FnOnce(&Bm25Index) -> T + Send) -> T
    where
        T: Send,
    {
        py.detach(|| f(&self.inner.read().unwrap_or_else(|e| e.into_inner())))
    }

    fn write<T>(&self, py: Python<'_>, f: impl FnOnce(&mut Bm25Index) -> T + Send) -> T
    where
        T: Send,
    {
        py.detach(|| f(&mut self.inner.write().unwrap_or_else(|e| e.into_inner())))
    }
}

#[pymethods]
impl PyBm25Index {
    #[new]
    #[pyo3(signature = (k1, b, stem = false, stop_words = None))]
    fn new(k1: f64, b: f64, stem: bool, stop_words: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let index = Bm25Index::with_analyzer(k1, b, analyzer(stem, stop_words)?).map_err(kernel_err)?;
        Ok(Self { inner: RwLock::new(index) })
    }

    #[getter]
    fn k1(&self, py: Python<'_>) -> f64 {
        self.read(py, Bm25Index::k1)
    }

    #[getter]
    fn b(&self, py: Python<'_>) -> f64 {
        self.read(py, Bm25Index::b)
    }

    #[getter]
    fn stem(&self, py: Python<'_>) -> bool {
        self.read(py, |idx| idx.analyzer().stem)
    }

    /// The stop words, sorted (empty without stop-word removal).
    #[getter]
    fn stop_words(&self, py: Python<'_>) -> Vec<String> {
        self.read(py, |idx| idx.analyzer().stop_words.words())
    }

    #[getter]
    fn vocabulary_size(&self, py: Python<'_>) -> usize {
        self.read(py, Bm25Index::vocabulary_size)
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.read(py, Bm25Index::len)
    }

    /// Appends `documents` (a list of str); ids continue from `len(self)`. With `analyzed` the
    /// documents are this index's terms already (only the tokenizer runs on them).
    #[pyo3(signature = (documents, analyzed = false))]
    fn add(&self, py: Python<'_>, documents: Vec<PyBackedStr>, analyzed: bool) -> PyResult<()> {
        self.write(py, |idx| if analyzed { idx.add_analyzed(&documents) } else { idx.add(&documents) })
            .map_err(kernel_err)
    }

    /// Removes the documents `ids` (int64 1-D array); later ids move down.
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<()> {
        let arr = vector::<i64>(ids, "ids", "int64")?;
        let ids = arr
            .as_slice()
            .map_err(|e| invalid(format!("ids: {e}")))?
            .iter()
            .map(|&d| u32::try_from(d).map_err(|_| invalid(format!("ids: {d} is not a document id"))))
            .collect::<PyResult<Vec<u32>>>()?;
        self.write(py, |idx| idx.remove(&ids)).map_err(kernel_err)
    }

    /// Raw BM25 score of every document, float32 `(len(self),)`.
    fn scores<'py>(&self, py: Python<'py>, query: &str) -> Bound<'py, PyArray1<f32>> {
        self.read(py, |idx| idx.scores(query)).into_pyarray(py)
    }

    /// `(ids int64, scores float32)` of the best `k` documents with a score > 0.
    fn top_k<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        k: usize,
        normalize: bool,
    ) -> PyResult<TopK<'py>> {
        let (ids, scores) = self.read(py, |idx| idx.top_k(query, k, normalize)).map_err(kernel_err)?;
        let ids: Vec<i64> = ids.into_iter().map(i64::from).collect();
        Ok((ids.into_pyarray(py), scores.into_pyarray(py)))
    }
}

/// The terms BM25 indexes for `text`: lower-cased alphanumeric runs, minus `stop_words`, stemmed
/// with `stem`.
#[pyfunction]
#[pyo3(signature = (text, stem = false, stop_words = None))]
fn bm25_tokenize(py: Python<'_>, text: &str, stem: bool, stop_words: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let analyzer = analyzer(stem, stop_words)?;
    Ok(py.detach(|| analyzer.terms(text)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBm25Index>()?;
    m.add_function(wrap_pyfunction!(bm25_tokenize, m)?)?;
    m.add("ENGLISH_STOP_WORDS", PyFrozenSet::new(m.py(), ENGLISH_STOP_WORDS)?)?;
    Ok(())
}
