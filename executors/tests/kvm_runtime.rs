//! The KVM guest runtime's region code (`sdk-c/guest/dst_kvm.c`, built
//! with the `dst_region.h` the executor generates, and the dst-core crate
//! it links as every guest does) against the Rust run protocol
//! (`dst::protocol::Recorder`), without /dev/kvm: the runtime is
//! compiled natively (`DST_KVM_NATIVE_TEST`) into a harness that takes
//! decisions and evaluates assertions on a region image the test wrote,
//! logging each call; the test replays the same calls through a recorder
//! on a region reset with the same input, and both regions must hold the
//! same decisions, cursor, trace hash, decision coverage, site states and
//! first failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use dst::catalog::{self, SiteInfo};
use dst::decision::{self, Kind, Value};
use dst::protocol::{Recorder, SiteText};
use dst::region::{Layout, Region};
use dst_executors::kvm::executor::TAIL_BYTES;

const HARNESS: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "dst.h"
#include "dst_region.h"

volatile struct dst__header *dst__test_region;
const uint8_t *dst__test_tail;

/* What needs the host: a first failure's report is logged, anything
 * else (a decision past the tail) ends the harness. */
long dst__test_hc(long n, long a, long b, long c, long d, long e, long f) {
    (void)b; (void)c; (void)d; (void)e; (void)f;
    if (n == 7) { printf("report %ld\n", a); return 0; }
    fprintf(stderr, "hypercall %ld\n", n);
    exit(3);
}

static void *load(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) exit(4);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *bytes = aligned_alloc(64, (*len + 63) / 64 * 64);
    if (fread(bytes, 1, *len, f) != *len) exit(4);
    fclose(f);
    return bytes;
}

static uint64_t below(uint64_t n, uint32_t line) {
    uint32_t slot = 0;
    uint64_t v = dst_random_below_at(n, "harness.c", line, &slot);
    printf("below %llu %u %llu\n", (unsigned long long)n, line, (unsigned long long)v);
    return v;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    size_t len, tail_len;
    dst__test_region = load(argv[1], &len);
    dst__test_tail = load(argv[2], &tail_len);
    for (uint32_t i = 0; i < 40; i++) {
        uint32_t slot = 0;
        switch (below(7, 1)) {
        case 0: {
            uint64_t v = dst_random_u64_at("harness.c", 10 + i, &slot);
            printf("u64 %u %llu\n", 10 + i, (unsigned long long)v);
            break;
        }
        case 1: below(1000, 100 + i); break;
        case 2: {
            int v = dst_random_bool_at("harness.c", 200, &slot);
            printf("bool 200 %d\n", v);
            break;
        }
        case 3: {
            int v = dst_fault_at("disk full", "harness.c", 300);
            printf("fault %d disk full\n", v);
            break;
        }
        case 4: {
            uint64_t x = below(16, 400);
            DST_ALWAYS(x != 7, "never seven", NULL);
            printf("assert %d never seven\n", x != 7);
            DST_SOMETIMES(x > 12, "sometimes above twelve", NULL);
            printf("assert %d sometimes above twelve\n", x > 12);
            break;
        }
        case 5: {
            uint64_t x = below(100000, 500);
            DST_ALWAYS_LT(x, 99000, "below the limit", NULL);
            printf("cmp %d %llu 99000 below the limit\n", x < 99000, (unsigned long long)x);
            DST_SOMETIMES_GT(x, 90000, "close to the limit", NULL);
            printf("cmp %d %llu 90000 close to the limit\n", x > 90000, (unsigned long long)x);
            break;
        }
        default: break;
        }
    }
    FILE *out = fopen(argv[3], "wb");
    if (!out || fwrite((void *)dst__test_region, 1, len, out) != len) return 5;
    fclose(out);
    return 0;
}
"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the harness with the runtime natively; its path.
fn harness(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("dst_region.h"),
        dst_executors::kvm::build::region_header(),
    )
    .unwrap();
    std::fs::write(dir.join("harness.c"), HARNESS).unwrap();
    let out = dir.join("harness");
    let status = Command::new("cc")
        .args(["-O1", "-g", "-DDST_KVM_NATIVE_TEST", "-I"])
        .arg(root().join("sdk-c/include"))
        .arg("-I")
        .arg(dir)
        .arg(dir.join("harness.c"))
        .arg(root().join("sdk-c/guest/dst_kvm.c"))
        .arg(dst_executors::kvm::build::build_core(dir).expect("the runtime's core builds"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("run cc");
    assert!(status.success(), "the harness builds");
    out
}

/// A pseudo-random input: its seed (the stream's tail) and `explicit`
/// bytes.
fn input(seed: u64, explicit: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut bytes = seed.to_le_bytes().to_vec();
    bytes.extend((0..explicit).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 24) as u8
    }));
    bytes
}

