//! The library's one error type. Each layer has its own underneath
//! ([`Diagnostics`] for files that do not load, [`std::io::Error`] for a
//! workspace that cannot be opened); this enum is what the public API
//! returns, so an embedder matches on one type.

use crate::config::Diagnostics;

/// Why a policy or workspace could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A policy or manifest did not load or compile: every problem, each with
    /// `FILE:LINE:COL` and what to change.
    #[error("the policy did not load:\n{}", .0.to_human())]
    Config(Diagnostics),
    /// A file or folder could not be read or opened (the workspace, a
    /// policy folder).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<Diagnostics> for Error {
    fn from(d: Diagnostics) -> Error {
        Error::Config(d)
    }
}
