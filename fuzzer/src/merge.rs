//! `cargo dst-fuzz merge NAME --from DIR...`: joins the parts of a
//! campaign that ran on several machines (`--listen`, `--join`) into this
//! one. Each DIR is another machine's fuzz folder, laid out as this one
//! (`corpus/NAME`, `findings/NAME`, `campaigns/NAME.json`). The corpora are
//! united (entries named by content), findings whose folder (their
//! signature) is not here yet are copied, and the campaigns' counts are
//! added ([`dst_kernel::Campaign::merge`]). Every write is atomic (a
//! temporary name, then a rename). A campaign file merged once is recorded
//! by its hash beside the campaign (`NAME.json.merged`) and skipped if it
//! comes again: merge each machine's part once, at its campaign's end.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dst_kernel::Campaign;

use crate::store::{self, StoreError};

/// Where one part of a campaign keeps its files.
#[derive(Debug, Clone)]
pub struct Part {
    pub corpus: PathBuf,
    pub findings: PathBuf,
    pub campaign: PathBuf,
}

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Merged {
    pub corpus_added: usize,
    pub findings_added: usize,
    pub campaigns_merged: usize,
    pub campaigns_skipped: usize,
}

/// Merges `parts` into `into` (see the module docs).
pub fn merge(into: &Part, parts: &[Part]) -> Result<Merged, StoreError> {
    let mut merged = Merged::default();
    for part in parts {
        if !part.corpus.is_dir() && !part.findings.is_dir() && !part.campaign.is_file() {
            return Err(StoreError::BadInput {
                path: part.campaign.clone(),
                why: format!(
                    "no corpus ({}), findings or campaign of this target there",
                    part.corpus.display()
                ),
            });
        }
    }
    let record = record_path(&into.campaign);
    let mut done: BTreeSet<String> = match std::fs::read_to_string(&record) {
        Ok(text) => text.lines().map(str::to_string).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
        Err(source) => {
            return Err(StoreError::Unreadable {
                path: record,
                source,
            });
        }
    };
    let mut campaign = store::load_campaign(&into.campaign)?;
    for part in parts {
        if let Some(theirs) = store::load_campaign(&part.campaign)? {
            let bytes = std::fs::read(&part.campaign).map_err(|source| StoreError::Unreadable {
                path: part.campaign.clone(),
                source,
            })?;
            let id = format!("{:016x}", dst::hash::fnv64(&bytes));
            if done.contains(&id) {
                eprintln!(
                    "dst-fuzz: {} was merged before; its counts are not added again",
                    part.campaign.display()
                );
                merged.campaigns_skipped += 1;
            } else {
                match &mut campaign {
                    Some(ours) if ours.catalog != theirs.catalog => {
                        return Err(StoreError::BadInput {
                            path: part.campaign.clone(),
                            why:
                                "a campaign of another build of the target (its properties differ)"
                                    .into(),
                        });
                    }
                    Some(ours) => ours.merge(&theirs),
                    None => {
                        let mut ours = Campaign::new(theirs.catalog.clone());
                        ours.merge(&theirs);
                        campaign = Some(ours);
                    }
                }
                done.insert(id);
                merged.campaigns_merged += 1;
            }
        }
        merged.corpus_added += merge_corpus(&into.corpus, &part.corpus)?;
        merged.findings_added += merge_findings(&into.findings, &part.findings)?;
    }
    if let Some(campaign) = &campaign {
        // The campaign first, then the record: an interrupted merge can be
        // run again without counting a part twice only if the record is
        // not ahead of the campaign.
        store::save_campaign(campaign, &into.campaign)?;
        let text: String = done.iter().map(|id| format!("{id}\n")).collect();
        dst_kernel::write_atomic(&record, text.as_bytes()).map_err(|source| {
            StoreError::Unwritable {
                path: record.clone(),
                source,
            }
        })?;
    }
    Ok(merged)
}

fn record_path(campaign: &Path) -> PathBuf {
    let mut name = campaign.as_os_str().to_owned();
    name.push(".merged");
    PathBuf::from(name)
}

