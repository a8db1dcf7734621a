//! A simulated disk per node: named files whose writes become durable only
//! on [`sync`]. The disk outlives crashes of its node; what a crash keeps of
//! unsynced writes is the world's disk model ([`crate::world::disk`]):
//! nominally nothing, with `sim: torn write` a prefix of them. With
//! `Config::lost_fsyncs`, a `sync` may also report success without making
//! anything durable (`sim: fsync lost`, a disk that lies; no protocol
//! survives that, so it is off by default).

use std::time::Duration;

use super::Sdk;
use super::world::with;
use crate::world::disk::Disk;

fn on_disk<R>(f: impl FnOnce(&mut Disk) -> R) -> R {
    with(|w| {
        let node = w.current_node();
        f(&mut w.nodes[node.index()].disk)
    })
}

/// Writes `bytes` at `offset` of `file` (created if missing; a gap reads
/// as zeros). Not durable until [`sync`].
pub fn write(file: &str, offset: usize, bytes: &[u8]) {
    on_disk(|disk| disk.write(file, offset, bytes))
}

/// Appends `bytes` to `file`.
pub fn append(file: &str, bytes: &[u8]) {
    let offset = len(file);
    write(file, offset, bytes)
}

/// Replaces the content of `file` with `bytes` (as one write at offset 0
/// after truncation; not durable until [`sync`]).
pub fn replace(file: &str, bytes: &[u8]) {
    on_disk(|disk| disk.replace(file, bytes))
}

/// The content of `file` (`None` if it does not exist).
pub fn read(file: &str) -> Option<Vec<u8>> {
    on_disk(|disk| disk.read(file).map(<[u8]>::to_vec))
}

/// The length of `file` (0 if it does not exist).
pub fn len(file: &str) -> usize {
    on_disk(|disk| disk.len(file))
}

/// Makes every write to `file` so far durable; takes `Config::fsync_latency`
/// of virtual time.
pub async fn sync(file: &str) {
    let (latency, lies) = with(|w| (w.config.fsync_latency, w.config.lost_fsyncs));
    if latency > Duration::ZERO {
        super::time::sleep(latency).await;
    }
    on_disk(|disk| disk.sync(&mut Sdk, file, lies));
}
