//! `mindcore._core`: thin bindings over `mindcore-kernels`. Each submodule validates its
//! inputs, releases the GIL around the kernel and maps `KernelError` to Python exceptions.

use pyo3::prelude::*;

mod convert;
mod bm25;
mod dedupe;
mod hashing;
mod json;
mod packing;
mod recall;
mod scoring;
mod secrets;
mod tokens;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    bm25::register(m)?;
    dedupe::register(m)?;
    hashing::register(m)?;
    json::register(m)?;
    packing::register(m)?;
    recall::register(m)?;
    scoring::register(m)?;
    secrets::register(m)?;
    tokens::register(m)?;
    Ok(())
}
