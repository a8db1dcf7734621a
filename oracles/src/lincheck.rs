//! The entry for `cargo dst-fuzz lincheck --model NAME FILE`: read a log,
//! check it against a built-in model, report.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::check::{CheckOptions, Verdict};
use crate::format::{Decode, Format, ParseError, parse};
use crate::models::{Kv, Queue, Register, Set};
use crate::search::partitions;

/// The built-in models, by the names the command line uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelName {
    Register,
    Kv,
    Queue,
    Set,
}

impl ModelName {
    pub const ALL: [ModelName; 4] = [
        ModelName::Register,
        ModelName::Kv,
        ModelName::Queue,
        ModelName::Set,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ModelName::Register => "register",
            ModelName::Kv => "kv",
            ModelName::Queue => "queue",
            ModelName::Set => "set",
        }
    }
}

impl fmt::Display for ModelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModelName::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown model '{s}': expected 'register', 'kv', 'queue' or 'set'")
            })
    }
}

/// Why a file could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum LincheckError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {error}", path.display())]
    Parse { path: PathBuf, error: ParseError },
}

impl LincheckError {
    /// The 1-based line at fault, for a parse error.
    pub fn line(&self) -> Option<usize> {
        match self {
            LincheckError::Parse { error, .. } => Some(error.line),
            LincheckError::Io { .. } => None,
        }
    }
}

/// The outcome of checking one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub model: ModelName,
    pub format: Format,
    /// Operations checked (failed ones left out).
    pub operations: usize,
    pub partitions: usize,
    pub verdict: Verdict,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} operations in {} partition{} ({} model, {} format)",
            self.operations,
            self.partitions,
            if self.partitions == 1 { "" } else { "s" },
            self.model,
            self.format
        )?;
        write!(f, "{}", self.verdict)
    }
}

/// Checks the history in `path` against `model`, telling the format from
/// the content when `format` is `None`.
pub fn lincheck_file(
    model: ModelName,
    path: &Path,
    format: Option<Format>,
) -> Result<Report, LincheckError> {
    lincheck_file_with(model, path, format, &CheckOptions::default())
}

/// [`lincheck_file`] with options (a budget, no partitioning, no shrinking).
pub fn lincheck_file_with(
    model: ModelName,
    path: &Path,
    format: Option<Format>,
    options: &CheckOptions,
) -> Result<Report, LincheckError> {
    let text = std::fs::read_to_string(path).map_err(|source| LincheckError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    lincheck_str(model, &text, format, options).map_err(|error| LincheckError::Parse {
        path: path.to_path_buf(),
        error,
    })
}

/// Checks a history given as text.
pub fn lincheck_str(
    model: ModelName,
    text: &str,
    format: Option<Format>,
    options: &CheckOptions,
) -> Result<Report, ParseError> {
    let format = match format {
        Some(format) => format,
        None => Format::detect(text)?,
    };
    match model {
        ModelName::Register => run(&Register::default(), model, text, format, options),
        ModelName::Kv => run(&Kv, model, text, format, options),
        ModelName::Queue => run(&Queue, model, text, format, options),
        ModelName::Set => run(&Set, model, text, format, options),
    }
}

fn run<M: Decode>(
    model: &M,
    name: ModelName,
    text: &str,
    format: Format,
    options: &CheckOptions,
) -> Result<Report, ParseError> {
    let operations = parse(model, text, Some(format))?.operations();
    Ok(Report {
        model: name,
        format,
        operations: operations.len(),
        partitions: partitions(model, &operations, options.partition).len(),
        verdict: crate::check::check_operations(model, &operations, options),
    })
}
