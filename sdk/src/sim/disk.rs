//! A simulated disk per node: named files whose writes become durable only
//! on [`sync`]. The disk outlives crashes of its node; what a crash keeps of
//! unsynced writes is a decision: nominally nothing (the writes since the
//! last sync are lost); with `sim: torn write`, every unsynced write but the
//! last, and a prefix of the last. With `Config::lost_fsyncs`, a `sync` may
//! also report success without making anything durable (`sim: fsync lost`,
//! a disk that lies; no protocol survives that, so it is off by default).

use std::collections::BTreeMap;
use std::time::Duration;

use super::world::with;

#[derive(Default)]
struct File {
    /// What reads see.
    data: Vec<u8>,
    /// What survives a crash (`None`: the file was never synced).
    durable: Option<Vec<u8>>,
    /// Writes since the last sync: (offset, bytes).
    unsynced: Vec<(usize, Vec<u8>)>,
}

/// The files of one node.
#[derive(Default)]
pub(crate) struct Disk {
    files: BTreeMap<String, File>,
}

fn apply(data: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    if data.len() < offset + bytes.len() {
        data.resize(offset + bytes.len(), 0);
    }
    data[offset..offset + bytes.len()].copy_from_slice(bytes);
}

impl Disk {
    /// What a crash leaves behind.
    pub(crate) fn crash(&mut self) {
        self.files.retain(|_, file| {
            if file.unsynced.is_empty() {
                return true;
            }
            let mut kept = file.durable.clone();
            if crate::fault!("sim: torn write") {
                let mut data = kept.unwrap_or_default();
                let (last, earlier) = file.unsynced.split_last().expect("not empty");
                for (offset, bytes) in earlier {
                    apply(&mut data, *offset, bytes);
                }
                let keep = crate::random::below(last.1.len() as u64) as usize;
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
    }
}

fn on_disk<R>(f: impl FnOnce(&mut Disk) -> R) -> R {
    with(|w| {
        let node = w.current_node();
        f(&mut w.nodes[node.index()].disk)
    })
}

/// Writes `bytes` at `offset` of `file` (created if missing; a gap reads
/// as zeros). Not durable until [`sync`].
pub fn write(file: &str, offset: usize, bytes: &[u8]) {
    on_disk(|disk| {
        let f = disk.files.entry(file.to_string()).or_default();
        apply(&mut f.data, offset, bytes);
        f.unsynced.push((offset, bytes.to_vec()));
    })
}

/// Appends `bytes` to `file`.
pub fn append(file: &str, bytes: &[u8]) {
    let offset = len(file);
    write(file, offset, bytes)
}

/// Replaces the content of `file` with `bytes` (as one write at offset 0
/// after truncation; not durable until [`sync`]).
pub fn replace(file: &str, bytes: &[u8]) {
    on_disk(|disk| {
        let f = disk.files.entry(file.to_string()).or_default();
        f.data = bytes.to_vec();
        // A crash before sync keeps the old content, or a torn new one.
        f.unsynced.push((0, bytes.to_vec()));
    })
}

/// The content of `file` (`None` if it does not exist).
pub fn read(file: &str) -> Option<Vec<u8>> {
    on_disk(|disk| disk.files.get(file).map(|f| f.data.clone()))
}

/// The length of `file` (0 if it does not exist).
pub fn len(file: &str) -> usize {
    on_disk(|disk| disk.files.get(file).map_or(0, |f| f.data.len()))
}

/// Makes every write to `file` so far durable; takes `Config::fsync_latency`
/// of virtual time.
pub async fn sync(file: &str) {
    let (latency, lies) = with(|w| (w.config.fsync_latency, w.config.lost_fsyncs));
    if latency > Duration::ZERO {
        super::time::sleep(latency).await;
    }
    if lies && crate::fault!("sim: fsync lost") {
        return;
    }
    on_disk(|disk| {
        if let Some(f) = disk.files.get_mut(file) {
            f.durable = Some(f.data.clone());
            f.unsynced.clear();
        }
    })
}