/// Copies the entries of `from` that `into` lacks; returns how many.
fn merge_corpus(into: &Path, from: &Path) -> Result<usize, StoreError> {
    if !from.is_dir() {
        return Ok(0);
    }
    store::ensure_dir(into)?;
    let mut added = 0;
    for input in store::load_corpus(from)? {
        let path = into.join(store::corpus_name(&input));
        if !path.exists() {
            store::write(&path, &input)?;
            added += 1;
        }
    }
    Ok(added)
}

/// Copies the finding folders of `from` that `into` lacks (each into a
/// temporary folder, then renamed); returns how many.
fn merge_findings(into: &Path, from: &Path) -> Result<usize, StoreError> {
    let ours = store::known_findings(into)?;
    let mut added = 0;
    for name in store::known_findings(from)? {
        if ours.contains(&name) {
            continue;
        }
        store::ensure_dir(into)?;
        let temporary = into.join(format!(".{name}.merging"));
        let _ = std::fs::remove_dir_all(&temporary);
        copy_tree(&from.join(&name), &temporary)?;
        std::fs::rename(&temporary, into.join(&name)).map_err(|source| StoreError::Unwritable {
            path: into.join(&name),
            source,
        })?;
        added += 1;
    }
    Ok(added)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), StoreError> {
    let unwritable = |source| StoreError::Unwritable {
        path: to.to_path_buf(),
        source,
    };
    let unreadable = |source| StoreError::Unreadable {
        path: from.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(to).map_err(unwritable)?;
    for entry in std::fs::read_dir(from).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(unreadable)?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|source| StoreError::Unwritable {
                path: target.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(dir: &Path) -> Part {
        Part {
            corpus: dir.join("corpus"),
            findings: dir.join("findings"),
            campaign: dir.join("campaign.json"),
        }
    }

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dst-merge-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn parts_are_united_once() {
        let (ours, theirs) = (temp("ours"), temp("theirs"));
        let mut campaign = Campaign::new(Vec::new());
        campaign.executions = 10;
        store::save_campaign(&campaign, &ours.join("campaign.json")).unwrap();
        campaign.executions = 32;
        store::save_campaign(&campaign, &theirs.join("campaign.json")).unwrap();
        for (dir, entry) in [(&ours, b"a".as_slice()), (&theirs, b"b"), (&theirs, b"a")] {
            store::ensure_dir(&dir.join("corpus")).unwrap();
            store::write(&dir.join("corpus").join(store::corpus_name(entry)), entry).unwrap();
        }
        std::fs::create_dir_all(theirs.join("findings/crash-x")).unwrap();
        std::fs::write(theirs.join("findings/crash-x/input"), b"x").unwrap();

        let merged = merge(&part(&ours), &[part(&theirs)]).unwrap();
        assert_eq!(
            merged,
            Merged {
                corpus_added: 1,
                findings_added: 1,
                campaigns_merged: 1,
                campaigns_skipped: 0
            }
        );
        let campaign = store::load_campaign(&ours.join("campaign.json"))
            .unwrap()
            .unwrap();
        assert_eq!(campaign.executions, 42);
        assert_eq!(store::load_corpus(&ours.join("corpus")).unwrap().len(), 2);
        assert_eq!(
            std::fs::read(ours.join("findings/crash-x/input")).unwrap(),
            b"x"
        );

        // The same part again adds nothing.
        let again = merge(&part(&ours), &[part(&theirs)]).unwrap();
        assert_eq!(again.campaigns_skipped, 1);
        assert_eq!(again.corpus_added + again.findings_added, 0);
        let campaign = store::load_campaign(&ours.join("campaign.json"))
            .unwrap()
            .unwrap();
        assert_eq!(campaign.executions, 42);
    }

    #[test]
    fn a_folder_without_the_target_is_an_error() {
        let (ours, empty) = (temp("ours2"), temp("empty"));
        let err = merge(&part(&ours), &[part(&empty)]).unwrap_err();
        assert!(matches!(err, StoreError::BadInput { .. }), "{err}");
    }
}
