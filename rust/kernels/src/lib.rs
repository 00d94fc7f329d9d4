//! mindcore's hot paths as a pure Rust crate (no Python), so `cargo test` runs on its own.
//! `rust/python` wraps each module for `mindcore._core`.

pub mod error;

pub mod analyzer;
pub mod bm25;
pub mod dedupe;
pub mod hashing;
pub mod packing;
pub mod scoring;
pub mod secrets;
pub mod tokens;

pub use error::{KernelError, Result};