/// The tail the KVM executor writes into guest memory for `input`.
fn tail(input: &[u8]) -> Vec<u8> {
    let mut stream = decision::Stream::new(decision::tail_seed(input));
    let mut explicit = vec![0; decision::explicit(input).len()];
    stream.read(input, &mut explicit);
    let mut tail = vec![0; TAIL_BYTES];
    stream.read(input, &mut tail);
    tail
}

/// The harness's log replayed through `recorder`: each decision taken
/// again (its value must be the one the runtime logged), each assertion
/// evaluated at the catalog index the executor reads from the ELF.
fn replay(recorder: &mut Recorder<&Region>, log: &str, catalog: &[SiteInfo]) {
    let site = |message: &str| {
        let info = catalog
            .iter()
            .find(|s| s.message == message)
            .unwrap_or_else(|| panic!("{message:?} in the catalog"));
        (info.index as usize, info.kind)
    };
    let at = |line: u32| {
        let id = catalog::site_hash("harness.c", line, 0);
        SiteText {
            id,
            file: "harness.c",
            line,
            column: 0,
            name: None,
        }
    };
    for line in log.lines() {
        let words: Vec<&str> = line.splitn(5, ' ').collect();
        let number = |i: usize| words[i].parse::<u64>().unwrap();
        match words[0] {
            "below" => {
                let (n, at_line, logged) = (number(1), number(2) as u32, number(3));
                let width = decision::below_width(n);
                let v = recorder.decide_at(
                    Kind::Below,
                    at(at_line),
                    &mut [0; 8][..width],
                    Value::Mod(n),
                );
                assert_eq!(v, logged, "{line}");
            }
            "u64" => {
                let v = recorder.decide_at(Kind::U64, at(number(1) as u32), &mut [0; 8], Value::Be);
                assert_eq!(v, number(2), "{line}");
            }
            "bool" => {
                let v = recorder.decide_at(Kind::Bool, at(number(1) as u32), &mut [0], Value::Bit);
                assert_eq!(v, number(2), "{line}");
            }
            "fault" => {
                let name = line.splitn(3, ' ').nth(2).unwrap();
                let site = SiteText {
                    id: catalog::site_hash(name, 0, 0),
                    file: "harness.c",
                    line: 300,
                    column: 0,
                    name: Some(name),
                };
                let v = recorder.decide_at(
                    Kind::Fault,
                    site,
                    &mut [0],
                    Value::AtLeast(decision::FAULT_THRESHOLD),
                );
                assert_eq!(v, number(1), "{line}");
            }
            "assert" => {
                let message = line.splitn(3, ' ').nth(2).unwrap();
                let (index, kind) = site(message);
                recorder.evaluate(index, kind, number(1) != 0, f64::NAN);
            }
            "cmp" => {
                let message = line.splitn(5, ' ').nth(4).unwrap();
                let (index, kind) = site(message);
                let (left, right) = (number(2) as f64, number(3) as f64);
                recorder.evaluate(index, kind, number(1) != 0, kind.score(left - right));
            }
            "report" => {}
            other => panic!("an unknown log line {other:?}"),
        }
    }
}

