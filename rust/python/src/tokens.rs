//! `_core` token functions: exact counts / ids / decoding, the rank tables and pre-tokenizer
//! pieces (for the tests), and the seeds' estimators.

use mindcore_kernels::tokens::{self, Encoding, Rule};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyInt, PyList, PyString};

use crate::convert::{invalid, kernel_err, str_items, wrong_type};

fn encoding(name: &str) -> PyResult<Encoding> {
    Encoding::from_name(name).map_err(kernel_err)
}

/// Borrowed UTF-8 of each text (lone surrogates raise `UnicodeEncodeError`; the wrapper
/// replaces them the way tiktoken does and retries).
fn utf8_items(texts: &Bound<'_, PyAny>, arg: &str) -> PyResult<Vec<PyBackedStr>> {
    str_items(texts, arg)?.into_iter().map(PyBackedStr::try_from).collect()
}

/// Exact token count of one text.
#[pyfunction]
fn count_tokens(py: Python<'_>, text: PyBackedStr, encoding: &str) -> PyResult<usize> {
    let enc = self::encoding(encoding)?;
    Ok(py.detach(|| enc.count(&text)))
}

/// Exact token counts of many texts, in parallel.
#[pyfunction]
fn count_tokens_batch(py: Python<'_>, texts: &Bound<'_, PyAny>, encoding: &str) -> PyResult<Vec<usize>> {
    let enc = self::encoding(encoding)?;
    let texts = utf8_items(texts, "text_or_texts")?;
    Ok(py.detach(|| enc.count_batch(&texts)))
}

/// An id list at least this long is built from [`ID_INTS`].
const ID_INTS_MIN: usize = 50_000;

/// A Python int for every token id of each encoding, made on the first long encode and kept
/// (about 6 MB for o200k_base): a long text's id list then refers to them instead of allocating
/// an int per token, which took a third of the time of encoding a 1 MB text.
static ID_INTS: [PyOnceLock<Vec<Py<PyInt>>>; 2] = [PyOnceLock::new(), PyOnceLock::new()];

/// `ids` as a Python list.
fn id_list<'py>(py: Python<'py>, enc: Encoding, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    if ids.len() < ID_INTS_MIN {
        return PyList::new(py, ids);
    }
    let cell = match enc {
        Encoding::O200kBase => &ID_INTS[0],
        Encoding::Cl100kBase => &ID_INTS[1],
    };
    let ints = cell.get_or_init(py, || (0..enc.vocab().n_tokens() as u32).map(|id| PyInt::new(py, id).unbind()).collect());
    PyList::new(py, ids.iter().map(|&id| ints[id as usize].clone_ref(py)))
}

/// Token ids of one text.
#[pyfunction]
fn encode_tokens<'py>(py: Python<'py>, text: PyBackedStr, encoding: &str) -> PyResult<Bound<'py, PyList>> {
    let enc = self::encoding(encoding)?;
    let ids = py.detach(|| enc.encode(&text));
    id_list(py, enc, &ids)
}

/// The text of a token id sequence (invalid UTF-8 becomes U+FFFD).
#[pyfunction]
fn decode_tokens(py: Python<'_>, ids: &Bound<'_, PyAny>, encoding: &str) -> PyResult<String> {
    let enc = self::encoding(encoding)?;
    let ids: Vec<i64> = ids.extract().map_err(|e| wrong_type(format!("ids: expected a sequence of int ({e})")))?;
    let ids = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            u32::try_from(id).map_err(|_| {
                invalid(format!("ids: ids[{i}] = {id} is not a token of {}", enc.name()))
            })
        })
        .collect::<PyResult<Vec<u32>>>()?;
    py.detach(|| enc.decode(&ids)).map_err(kernel_err)
}

/// The mergeable tokens' bytes, indexed by rank.
#[pyfunction]
fn token_ranks<'py>(py: Python<'py>, encoding: &str) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let vocab = self::encoding(encoding)?.vocab();
    Ok((0..vocab.n_tokens() as u32).map(|r| PyBytes::new(py, vocab.token(r))).collect())
}

