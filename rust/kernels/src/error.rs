//! The one error type every kernel returns; the bindings map it to Python exceptions.

use std::fmt;

/// A kernel rejected its input. `arg` names the offending argument so the Python
/// message can say exactly what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// The value is of the right type but not acceptable (shape, range, NaN, ...): `ValueError`.
    Invalid { arg: &'static str, reason: String },
}

impl KernelError {
    pub fn invalid(arg: &'static str, reason: impl Into<String>) -> Self {
        KernelError::Invalid { arg, reason: reason.into() }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Invalid { arg, reason } => write!(f, "{arg}: {reason}"),
        }
    }
}

impl std::error::Error for KernelError {}

pub type Result<T> = std::result::Result<T, KernelError>;
