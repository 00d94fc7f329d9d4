//! `_core._near_duplicates` and `_core._dedupe_within` over C-contiguous float32 matrices,
//! run without the GIL.

use crate::convert::{invalid, kernel_err, matrix, vector};
use mindcore_kernels::dedupe;
use mindcore_kernels::scoring::{Metric, Rows};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

type NearDuplicates<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f32>>);

fn rows<'a>(a: &'a PyReadonlyArray2<'_, f32>, arg: &str) -> PyResult<Rows<'a>> {
    let data = a.as_slice().map_err(|e| invalid(format!("{arg}: {e}")))?;
    Ok(Rows::new(data, a.shape()[0], a.shape()[1]))
}

#[pyfunction]
#[pyo3(signature = (new, existing, *, threshold, metric="cosine"))]
fn _near_duplicates<'py>(
    py: Python<'py>,
    new: &Bound<'py, PyAny>,
    existing: &Bound<'py, PyAny>,
    threshold: f64,
    metric: &str,
) -> PyResult<NearDuplicates<'py>> {
    let metric = Metric::parse(metric).map_err(kernel_err)?;
    let a = matrix::<f32>(new, "new", "float32")?;
    let b = matrix::<f32>(existing, "existing", "float32")?;
    let (ra, rb) = (rows(&a, "new")?, rows(&b, "existing")?);
    let (idx, sims) = py.detach(|| dedupe::near_duplicates(ra, rb, threshold, metric)).map_err(kernel_err)?;
    Ok((idx.into_pyarray(py), sims.into_pyarray(py)))
}

#[pyfunction]
#[pyo3(signature = (vectors, *, threshold, metric="cosine"))]
fn _dedupe_within<'py>(
    py: Python<'py>,
    vectors: &Bound<'py, PyAny>,
    threshold: f64,
    metric: &str,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let metric = Metric::parse(metric).map_err(kernel_err)?;
    let v = matrix::<f32>(vectors, "vectors", "float32")?;
    let r = rows(&v, "vectors")?;
    let keep = py.detach(|| dedupe::dedupe_within(r, threshold, metric)).map_err(kernel_err)?;
    Ok(keep.into_pyarray(py))
}

type RowNorms<'py> = (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>);

#[pyfunction]
#[pyo3(signature = (existing, *, head))]
fn _row_norms<'py>(py: Python<'py>, existing: &Bound<'py, PyAny>, head: usize) -> PyResult<RowNorms<'py>> {
    let b = matrix::<f32>(existing, "existing", "float32")?;
    let rb = rows(&b, "existing")?;
    let (inv, tail) = py.detach(|| dedupe::row_norms(rb, head)).map_err(kernel_err)?;
    Ok((inv.into_pyarray(py), tail.into_pyarray(py)))
}

#[pyfunction]
#[pyo3(signature = (new, existing, inv_norms, tail_norms, *, head, threshold))]
#[allow(clippy::too_many_arguments)]
fn _near_duplicates_pruned<'py>(
    py: Python<'py>,
    new: &Bound<'py, PyAny>,
    existing: &Bound<'py, PyAny>,
    inv_norms: &Bound<'py, PyAny>,
    tail_norms: &Bound<'py, PyAny>,
    head: usize,
    threshold: f64,
) -> PyResult<NearDuplicates<'py>> {
    let a = matrix::<f32>(new, "new", "float32")?;
    let b = matrix::<f32>(existing, "existing", "float32")?;
    let inv = vector::<f32>(inv_norms, "inv_norms", "float32")?;
    let tail = vector::<f32>(tail_norms, "tail_norms", "float32")?;
    let (ra, rb) = (rows(&a, "new")?, rows(&b, "existing")?);
    let inv = inv.as_slice().map_err(|e| invalid(format!("inv_norms: {e}")))?;
    let tail = tail.as_slice().map_err(|e| invalid(format!("tail_norms: {e}")))?;
    let (idx, sims) = py
        .detach(|| dedupe::near_duplicates_pruned(ra, rb, inv, tail, head, threshold))
        .map_err(kernel_err)?;
    Ok((idx.into_pyarray(py), sims.into_pyarray(py)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_row_norms, m)?)?;
    m.add_function(wrap_pyfunction!(_near_duplicates_pruned, m)?)?;
    m.add_function(wrap_pyfunction!(_near_duplicates, m)?)?;
    m.add_function(wrap_pyfunction!(_dedupe_within, m)?)?;
    Ok(())
}
