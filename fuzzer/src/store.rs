//! The campaign on disk: corpus files, the campaign file, finding folders.
//! Every write is atomic (a temporary file, then a rename), so `kill -9`
//! loses nothing and running again resumes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dst_kernel::Campaign;
use dst_kernel::campaign::CampaignError;
use libafl::corpus::Corpus;
use libafl::inputs::BytesInput;
use libafl::state::HasCorpus;

use crate::exit;

/// A problem with the files of a campaign.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot write to {path}: {source}")]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Campaign(#[from] CampaignError),
    #[error("{path} is not a valid input: {why}")]
    BadInput { path: PathBuf, why: String },
    #[error("explorer error: {0}")]
    Libafl(String),
    /// A client's target could not be started (its message names why);
    /// the exit status is the one the target's opening chose.
    #[error("{message}")]
    Target { code: i32, message: String },
    /// The campaign's broker could not listen, or its restarters could
    /// not share a page.
    #[error("{0}")]
    Broker(String),
    /// LibAFL's "shutting down": the broker ended the campaign, not a
    /// failure.
    #[error("the campaign is shutting down")]
    ShuttingDown,
}

impl StoreError {
    pub(crate) fn libafl(err: libafl::Error) -> StoreError {
        match err {
            libafl::Error::ShuttingDown => StoreError::ShuttingDown,
            err => StoreError::Libafl(err.to_string()),
        }
    }

    /// Whether this is LibAFL's "shutting down" (the broker ended the
    /// campaign), not a failure.
    pub(crate) fn is_shutdown(&self) -> bool {
        matches!(self, StoreError::ShuttingDown)
    }

    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            StoreError::Unwritable { .. } => exit::UNWRITABLE,
            StoreError::Unreadable { .. } | StoreError::BadInput { .. } => exit::BAD_INPUT,
            StoreError::Campaign(CampaignError::Write { .. }) => exit::UNWRITABLE,
            StoreError::Campaign(_) => exit::BAD_INPUT,
            StoreError::Target { code, .. } => *code,
            StoreError::Libafl(_) | StoreError::Broker(_) | StoreError::ShuttingDown => {
                exit::INTERNAL
            }
        }
    }
}

/// Each store error fails with its status ([`StoreError::exit_code`]).
impl From<StoreError> for exit::Failure {
    fn from(err: StoreError) -> exit::Failure {
        exit::Failure::new(err.exit_code(), err.to_string())
    }
}

/// Creates `dir` if needed and checks that files can be written in it.
pub fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    let unwritable = |source| StoreError::Unwritable {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(unwritable)?;
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(unwritable)?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Reads every input file in `dir` (missing folder: none), in name order.
/// Hidden and temporary files are skipped.
pub fn load_corpus(dir: &Path) -> Result<Vec<Vec<u8>>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Unreadable {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    let mut inputs = Vec::new();
    for path in paths {
        if path.is_dir() {
            return Err(StoreError::BadInput {
                path,
                why: "a folder inside the corpus folder".into(),
            });
        }
        let bytes = std::fs::read(&path).map_err(|source| StoreError::Unreadable {
            path: path.clone(),
            source,
        })?;
        inputs.push(bytes);
    }
    Ok(inputs)
}

/// The file name of corpus entry `bytes` (its FNV-1a hash), the same for
/// every writer of a corpus folder, so an entry is never stored twice.
pub fn corpus_name(bytes: &[u8]) -> String {
    format!("{:016x}", dst::hash::fnv64(bytes))
}

/// Writes corpus entries `from..` of the state's corpus; returns the count saved.
pub(crate) fn save_corpus<S: HasCorpus<BytesInput>>(
    state: &S,
    from: usize,
    dir: &Path,
) -> Result<usize, StoreError> {
    let count = state.corpus().count();
    for n in from..count {
        let id = state.corpus().nth(n);
        let input = state
            .corpus()
            .cloned_input_for_id(id)
            .map_err(StoreError::libafl)?;
        let bytes = input.as_ref();
        let path = dir.join(corpus_name(bytes));
        if !path.exists() {
            // Made again by any campaign that needs it: not synced.
            dst_kernel::write_unsynced(&path, bytes).map_err(|source| StoreError::Unwritable {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(count)
}

/// Writes a file atomically.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    dst_kernel::write_atomic(path, bytes).map_err(|source| StoreError::Unwritable {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads the saved campaign, if there is one.
pub fn load_campaign(path: &Path) -> Result<Option<Campaign>, StoreError> {
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some(Campaign::load(path)?))
}

pub fn save_campaign(campaign: &Campaign, path: &Path) -> Result<(), StoreError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| StoreError::Unwritable {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    Ok(campaign.save(path)?)
}

/// Names of the finding folders already in `dir`.
pub fn known_findings(dir: &Path) -> Result<BTreeSet<String>, StoreError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !n.starts_with('.'))
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(source) => Err(StoreError::Unreadable {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Reads an input file given on the command line.
pub fn read_input(path: &Path) -> Result<Vec<u8>, StoreError> {
    std::fs::read(path).map_err(|source| StoreError::Unreadable {
        path: path.to_path_buf(),
        source,
    })
}

impl From<dst_kernel::finding::Unwritable> for StoreError {
    fn from(e: dst_kernel::finding::Unwritable) -> StoreError {
        StoreError::Unwritable {
            path: e.path,
            source: e.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_told_apart_by_variant_not_by_text() {
        assert!(StoreError::libafl(libafl::Error::shutting_down()).is_shutdown());
        let other = StoreError::libafl(libafl::Error::unknown("Shutting down!"));
        assert!(!other.is_shutdown(), "text that reads the same is not it");
        assert_eq!(other.exit_code(), exit::INTERNAL);
        let target = StoreError::Target {
            code: exit::BAD_INPUT,
            message: "guest.elf: not an ELF file".into(),
        };
        assert_eq!(target.exit_code(), exit::BAD_INPUT);
        assert_eq!(target.to_string(), "guest.elf: not an ELF file");
        let broker = StoreError::Broker("cannot listen on 127.0.0.1:1: denied".into());
        assert_eq!(broker.exit_code(), exit::INTERNAL);
        assert!(!broker.to_string().starts_with("explorer error"));
    }
}
