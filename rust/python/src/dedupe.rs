//! `_core._near_duplicates` and `_core._dedupe_within` over C-contiguous float32 matrices,
//! run without the GIL.

use crate::convert::{invalid, kernel_err, matrix};
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_near_duplicates, m)?)?;
    m.add_function(wrap_pyfunction!(_dedupe_within, m)?)?;
    Ok(())
}