#[test]
fn the_kvm_guest_runtime_writes_what_the_rust_protocol_writes() {
    let dir = std::env::temp_dir().join(format!("dst-kvm-runtime-{}", std::process::id()));
    let program = harness(&dir);
    let bytes = std::fs::read(&program).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let catalog = dst_executors::elf::guest_catalog(&file).unwrap();
    assert_eq!(
        catalog.len(),
        catalog::BUILTIN.len() + 4,
        "the harness's four assertion sites: {:?}",
        catalog.iter().map(|s| &s.message).collect::<Vec<_>>()
    );
    let layout = Layout {
        input_capacity: 256,
        coverage_size: dst_executors::inprocess::DECISION_COVERAGE,
        sites_capacity: catalog.len(),
        decisions_capacity: 256,
        events_capacity: 1 << 12,
    };
    let mut failures = 0;
    for seed in 0..40u64 {
        // Seed 0 is the nominal tail; every fourth input is only a seed.
        let input = input(seed, if seed % 4 == 0 { 0 } else { 64 });
        let mut image = Region::new(layout);
        image.view().reset(&input, 0);
        let (region_file, tail_file, out_file) =
            (dir.join("region"), dir.join("tail"), dir.join("region.out"));
        std::fs::write(&region_file, image.bytes_mut()).unwrap();
        std::fs::write(&tail_file, tail(&input)).unwrap();
        let run = Command::new(&program)
            .arg(&region_file)
            .arg(&tail_file)
            .arg(&out_file)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "seed {seed}: {:?} {}",
            run.status,
            String::from_utf8_lossy(&run.stderr)
        );
        let log = String::from_utf8(run.stdout).unwrap();
        failures += log.lines().filter(|l| l.starts_with("report")).count();
        // The runtime's region, as it left it.
        let mut written = std::fs::read(&out_file).unwrap();
        let len = written.len();
        // SAFETY: `written` holds `len` bytes and outlives `theirs`.
        let theirs = unsafe { Region::borrowed(written.as_mut_ptr(), len) }
            .unwrap_or_else(|e| panic!("seed {seed}: the runtime's region: {e}"));
        // The same calls through the Rust protocol.
        let ours = Region::new(layout);
        ours.view().reset(&input, 0);
        replay(&mut Recorder::new(&ours), &log, &catalog);
        let (a, b) = (theirs.view(), ours.view());
        let header = |r: dst::region::RegionRef<'_>| {
            let h = r.header();
            let load =
                |f: &std::sync::atomic::AtomicU64| f.load(std::sync::atomic::Ordering::Relaxed);
            [
                load(&h.cursor),
                load(&h.decisions),
                load(&h.trace_hash),
                load(&h.first_failure),
                load(&h.status),
            ]
        };
        assert_eq!(
            header(a),
            header(b),
            "seed {seed}: cursor, decisions, trace hash, first failure, status"
        );
        assert!(header(a)[1] > 40, "seed {seed}: the harness decided");
        assert_eq!(
            a.decisions(),
            b.decisions(),
            "seed {seed}: decision records"
        );
        let coverage = |r: dst::region::RegionRef<'_>| {
            let (ptr, len) = r.coverage_ptr();
            // SAFETY: the coverage section of a validated region.
            unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()
        };
        assert_eq!(coverage(a), coverage(b), "seed {seed}: decision coverage");
        for index in 0..catalog.len() {
            let state = |r: dst::region::RegionRef<'_>| {
                let s = r.site(index).unwrap();
                let load =
                    |f: &std::sync::atomic::AtomicU64| f.load(std::sync::atomic::Ordering::Relaxed);
                (
                    s.flags.load(std::sync::atomic::Ordering::Relaxed),
                    load(&s.evaluations),
                    load(&s.true_count),
                    load(&s.guidance),
                )
            };
            assert_eq!(state(a), state(b), "seed {seed}: site {index}");
        }
    }
    assert!(failures > 0, "some inputs fail an always (a report each)");
    let _ = std::fs::remove_dir_all(&dir);
}
