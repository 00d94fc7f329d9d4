//! `_core._hybrid_topk`: validates the numpy inputs, runs `scoring::hybrid_topk` without the GIL
//! and returns `(indices, scores, similarities)` shaped like the query (1-D or 2-D).

use crate::convert::{invalid, kernel_err, matrix, one_or_many_rows, vector};
use mindcore_kernels::scoring::shadow::{self, Shadow};
use mindcore_kernels::scoring::{self, Metric, Norms, Params, Rows};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{IntoPyArray, PyArrayDyn, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;

type TopKArrays<'py> = (
    Bound<'py, PyArrayDyn<i64>>,
    Bound<'py, PyArrayDyn<f32>>,
    Bound<'py, PyArrayDyn<f32>>,
);

fn optional<'py, T: numpy::Element>(
    obj: Option<&Bound<'py, PyAny>>,
    arg: &str,
    dtype: &str,
) -> PyResult<Option<PyReadonlyArray1<'py, T>>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(vector::<T>(o, arg, dtype)?)),
        _ => Ok(None),
    }
}

fn slice<'a, T>(r: Result<&'a [T], numpy::AsSliceError>, arg: &str) -> PyResult<&'a [T]> {
    r.map_err(|e| invalid(format!("{arg}: {e}")))
}

fn shaped<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: &[usize],
    v: Vec<T>,
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let arr = ArrayD::from_shape_vec(IxDyn(shape), v).map_err(|e| invalid(e.to_string()))?;
    Ok(arr.into_pyarray(py))
}

#[pyfunction]
#[pyo3(signature = (query, matrix, *, k, metric="cosine", w_sim=1.0, w_rec=0.0, w_extra=0.0, timestamps=None,
                    now_ms=0, half_life_ms=None, tau_ms=None, extra=None, mask=None, min_score=None,
                    inv_norms=None, normalized=false, shadow=None))]
#[allow(clippy::too_many_arguments)]
fn _hybrid_topk<'py>(
    py: Python<'py>,
    query: &Bound<'py, PyAny>,
    matrix: &Bound<'py, PyAny>,
    k: i64,
    metric: &str,
    w_sim: f64,
    w_rec: f64,
    w_extra: f64,
    timestamps: Option<&Bound<'py, PyAny>>,
    now_ms: i64,
    half_life_ms: Option<f64>,
    tau_ms: Option<f64>,
    extra: Option<&Bound<'py, PyAny>>,
    mask: Option<&Bound<'py, PyAny>>,
    min_score: Option<f64>,
    inv_norms: Option<&Bound<'py, PyAny>>,
    normalized: bool,
    shadow: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
) -> PyResult<TopKArrays<'py>> {
    let k = usize::try_from(k).map_err(|_| invalid(format!("k: must be >= 1, got {k}")))?;
    let metric = Metric::parse(metric).map_err(kernel_err)?;
    let (queries, nq, dq, one) = one_or_many_rows::<f32>(query, "query", "float32")?;
    let m = self::matrix::<f32>(matrix, "matrix", "float32")?;
    let (n, dm) = (m.shape()[0], m.shape()[1]);
    let ts = optional::<i64>(timestamps, "timestamps", "int64")?;
    let ex = optional::<f32>(extra, "extra", "float32")?;
    let mk = optional::<bool>(mask, "mask", "bool_")?;
    let inv = optional::<f32>(inv_norms, "inv_norms", "float32")?;
    let m_data = slice(m.as_slice(), "matrix")?;
    let ts = ts
        .as_ref()
        .map(|a| slice(a.as_slice(), "timestamps"))
        .transpose()?;
    let ex = ex
        .as_ref()
        .map(|a| slice(a.as_slice(), "extra"))
        .transpose()?;
    let mk = mk
        .as_ref()
        .map(|a| slice(a.as_slice(), "mask"))
        .transpose()?;
    let inv = inv
        .as_ref()
        .map(|a| slice(a.as_slice(), "inv_norms"))
        .transpose()?;
    let norms = match (inv, normalized) {
        (Some(_), true) => {
            return Err(invalid(
                "inv_norms: give inv_norms or normalized=True, not both".to_string(),
            ))
        }
        (Some(inv), false) => Norms::Inverse(inv),
        (None, true) => Norms::Unit,
        (None, false) => Norms::Compute,
    };
    let params = Params {
        k,
        metric,
        w_sim,
        w_rec,
        w_extra,
        timestamps: ts,
        now_ms,
        half_life_ms,
        tau_ms,
        extra: ex,
        mask: mk,
        min_score,
        norms,
    };
    let sh = match &shadow {
        Some((codes, meta)) => Some((
            self::matrix::<i8>(codes, "shadow.codes", "int8")?,
            self::matrix::<f32>(meta, "shadow.meta", "float32")?,
        )),
        None => None,
    };
    let sh = match &sh {
        Some((codes, meta)) => Some(Shadow {
            codes: slice(codes.as_slice(), "shadow.codes")?,
            meta: slice(meta.as_slice(), "shadow.meta")?,
        }),
        None => None,
    };
    let top = py
        .detach(|| {
            let (qs, rows) = (Rows::new(&queries, nq, dq), Rows::new(m_data, n, dm));
            match sh {
                Some(sh) => scoring::hybrid_topk_shadowed(qs, rows, sh, &params),
                None => scoring::hybrid_topk(qs, rows, &params),
            }
        })
        .map_err(kernel_err)?;
    if one {
        let len = top.lens[0];
        let (mut i, mut s, mut c) = (top.indices, top.scores, top.similarities);
        i.truncate(len);
        s.truncate(len);
        c.truncate(len);
        Ok((
            shaped(py, &[len], i)?,
            shaped(py, &[len], s)?,
            shaped(py, &[len], c)?,
        ))
    } else {
        let shape = [top.nq, top.width];
        Ok((
            shaped(py, &shape, top.indices)?,
            shaped(py, &shape, top.scores)?,
            shaped(py, &shape, top.similarities)?,
        ))
    }
}

/// The int8 shadow of a float32 matrix: `(codes (n, d) int8, meta (n, 3) float32)`.
#[pyfunction]
fn _row_shadow<'py>(
    py: Python<'py>,
    matrix: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyArrayDyn<i8>>, Bound<'py, PyArrayDyn<f32>>)> {
    let m = self::matrix::<f32>(matrix, "matrix", "float32")?;
    let (n, d) = (m.shape()[0], m.shape()[1]);
    let data = slice(m.as_slice(), "matrix")?;
    let buf = py
        .detach(|| shadow::quantize(data, n, d))
        .map_err(kernel_err)?;
    Ok((
        shaped(py, &[n, d], buf.codes)?,
        shaped(py, &[n, shadow::META], buf.meta)?,
    ))
}

/// The instruction-set path the scoring kernels take in this process.
#[pyfunction]
fn _simd_path() -> &'static str {
    scoring::simd_path()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_hybrid_topk, m)?)?;
    m.add_function(wrap_pyfunction!(_simd_path, m)?)?;
    m.add_function(wrap_pyfunction!(_row_shadow, m)?)?;
    Ok(())
}
