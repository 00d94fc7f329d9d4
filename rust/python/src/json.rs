//! `_core.json_dumps` and `_core.json_copy`: a JSON value (dicts, lists, tuples, strings,
//! numbers, booleans, `None`) written as `json.dumps(value, ensure_ascii=False, allow_nan=False)`
//! writes it, or copied as `json.loads` of that text would build it, in one walk under the GIL
//! with no text in between: the copy shares the immutable leaves (an exact `str`, `int` or
//! `float`) instead of parsing them again.
//!
//! Every rule follows the standard library's C encoder: its order of type checks (`None`, the
//! booleans, `str`, `int`, `float`, `list`/`tuple`, `dict`, subclasses included), its key
//! coercion (`1` -> `"1"`, `None` -> `"null"`), `int.__repr__` and `float.__repr__` for
//! numbers, its escapes and separators, and its errors (a `TypeError` for what is not JSON, a
//! `ValueError` for NaN, infinities and cycles). A `str` holding a lone surrogate cannot cross
//! as UTF-8: it raises `UnicodeEncodeError`, and the Python wrapper uses the standard library.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::convert::{invalid, wrong_type};

/// Deeper nesting is refused (the standard library stops near its recursion limit, 1,000).
const MAX_DEPTH: usize = 1000;

struct Walk<'py> {
    py: Python<'py>,
    /// The JSON text, when asked for.
    text: Option<String>,
    /// Whether to build the copy.
    copy: bool,
    /// The containers being walked, to refuse a cycle as the standard library does.
    open: Vec<*mut pyo3::ffi::PyObject>,
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

impl<'py> Walk<'py> {
    fn write(&mut self, s: &str) {
        if let Some(text) = &mut self.text {
            text.push_str(s);
        }
    }

