//! `_core.BM25Index` and `_core.bm25_tokenize`.

use std::sync::RwLock;

use mindcore_kernels::bm25::{tokenize, Bm25Index};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::convert::kernel_err;

/// `(ids, scores)` as numpy arrays.
type TopK<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f32>>);

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
}

#[pymethods]
impl PyBm25Index {
    #[new]
    #[pyo3(signature = (k1, b))]
    fn new(k1: f64, b: f64) -> PyResult<Self> {
        Ok(Self { inner: RwLock::new(Bm25Index::new(k1, b).map_err(kernel_err)?) })
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
    fn vocabulary_size(&self, py: Python<'_>) -> usize {
        self.read(py, Bm25Index::vocabulary_size)
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.read(py, Bm25Index::len)
    }

    /// Appends `documents` (a list of str); ids continue from `len(self)`.
    fn add(&self, py: Python<'_>, documents: Vec<PyBackedStr>) -> PyResult<()> {
        py.detach(|| self.inner.write().unwrap_or_else(|e| e.into_inner()).add(&documents))
            .map_err(kernel_err)
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

/// Lower-cased alphanumeric runs of `text`: the tokens BM25 indexes.
#[pyfunction]
fn bm25_tokenize(py: Python<'_>, text: &str) -> Vec<String> {
    py.detach(|| tokenize(text))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBm25Index>()?;
    m.add_function(wrap_pyfunction!(bm25_tokenize, m)?)?;
    Ok(())
}
