//! The process executor's shared-memory segments do not outlive the
//! explorer: dropped with the executor, and removed after a killed one.

use std::path::Path;
use std::time::Duration;

use dst_executors::Process;

fn segments_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("dst-region-{pid}-")))
        .collect()
}

#[test]
fn segments_are_removed_with_the_executor_and_after_a_killed_explorer() {
    let exec = Process::new(Path::new("/bin/true"), &[], Duration::from_secs(1)).unwrap();
    let name = exec.segment_name();
    assert!(Path::new("/dev/shm").join(&name[1..]).exists());
    drop(exec);
    assert!(!Path::new("/dev/shm").join(&name[1..]).exists());

    // A segment left by a process that no longer exists (a killed explorer)
    // is removed when the next executor is made.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = Path::new("/dev/shm").join(format!("dst-region-{dead}-0"));
    std::fs::write(&stale, b"left behind").unwrap();
    let exec = Process::new(Path::new("/bin/true"), &[], Duration::from_secs(1)).unwrap();
    assert!(!stale.exists(), "the stale segment is removed");
    assert!(segments_of(dead).is_empty());
    drop(exec);
}
