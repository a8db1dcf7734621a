//! `cargo dst-fuzz cc --kvm` and `run --kvm`: freestanding x86-64 guests
//! in dst's KVM virtual machine. examples/kvm's door controller (a fault
//! and a command order break "a locked door is closed") and parser (a null
//! dereference on a rare path) are found, shrunk and replayed; bad files
//! are one line and exit 4; a spinning guest is a timeout every time; the
//! door, built natively with libdst and run by the process executor,
//! takes the same decisions and fails alike. Skips, saying so, without
//! /dev/kvm.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{driver, find_and_replay, root, text};

/// Whether a VM can be made here (saying so when not).
fn have_kvm() -> bool {
    match dst_executors::kvm::vm::Vm::new(4 << 20) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: no KVM here ({})", e.0);
            false
        }
    }
}

/// A fresh directory with `source` built by `cc --kvm` into it.
fn guest(tag: &str, source: &Path) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("dst-kvm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let elf = dir.join(format!("{tag}.elf"));
    let elf = elf.to_str().unwrap().to_string();
    let cc = driver(&dir, &["cc", "--kvm", "-o", &elf, source.to_str().unwrap()]);
    assert_eq!(cc.status.code(), Some(0), "cc --kvm: {}", text(&cc));
    (dir, elf)
}

#[test]
fn the_door_and_the_parser_are_found_shrunk_and_replayed() {
    if !have_kvm() {
        return;
    }
    let (dir, door) = guest("door", &root().join("examples/kvm/door.c"));
    let (record, shown) = find_and_replay(&dir, &["--kvm", &door], "20000");
    assert_eq!(
        record["signature"]["message"], "a locked door is closed",
        "{record}"
    );
    assert!(
        shown.contains("\"door sensor glitch\" FIRED"),
        "the fault: {shown}"
    );

    let (dir, parser) = guest("parser", &root().join("examples/kvm/parser.c"));
    let (record, shown) = find_and_replay(&dir, &["--kvm", &parser], "20000");
    assert_eq!(record["signature"]["cause"], "page fault", "{record}");
    assert!(shown.contains("page fault at address 0x0 (read"), "{shown}");
    assert!(
        shown.contains("in parse (") && shown.contains("parser.c:24)"),
        "{shown}"
    );
    // Shrunk: the kind and the length that take the path, the payload 0.
    assert!(shown.contains("below  = 7 at"), "{shown}");
    assert!(shown.contains("below  = 13 at"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_guests_are_one_line_and_a_spinning_guest_times_out_every_time() {
    if !have_kvm() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dst-kvm-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.elf");
    std::fs::write(&cut, &std::fs::read("/bin/true").unwrap()[..2000]).unwrap();
    let noise = dir.join("noise.elf");
    std::fs::write(&noise, b"not an ELF at all").unwrap();
    for (file, says) in [
        (Path::new("/bin/true"), "not a dst KVM guest"),
        (cut.as_path(), "not an ELF file"),
        (noise.as_path(), "not an ELF file"),
    ] {
        let bad = driver(
            &dir,
            &["run", "--kvm", file.to_str().unwrap(), "--runs", "1"],
        );
        let shown = text(&bad);
        assert_eq!(bad.status.code(), Some(4), "{}: {shown}", file.display());
        assert!(shown.contains(says), "{}: {shown}", file.display());
        assert_eq!(shown.trim().lines().count(), 1, "{shown}");
    }
    let source = dir.join("spin.c");
    std::fs::write(
        &source,
        "#include \"dst.h\"\nint main(void) { volatile int x = 0; for (;;) x++; }\n",
    )
    .unwrap();
    let elf = dir.join("spin.elf");
    let elf = elf.to_str().unwrap();
    let cc = driver(&dir, &["cc", "--kvm", "-o", elf, source.to_str().unwrap()]);
    assert_eq!(cc.status.code(), Some(0), "{}", text(&cc));
    let run = driver(
        &dir,
        &[
            "run",
            "--kvm",
            elf,
            "--runs",
            "12",
            "--timeout-ms",
            "50",
            "--json",
            "--quiet",
        ],
    );
    let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        summary["findings"][0]["signature"]["kind"], "timeout",
        "{summary}"
    );
    let input = PathBuf::from(summary["findings"][0]["path"].as_str().unwrap()).join("input");
    let replay = driver(
        &dir,
        &[
            "replay",
            input.to_str().unwrap(),
            "--kvm",
            elf,
            "--timeout-ms",
            "50",
        ],
    );
    let shown = text(&replay);
    assert!(shown.contains("outcome: timeout"), "{shown}");
    assert!(shown.contains("replayed 3 times: identical"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_door_decides_and_fails_alike_natively_and_as_a_guest() {
    use dst_executors::Process;
    use dst_executors::kvm::executor::Kvm;
    if !have_kvm() {
        return;
    }
    // One source path for both builds: decision sites name __FILE__.
    let source = root().join("examples/kvm/door.c");
    let (dir, elf) = guest("door-levels", &source);
    let native = dir.join("door-native");
    common::native_with_libdst(&source, &native);
    let mut process = Process::new(&native, &[], std::time::Duration::from_secs(10)).unwrap();
    let mut kvm = Kvm::open(Path::new(&elf), std::time::Duration::from_secs(10)).unwrap();
    common::same_decisions_and_ends(
        &mut process,
        &mut kvm,
        "property \"a locked door is closed\" failed",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
