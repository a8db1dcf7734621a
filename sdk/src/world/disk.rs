//! A node's disk: named files whose writes become durable only on
//! [`Disk::sync`]. The disk outlives crashes of its node; what a crash
//! keeps of unsynced writes is a decision: nominally nothing (the writes
//! since the last sync are lost); with `sim: torn write`, every unsynced
//! write but the last, and a prefix of the last. A sync may also report
//! success without making anything durable (`sim: fsync lost`, a disk that
//! lies), where the level allows it.

use std::collections::BTreeMap;

use super::{Decide, Fault};

#[derive(Default, Clone, Debug)]
struct File {
    /// What reads see.
    data: Vec<u8>,
    /// What survives a crash (`None`: the file was never synced).
    durable: Option<Vec<u8>>,
    /// Writes since the last sync: (offset, bytes).
    unsynced: Vec<(usize, Vec<u8>)>,
}

/// The files of one node.
#[derive(Default, Clone, Debug)]
pub struct Disk {
    files: BTreeMap<String, File>,
}

fn apply(data: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    if data.len() < offset + bytes.len() {
        data.resize(offset + bytes.len(), 0);
    }
    data[offset..offset + bytes.len()].copy_from_slice(bytes);
}

impl Disk {
    /// Writes `bytes` at `offset` of `file` (created if missing; a gap
    /// reads as zeros). Not durable until [`Disk::sync`].
    pub fn write(&mut self, file: &str, offset: usize, bytes: &[u8]) {
        let f = self.files.entry(file.to_string()).or_default();
        apply(&mut f.data, offset, bytes);
        f.unsynced.push((offset, bytes.to_vec()));
        debug_assert!(f.data.len() >= offset + bytes.len());
    }

    /// Replaces the content of `file` with `bytes`: one write at offset 0
    /// after truncation. A crash before the sync keeps the old content, or
    /// a torn new one.
    pub fn replace(&mut self, file: &str, bytes: &[u8]) {
        let f = self.files.entry(file.to_string()).or_default();
        f.data = bytes.to_vec();
        f.unsynced.push((0, bytes.to_vec()));
    }

    /// The content of `file` (`None` if it does not exist).
    pub fn read(&self, file: &str) -> Option<&[u8]> {
        self.files.get(file).map(|f| f.data.as_slice())
    }

    /// The length of `file` (0 if it does not exist).
    pub fn len(&self, file: &str) -> usize {
        self.files.get(file).map_or(0, |f| f.data.len())
    }

    /// Whether no file exists.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Makes every write to `file` so far durable, unless `may_lie` and the
    /// sync is lost (`sim: fsync lost`); returns whether it did.
    pub fn sync(&mut self, decide: &mut impl Decide, file: &str, may_lie: bool) -> bool {
        if may_lie && decide.fault(Fault::FsyncLost) {
            return false;
        }
        if let Some(f) = self.files.get_mut(file) {
            f.durable = Some(f.data.clone());
            f.unsynced.clear();
        }
        true
    }

    /// What a crash leaves behind: per file (in name order) with unsynced
    /// writes, the durable content, or with `sim: torn write` a prefix of
    /// them; a file never synced and not torn is gone.
    pub fn crash(&mut self, decide: &mut impl Decide) {
        self.files.retain(|_, file| {
            if file.unsynced.is_empty() {
                return true;
            }
            let mut kept = file.durable.clone();
            if decide.fault(Fault::TornWrite) {
                let mut data = kept.unwrap_or_default();
                let (last, earlier) = file.unsynced.split_last().expect("not empty");
                for (offset, bytes) in earlier {
                    apply(&mut data, *offset, bytes);
                }
                let keep = decide.below("sim: torn write length", last.1.len() as u64) as usize;
                debug_assert!(keep <= last.1.len());
                apply(&mut data, last.0, &last.1[..keep]);
                kept = Some(data);
            }
            file.unsynced.clear();
            match kept {
                Some(data) => {
                    file.data = data.clone();
                    file.durable = Some(data);
                    true
                }
                None => false,
            }
        });
        debug_assert!(self.files.values().all(|f| f.unsynced.is_empty()));
    }
}
