//! libdst from C: a program built with gcc against dst.h and libdst.so runs
//! in local mode exactly as a Rust one does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// target/debug (or release), where cargo put libdst.so.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds libdst itself: integration tests do not get the cdylib built.
fn build_libdst() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(manifest)
        .status()
        .expect("run cargo build for libdst");
    assert!(status.success());
    assert!(target_dir().join("libdst.so").exists());
}

fn build(name: &str, tag: &str) -> PathBuf {
    build_with(name, tag, &[])
}

fn build_with(name: &str, tag: &str, flags: &[&str]) -> PathBuf {
    build_libdst();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("dst-c-{name}-{tag}-{}", std::process::id()));
    let status = Command::new("cc")
        .args(flags)
        .args(["-std=c11", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(manifest.join(format!("tests/c/{name}.c")))
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-L")
        .arg(target_dir())
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", target_dir().display()))
        .status()
        .expect("run cc");
    assert!(
        status.success(),
        "the C example compiles and links against libdst"
    );
    out
}

fn run(binary: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(binary);
    for var in ["DST_SEED", "DST_INPUT", "DST_OUTPUT", "DST_TRACE"] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_c_program_runs_in_local_mode() {
    let binary = build("basic", "local");
    let out = std::env::temp_dir().join(format!("dst-c-basic-{}.jsonl", std::process::id()));
    let output = run(
        &binary,
        &[
            ("DST_SEED", "7"),
            ("DST_OUTPUT", out.to_str().unwrap()),
            ("DST_TRACE", "1"),
        ],
    );
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let failures: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("assertion failed"))
        .collect();
    assert_eq!(failures.len(), 1, "{stderr}");
    assert!(failures[0].contains("\"a C always that fails\""));
    assert!(failures[0].contains("basic.c:"));
    assert!(stderr.contains("details are not valid JSON"), "{stderr}");

    let lines = lines(&out);
    let about = |m: &str| -> Vec<&Value> { lines.iter().filter(|l| l["message"] == m).collect() };
    let unreached = about("a C sometimes nobody reaches");
    assert_eq!(
        unreached.len(),
        1,
        "known from the catalog section before any run"
    );
    assert_eq!(unreached[0]["hit"], false);
    let failing = about("a C always that fails");
    assert_eq!(failing[1]["condition"], false);
    assert_eq!(failing[1]["details"]["why"], "n is small");
    assert!(
        failing[1]["location"]["file"]
            .as_str()
            .unwrap()
            .ends_with("basic.c")
    );
    assert_eq!(
        about("n is sometimes large")[0]["kind"],
        "sometimes_greater_than"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "event" && l["details"]["nodes"] == 3)
    );
    let decisions: Vec<&Value> = lines.iter().filter(|l| l["type"] == "decision").collect();
    assert!(decisions.len() >= 4, "below, bool, fault, u64");

    // The same seed gives the same run; DST_INPUT drives it byte for byte.
    let again = run(&binary, &[("DST_SEED", "7")]);
    assert_eq!(again.stdout, output.stdout);
    let input = std::env::temp_dir().join(format!("dst-c-input-{}", std::process::id()));
    std::fs::write(&input, [0, 0, 0, 0, 0, 0, 0, 0, 42, 1, 0xF0]).unwrap();
    let replay = run(&binary, &[("DST_INPUT", input.to_str().unwrap())]);
    let stdout = String::from_utf8_lossy(&replay.stdout);
    assert!(stdout.starts_with("n=42 coin=1 u64=0"), "{stdout}");
}

