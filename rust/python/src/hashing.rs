//! `_core.hash_embed`.

use mindcore_kernels::hashing::{hash_embed as embed, HashEmbedConfig};
use numpy::{IntoPyArray, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::convert::kernel_err;

/// float32 `(len(texts), dim)` feature-hashing embeddings; see `mindcore.kernels.hash_embed`.
#[pyfunction]
#[pyo3(signature = (texts, dim, ngram_min, ngram_max, seed))]
fn hash_embed<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    dim: usize,
    ngram_min: usize,
    ngram_max: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let cfg = HashEmbedConfig { dim, ngram_min, ngram_max, seed };
    let flat = py.detach(|| embed(&texts, &cfg)).map_err(kernel_err)?;
    flat.into_pyarray(py).reshape([texts.len(), dim])
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hash_embed, m)?)?;
    Ok(())
}