/// The pieces the encoding's pre-tokenizer regex splits `text` into.
#[pyfunction]
fn split_tokens(py: Python<'_>, text: PyBackedStr, encoding: &str) -> PyResult<Vec<String>> {
    let enc = self::encoding(encoding)?;
    Ok(py.detach(|| enc.split(&text).into_iter().map(str::to_owned).collect()))
}

fn rule(name: &str) -> PyResult<Rule> {
    Rule::from_name(name).map_err(kernel_err)
}

/// (code points, UTF-8 bytes) of a str. Only the "bytes" rule needs the second number.
fn lengths(s: &Bound<'_, PyString>, rule: Rule) -> PyResult<(usize, usize)> {
    let chars = s.code_point_len()?;
    if rule == Rule::Chars {
        return Ok((chars, 0));
    }
    Ok((chars, utf8_len(s, chars)?))
}

/// UTF-8 length read from the str's storage without encoding it (a lone surrogate counts 3
/// bytes, as `surrogatepass`).
#[cfg(not(feature = "abi3"))]
fn utf8_len(s: &Bound<'_, PyString>, _chars: usize) -> PyResult<usize> {
    use pyo3::types::string::PyStringData;
    // SAFETY: the slices borrow `s`, which outlives this call, and are only read here.
    Ok(match unsafe { s.data() }? {
        PyStringData::Ucs1(d) => tokens::utf8_len_ucs1(d),
        PyStringData::Ucs2(d) => tokens::utf8_len_ucs2(d),
        PyStringData::Ucs4(d) => tokens::utf8_len_ucs4(d),
    })
}

/// UTF-8 length under the stable ABI, which hides a str's storage: the code points are copied
/// into a reused buffer (`PyUnicode_AsUCS4`) and measured there. Encoding to UTF-8 instead would
/// cost far more for a non-ASCII str and leave a UTF-8 copy cached on it.
#[cfg(feature = "abi3")]
fn utf8_len(s: &Bound<'_, PyString>, chars: usize) -> PyResult<usize> {
    use std::cell::RefCell;
    thread_local! {
        static CODE_POINTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }
    if chars == 0 {
        return Ok(0);
    }
    let buflen = pyo3::ffi::Py_ssize_t::try_from(chars).map_err(|_| invalid("text: too long"))?;
    CODE_POINTS.with_borrow_mut(|buf| {
        buf.clear();
        buf.reserve(chars);
        // SAFETY: the buffer has room for `chars` code points, the str's length, and CPython
        // writes no more than `buflen` (no terminating NUL: copy_null = 0).
        let copied = unsafe { pyo3::ffi::PyUnicode_AsUCS4(s.as_ptr(), buf.as_mut_ptr(), buflen, 0) };
        if copied.is_null() {
            return Err(PyErr::fetch(s.py()));
        }
        // SAFETY: CPython initialised all `chars` code points.
        unsafe { buf.set_len(chars) };
        Ok(tokens::utf8_len_ucs4(buf))
    })
}

/// The estimate for one text.
#[pyfunction]
fn estimate_tokens(text: &Bound<'_, PyString>, rule: &str) -> PyResult<usize> {
    let rule = self::rule(rule)?;
    let (chars, bytes) = lengths(text, rule)?;
    Ok(tokens::estimate(rule, chars, bytes))
}

/// The estimate for each text.
#[pyfunction]
fn estimate_tokens_batch(texts: &Bound<'_, PyAny>, rule: &str) -> PyResult<Vec<usize>> {
    let rule = self::rule(rule)?;
    str_items(texts, "text_or_texts")?
        .iter()
        .map(|t| lengths(t, rule).map(|(chars, bytes)| tokens::estimate(rule, chars, bytes)))
        .collect()
}

/// `ceil((sum of chars + 20 * len(texts)) / 4)`.
#[pyfunction]
fn estimate_message_tokens(texts: &Bound<'_, PyAny>) -> PyResult<usize> {
    let texts = str_items(texts, "texts")?;
    let mut chars = 0;
    for t in &texts {
        chars += t.code_point_len()?;
    }
    Ok(tokens::estimate_messages(chars, texts.len()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens_batch, m)?)?;
    m.add_function(wrap_pyfunction!(encode_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(decode_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(token_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(split_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_tokens_batch, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_message_tokens, m)?)?;
    Ok(())
}