#[test]
fn the_process_executor_runs_a_c_program_over_shared_memory() {
    use dst_executors::{Executor, Process};
    use dst_kernel::Signature;
    use std::time::Duration;

    let binary = build("basic", "process");
    let mut exec = Process::new(&binary, &[], Duration::from_secs(5)).unwrap();
    let catalog = exec.catalog();
    assert_eq!(
        catalog.len(),
        dst_sdk::catalog::BUILTIN.len() + 7,
        "read from the binary before any run"
    );

    let nominal = exec.run(&[]);
    assert_eq!(
        nominal.signature(),
        Some(Signature::Property {
            message: "a C always that fails".into()
        })
    );
    assert_eq!(nominal.decision_count, 4, "below, bool, fault, u64");
    assert_eq!(exec.run(&[]).trace_hash, nominal.trace_hash, "runs repeat");

    let record = exec.run(&[0, 0, 0, 0, 0, 0, 0, 0, 42, 1, 0xF0]);
    let values: Vec<u64> = record.decisions.iter().map(|d| d.value).collect();
    assert_eq!(values, [42, 1, 1, 0]);
    assert!(record.events.iter().any(
        |e| matches!(e, dst_sdk::region::Event::Lifecycle { name, .. } if name == "message lost")
    ));

    // A target given a segment it cannot use says so and exits with 86.
    let missing = Command::new(&binary)
        .env("DST_REGION", "/dst-no-such-segment")
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(86));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.starts_with("dst: DST_REGION=/dst-no-such-segment: "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);

    assert_eq!(
        exec.launch_mode(),
        "fork server",
        "libdst starts one before main"
    );

    // A header from another layout version is rejected before any write.
    let name = format!("/dst-test-version-{}", std::process::id());
    let cname = std::ffi::CString::new(name.clone()).unwrap();
    // SAFETY: creating, sizing and mapping a segment of this test's own; the
    // magic is at offset 0 of the header and the version at offset 8.
    unsafe {
        let fd = libc::shm_open(
            cname.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
            0o600,
        );
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, 4096), 0);
        let base = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        libc::close(fd);
        assert_ne!(base, libc::MAP_FAILED);
        base.cast::<u8>()
            .copy_from(dst_sdk::region::MAGIC.to_le_bytes().as_ptr(), 8);
        base.cast::<u8>().add(8).cast::<u32>().write_volatile(99);
        libc::munmap(base, 4096);
    }
    let wrong = Command::new(&binary)
        .env("DST_REGION", &name)
        .output()
        .unwrap();
    // SAFETY: removing the segment created above.
    unsafe { libc::shm_unlink(cname.as_ptr()) };
    assert_eq!(wrong.status.code(), Some(86));
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains("version 99"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);
}

#[test]
fn trace_pc_coverage_reaches_the_region() {
    use dst_executors::{Executor, Process};
    use std::time::Duration;

    let binary = build_with("basic", "coverage", &["-fsanitize-coverage=trace-pc"]);
    let mut exec = Process::new(&binary, &[], Duration::from_secs(5)).unwrap();
    let nominal = exec.run(&[]);
    assert!(
        nominal.coverage.len() > 5,
        "edges were counted: {:?}",
        nominal.coverage
    );
    assert_eq!(
        exec.run(&[]).coverage,
        nominal.coverage,
        "the same run, the same edges"
    );
    // The fault fires: the event branch runs, so new edges appear.
    let faulted = exec.run(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0]);
    let edges = |r: &dst_kernel::RunRecord| -> std::collections::BTreeSet<u32> {
        r.coverage.iter().map(|(i, _)| *i).collect()
    };
    assert!(
        !edges(&faulted).is_subset(&edges(&nominal)),
        "a new path gives new edges"
    );
    // Without instrumentation the map holds decision coverage only: a slot
    // per (decision site, value) pair at most.
    let plain = build("basic", "nocoverage");
    let mut plain = Process::new(&plain, &[], Duration::from_secs(5)).unwrap();
    let record = plain.run(&[]);
    assert!(record.coverage.len() as u64 <= record.decision_count);
    assert!(nominal.coverage.len() > record.coverage.len());
}

#[test]
fn clang_trace_pc_guard_coverage_reaches_the_region() {
    use dst_executors::{Executor, Process};
    use std::time::Duration;

    // CI installs clang; on a machine without it there is nothing to test.
    if Command::new("clang").arg("--version").output().is_err() {
        eprintln!("clang is not installed: skipping the trace-pc-guard test");
        return;
    }
    build_libdst();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let binary = std::env::temp_dir().join(format!("dst-c-basic-guard-{}", std::process::id()));
    let object = binary.with_extension("o");
    // Instrument when compiling, not when linking: with the flag at link
    // time, clang adds its own (weak) callbacks, which win over libdst's.
    let status = Command::new("clang")
        .args(["-std=c11", "-c", "-fsanitize-coverage=trace-pc-guard", "-o"])
        .arg(&object)
        .arg(manifest.join("tests/c/basic.c"))
        .arg("-I")
        .arg(manifest.join("include"))
        .status()
        .unwrap();
    assert!(status.success());
    let status = Command::new("clang")
        .arg("-o")
        .arg(&binary)
        .arg(&object)
        .arg("-L")
        .arg(target_dir())
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", target_dir().display()))
        .status()
        .unwrap();
    assert!(status.success());
    let mut exec = Process::new(&binary, &[], Duration::from_secs(5)).unwrap();
    let nominal = exec.run(&[]);
    assert!(nominal.coverage.len() > 5, "{:?}", nominal.coverage);
    assert_eq!(exec.run(&[]).coverage, nominal.coverage);
    let faulted = exec.run(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0]);
    let edges = |r: &dst_kernel::RunRecord| -> std::collections::BTreeSet<u32> {
        r.coverage.iter().map(|(i, _)| *i).collect()
    };
    assert!(!edges(&faulted).is_subset(&edges(&nominal)));
}
