//! `_core._grouped_recall`: validates the numpy inputs, runs `scoring::grouped::grouped_recall`
//! without the GIL and returns `(indices, scores, similarities)`, each `(Q, k)`.

use crate::convert::{invalid, kernel_err, matrix, vector};
use mindcore_kernels::scoring::grouped::{grouped_recall, GroupedInput, RecallParams, Texts};
use mindcore_kernels::scoring::Rows;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;

type Grouped<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<f32>>);

/// A text column given as Arrow's `(offsets int64, data uint8)` buffers.
type TextBuffers<'py> = (PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, u8>);

fn texts<'py>(obj: Option<&Bound<'py, PyAny>>, arg: &str) -> PyResult<Option<TextBuffers<'py>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let (offsets, data): (Bound<'py, PyAny>, Bound<'py, PyAny>) = obj
        .extract()
        .map_err(|_| invalid(format!("{arg}: expected a tuple (offsets int64, data uint8)")))?;
    Ok(Some((
        vector::<i64>(&offsets, &format!("{arg} offsets"), "int64")?,
        vector::<u8>(&data, &format!("{arg} data"), "uint8")?,
    )))
}

fn as_texts<'a>(t: &'a Option<TextBuffers<'_>>, arg: &str) -> PyResult<Option<Texts<'a>>> {
    t.as_ref()
        .map(|(o, d)| Ok(Texts::new(slice(o.as_slice(), arg)?, slice(d.as_slice(), arg)?)))
        .transpose()
}

fn slice<'a, T>(r: Result<&'a [T], numpy::AsSliceError>, arg: &str) -> PyResult<&'a [T]> {
    r.map_err(|e| invalid(format!("{arg}: {e}")))
}

fn shaped<'py, T: numpy::Element>(py: Python<'py>, rows: usize, cols: usize, v: Vec<T>) -> PyResult<Bound<'py, PyArray2<T>>> {
    let arr = Array2::from_shape_vec((rows, cols), v).map_err(|e| invalid(e.to_string()))?;
    Ok(arr.into_pyarray(py))
}

#[pyfunction]
#[pyo3(signature = (queries, query_group, matrix, group_offsets, timestamps, importance, *, k, w_sim, w_rec,
                    w_importance, w_lexical, half_life_ms, now_ms, lexical_floor=2.0, k1=0.9, b=0.4,
                    query_texts=None, terms=None, has_vector=None, eligible=None))]
#[allow(clippy::too_many_arguments)]
fn _grouped_recall<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    query_group: &Bound<'py, PyAny>,
    matrix: &Bound<'py, PyAny>,
    group_offsets: &Bound<'py, PyAny>,
    timestamps: &Bound<'py, PyAny>,
    importance: &Bound<'py, PyAny>,
    k: i64,
    w_sim: f64,
    w_rec: f64,
    w_importance: f64,
    w_lexical: f64,
    half_life_ms: f64,
    now_ms: i64,
    lexical_floor: f64,
    k1: f64,
    b: f64,
    query_texts: Option<&Bound<'py, PyAny>>,
    terms: Option<&Bound<'py, PyAny>>,
    has_vector: Option<&Bound<'py, PyAny>>,
    eligible: Option<&Bound<'py, PyAny>>,
) -> PyResult<Grouped<'py>> {
    let k = usize::try_from(k).map_err(|_| invalid(format!("k: must be >= 1, got {k}")))?;
    let q = self::matrix::<f32>(queries, "queries", "float32")?;
    let m = self::matrix::<f32>(matrix, "matrix", "float32")?;
    let (nq, dq, n, dm) = (q.shape()[0], q.shape()[1], m.shape()[0], m.shape()[1]);
    let qg = vector::<i64>(query_group, "query_group", "int64")?;
    let go = vector::<i64>(group_offsets, "group_offsets", "int64")?;
    let ts = vector::<i64>(timestamps, "timestamps", "int64")?;
    let imp = vector::<f32>(importance, "importance", "float32")?;
    let hv = match has_vector {
        Some(o) if !o.is_none() => Some(vector::<bool>(o, "has_vector", "bool_")?),
        _ => None,
    };
    let el = match eligible {
        Some(o) if !o.is_none() => Some(vector::<bool>(o, "eligible", "bool_")?),
        _ => None,
    };
    let qt = texts(query_texts, "query_texts")?;
    let tm = texts(terms, "terms")?;
    let input = GroupedInput {
        queries: Rows::new(slice(q.as_slice(), "queries")?, nq, dq),
        query_group: slice(qg.as_slice(), "query_group")?,
        query_texts: as_texts(&qt, "query_texts")?,
        matrix: Rows::new(slice(m.as_slice(), "matrix")?, n, dm),
        group_offsets: slice(go.as_slice(), "group_offsets")?,
        timestamps: slice(ts.as_slice(), "timestamps")?,
        importance: slice(imp.as_slice(), "importance")?,
        terms: as_texts(&tm, "terms")?,
        has_vector: hv.as_ref().map(|a| slice(a.as_slice(), "has_vector")).transpose()?,
        eligible: el.as_ref().map(|a| slice(a.as_slice(), "eligible")).transpose()?,
    };
    let params = RecallParams {
        k,
        w_sim,
        w_rec,
        w_importance,
        w_lexical,
        half_life_ms,
        now_ms,
        lexical_floor,
        k1,
        b,
    };
    let top = py.detach(|| grouped_recall(&input, &params)).map_err(kernel_err)?;
    let (rows, cols) = (top.nq, top.width);
    Ok((
        shaped(py, rows, cols, top.indices)?,
        shaped(py, rows, cols, top.scores)?,
        shaped(py, rows, cols, top.similarities)?,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_grouped_recall, m)?)?;
    Ok(())
}
