//! Input validation shared by every binding: one place decides what a valid array is and
//! how a kernel error reads in Python.
//!
//! Every input error is raised as `mindcore.errors.KernelError` (a `ValueError`) or its
//! subclass `mindcore.errors.KernelTypeError` (also a `TypeError`), under `mindcore.MindcoreError`,
//! so callers can catch mindcore's errors once and code that caught the builtins still does.

use mindcore_kernels::KernelError;
use numpy::{Element, PyArrayDescrMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// The Python classes, imported from `mindcore.errors` the first time one is raised.
mod py {
    pyo3::import_exception!(mindcore.errors, KernelError);
    pyo3::import_exception!(mindcore.errors, KernelTypeError);
}

/// A value of the right type that the kernel cannot take: `KernelError("arg: reason")`.
pub fn invalid(message: impl Into<String>) -> PyErr {
    py::KernelError::new_err(message.into())
}

/// A value of the wrong type: `KernelTypeError("arg: expected ..., got ...")`.
pub fn wrong_type(message: impl Into<String>) -> PyErr {
    py::KernelTypeError::new_err(message.into())
}

/// `mindcore_kernels::KernelError` -> `mindcore.errors.KernelError("arg: reason")`.
pub fn kernel_err(e: KernelError) -> PyErr {
    invalid(e.to_string())
}

fn untyped<'a, 'py>(obj: &'a Bound<'py, PyAny>, arg: &str) -> PyResult<&'a Bound<'py, PyUntypedArray>> {
    obj.cast::<PyUntypedArray>().map_err(|_| {
        wrong_type(format!(
            "{arg}: expected a numpy.ndarray, got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
        ))
    })
}

fn check<T: Element>(arr: &Bound<'_, PyUntypedArray>, arg: &str, ndim: usize, dtype: &str) -> PyResult<()> {
    let py = arr.py();
    if !arr.dtype().is_equiv_to(&numpy::dtype::<T>(py)) {
        return Err(wrong_type(format!(
            "{arg}: expected dtype {dtype}, got {} (convert with np.asarray(x, dtype=np.{dtype}))",
            arr.dtype()
        )));
    }
    if arr.ndim() != ndim {
        return Err(invalid(format!(
            "{arg}: expected a {ndim}-D array, got shape {:?}",
            arr.shape()
        )));
    }
    if !arr.is_c_contiguous() {
        return Err(invalid(format!(
            "{arg}: array must be C-contiguous (use np.ascontiguousarray)"
        )));
    }
    Ok(())
}

/// A C-contiguous 2-D array of `T`, borrowed without copying.
pub fn matrix<'py, T: Element>(obj: &Bound<'py, PyAny>, arg: &str, dtype: &str) -> PyResult<PyReadonlyArray2<'py, T>> {
    let arr = untyped(obj, arg)?;
    check::<T>(arr, arg, 2, dtype)?;
    obj.extract::<PyReadonlyArray2<'py, T>>()
        .map_err(|e| invalid(format!("{arg}: {e}")))
}

/// A C-contiguous 1-D array of `T`, borrowed without copying.
pub fn vector<'py, T: Element>(obj: &Bound<'py, PyAny>, arg: &str, dtype: &str) -> PyResult<PyReadonlyArray1<'py, T>> {
    let arr = untyped(obj, arg)?;
    check::<T>(arr, arg, 1, dtype)?;
    obj.extract::<PyReadonlyArray1<'py, T>>()
        .map_err(|e| invalid(format!("{arg}: {e}")))
}

/// Either a 1-D `(d,)` or a 2-D `(q, d)` array; returns the rows flattened and their count,
/// plus whether the input was 1-D (so the result can be shaped the same way).
pub fn one_or_many_rows<'py, T: Element>(obj: &Bound<'py, PyAny>, arg: &str, dtype: &str) -> PyResult<(Vec<T>, usize, usize, bool)>
where
    T: Copy,
{
    let arr = untyped(obj, arg)?;
    match arr.ndim() {
        1 => {
            let v = vector::<T>(obj, arg, dtype)?;
            let s = v.as_slice().map_err(|e| invalid(format!("{arg}: {e}")))?;
            Ok((s.to_vec(), 1, s.len(), true))
        }
        2 => {
            let m = matrix::<T>(obj, arg, dtype)?;
            let shape = m.shape().to_vec();
            let s = m.as_slice().map_err(|e| invalid(format!("{arg}: {e}")))?;
            Ok((s.to_vec(), shape[0], shape[1], false))
        }
        n => Err(invalid(format!("{arg}: expected a 1-D or 2-D array, got {n}-D"))),
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// `obj` as a sequence of `str` (any iterable but a `str` or `bytes` itself), each item checked
/// with an error naming it (`arg[i]`).
pub fn str_items<'py>(obj: &Bound<'py, PyAny>, arg: &str) -> PyResult<Vec<Bound<'py, PyString>>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(wrong_type(format!("{arg}: expected a sequence of str, got {}", type_name(obj))));
    }
    let iter = obj
        .try_iter()
        .map_err(|_| wrong_type(format!("{arg}: expected a sequence of str, got {}", type_name(obj))))?;
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for (i, item) in iter.enumerate() {
        let item = item?;
        let s = item
            .cast::<PyString>()
            .map_err(|_| wrong_type(format!("{arg}[{i}]: expected str, got {}", type_name(&item))))?;
        out.push(s.clone());
    }
    Ok(out)
}