    /// `s` as a JSON string literal, escaped as `json.dumps(..., ensure_ascii=False)` does.
    fn write_str(&mut self, s: &str) {
        let Some(text) = &mut self.text else { return };
        text.reserve(s.len() + 2);
        text.push('"');
        let mut copied = 0;
        for (i, b) in s.bytes().enumerate() {
            let named = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0C => "\\f",
                0..=0x1F => "",
                _ => continue,
            };
            text.push_str(&s[copied..i]);
            if named.is_empty() {
                text.push_str(&format!("\\u{b:04x}"));
            } else {
                text.push_str(named);
            }
            copied = i + 1;
        }
        text.push_str(&s[copied..]);
        text.push('"');
    }

    /// A finite float as `float.__repr__` writes it (a subclass as its plain float).
    fn float(&self, value: &Bound<'py, PyAny>, f: &Bound<'py, PyFloat>) -> PyResult<Bound<'py, PyAny>> {
        let x = f.value();
        if !x.is_finite() {
            return Err(invalid("Out of range float values are not JSON compliant"));
        }
        Ok(if value.is_exact_instance_of::<PyFloat>() { value.clone() } else { PyFloat::new(self.py, x).into_any() })
    }

    /// An int as `int.__repr__` writes it, and the plain int `json.loads` would read back.
    fn int(&self, value: &Bound<'py, PyAny>, i: &Bound<'py, PyInt>) -> PyResult<(String, Bound<'py, PyAny>)> {
        let exact = value.is_exact_instance_of::<PyInt>();
        if let Ok(n) = i.extract::<i64>() {
            let plain = if exact || !self.copy { value.clone() } else { PyInt::new(self.py, n).into_any() };
            return Ok((n.to_string(), plain));
        }
        let int_type = self.py.get_type::<PyInt>();
        let repr: String = int_type.getattr(intern!(self.py, "__repr__"))?.call1((value,))?.extract()?;
        let plain = if exact || !self.copy { value.clone() } else { int_type.call1((repr.as_str(),))? };
        Ok((repr, plain))
    }

    fn enter(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        if self.open.len() >= MAX_DEPTH {
            return Err(invalid(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        if self.open.contains(&value.as_ptr()) {
            return Err(invalid("Circular reference detected"));
        }
        self.open.push(value.as_ptr());
        Ok(())
    }

    /// A dict key as the string it becomes (`json.dumps` coerces str, float, bool, None and int keys).
    fn key(&mut self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
        let py = self.py;
        if let Ok(s) = key.cast::<PyString>() {
            return Ok(if key.is_exact_instance_of::<PyString>() { s.clone() } else { PyString::new(py, s.to_str()?) });
        }
        if let Ok(f) = key.cast::<PyFloat>() {
            return self.float(key, f)?.repr();
        }
        if key.is_none() {
            return Ok(intern!(py, "null").clone());
        }
        if let Ok(b) = key.cast::<PyBool>() {
            return Ok(if b.is_true() { intern!(py, "true") } else { intern!(py, "false") }.clone());
        }
        if let Ok(i) = key.cast::<PyInt>() {
            return Ok(PyString::new(py, &self.int(key, i)?.0));
        }
        Err(wrong_type(format!("keys must be str, int, float, bool or None, not {}", type_name(key))))
    }

    /// Writes `value`; returns its copy when copying (else `None`).
    fn value(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = self.py;
        let leaf = if value.is_none() {
            self.write("null");
            value.clone()
        } else if let Ok(b) = value.cast::<PyBool>() {
            self.write(if b.is_true() { "true" } else { "false" });
            value.clone()
        } else if let Ok(s) = value.cast::<PyString>() {
            let text = s.to_str()?;
            self.write_str(text);
            if !self.copy || value.is_exact_instance_of::<PyString>() {
                value.clone()
            } else {
                PyString::new(py, text).into_any()
            }
        } else if let Ok(i) = value.cast::<PyInt>() {
            let (repr, plain) = self.int(value, i)?;
            self.write(&repr);
            plain
        } else if let Ok(f) = value.cast::<PyFloat>() {
            let plain = self.float(value, f)?;
            if self.text.is_some() {
                let repr = plain.repr()?;
                self.write(repr.to_str()?);
            }
            plain
        } else if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            return self.array(value);
        } else if let Ok(d) = value.cast::<PyDict>() {
            return self.object(value, d);
        } else {
            return Err(wrong_type(format!("Object of type {} is not JSON serializable", type_name(value))));
        };
        Ok(self.copy.then_some(leaf))
    }

    fn array(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.enter(value)?;
        let items: Vec<Bound<'py, PyAny>> = match value.cast::<PyList>() {
            Ok(list) => list.iter().collect(),
            Err(_) => value.cast::<PyTuple>()?.iter().collect(),
        };
        let mut copied = Vec::with_capacity(if self.copy { items.len() } else { 0 });
        self.write("[");
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                self.write(", ");
            }
            copied.extend(self.value(item)?);
        }
        self.write("]");
        self.open.pop();
        Ok(if self.copy { Some(PyList::new(self.py, copied)?.into_any()) } else { None })
    }

    fn object(&mut self, value: &Bound<'py, PyAny>, dict: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.enter(value)?;
        let out = self.copy.then(|| PyDict::new(self.py));
        self.write("{");
        for (n, (key, item)) in dict.iter().enumerate() {
            if n > 0 {
                self.write(", ");
            }
            let key = self.key(&key)?;
            self.write_str(key.to_str()?);
            self.write(": ");
            let copied = self.value(&item)?;
            if let (Some(out), Some(copied)) = (&out, copied) {
                out.set_item(key, copied)?;
            }
        }
        self.write("}");
        self.open.pop();
        Ok(out.map(Bound::into_any))
    }
}

/// `value` as `json.dumps(value, ensure_ascii=False, allow_nan=False)` writes it.
#[pyfunction]
fn json_dumps(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut walk = Walk { py, text: Some(String::new()), copy: false, open: Vec::new() };
    walk.value(value)?;
    Ok(walk.text.unwrap_or_default())
}

/// A deep copy of `value` as `json.loads(json.dumps(value, allow_nan=False))` builds it.
#[pyfunction]
fn json_copy<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let mut walk = Walk { py, text: None, copy: true, open: Vec::new() };
    Ok(walk.value(value)?.unwrap_or_else(|| value.clone()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(json_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(json_copy, m)?)?;
    Ok(())
}
