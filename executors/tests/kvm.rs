//! The KVM virtual machine on hand-assembled guest code: a hypercall, a
//! page fault at address 0 with its rip, and a reset that runs it again.
//! Skips, saying so, where /dev/kvm is missing or a VM cannot be made.

use dst_executors::kvm::vm::{Exit, PROGRAM_BASE, Vm};

fn vm() -> Option<Vm> {
    match Vm::new(8 << 20) {
        Ok(vm) => Some(vm),
        Err(e) => {
            eprintln!("skipped: no KVM here ({})", e.0);
            None
        }
    }
}

#[test]
fn a_hypercall_then_a_null_dereference() {
    let Some(mut vm) = vm() else {
        return;
    };
    let code: &[u8] = &[
        0xB8, 0x07, 0x00, 0x00, 0x00, // mov eax, 7
        0xBF, 0x2A, 0x00, 0x00, 0x00, // mov edi, 42
        0xE6, 0xE1, // out 0xE1, al
        0x48, 0x8B, 0x04, 0x25, 0x00, 0x00, 0x00, 0x00, // mov rax, [0]
    ];
    let at = PROGRAM_BASE as usize;
    vm.memory_mut()[at..at + code.len()].copy_from_slice(code);
    let stack = (vm.size() - 0x1000) as u64;
    for _ in 0..3 {
        vm.reset_cpu(PROGRAM_BASE, stack).unwrap();
        eprintln!("rflags {:#x}", vm.vcpu.get_regs().unwrap().rflags);
        let first = vm.run();
        assert!(matches!(first, Exit::Hypercall([7, 42, ..])), "{first:?}");
        let rip = vm.vcpu.get_regs().unwrap().rip;
        eprintln!(
            "rip after the out: {rip:#x} (out at {:#x})",
            PROGRAM_BASE + 10
        );
        let second = vm.run();
        assert_eq!(
            second,
            Exit::Exception {
                vector: 14,
                error: 4, // a user-mode read of a page not present
                rip: PROGRAM_BASE + 12,
                cr2: 0
            }
        );
    }
}

/// Builds `source` as a KVM guest with the runtime (as `cc --kvm` does).
fn guest(name: &str, source: &str) -> std::path::PathBuf {
    guest_with(name, source, &dst_executors::kvm::build::region_header())
}

/// [`guest`], its runtime built with `region` as its `dst_region.h`.
fn guest_with(name: &str, source: &str, region: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("dst-kvm-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dst_region.h"), region).unwrap();
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let flags = [
        "-O1",
        "-g",
        "-ffreestanding",
        "-fno-pic",
        "-no-pie",
        "-fno-stack-protector",
        "-fcf-protection=none",
        "-ffunction-sections",
    ];
    let include = root.join("sdk-c/include");
    let rt = dir.join("rt.o");
    let status = std::process::Command::new("cc")
        .args(flags)
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(&dir)
        .arg("-c")
        .arg(root.join("sdk-c/guest/dst_kvm.c"))
        .arg("-o")
        .arg(&rt)
        .status()
        .unwrap();
    assert!(status.success());
    let out = dir.join(format!("{name}.elf"));
    let status = std::process::Command::new("cc")
        .args(flags)
        .args([
            "-fsanitize-coverage=trace-pc",
            "-nostdlib",
            "-static",
            "-Wl,--gc-sections",
            "-T",
        ])
        .arg(root.join("sdk-c/guest/kvm.ld"))
        .arg("-I")
        .arg(&include)
        .arg(&c)
        .arg(&rt)
        .arg(dst_executors::kvm::build::build_core(&dir).expect("the runtime's core builds"))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// An input whose first decision byte is `byte` (after the 8-byte tail
/// seed, here 0).
fn explicit(byte: u8) -> Vec<u8> {
    let mut input = vec![0; 8];
    input.push(byte);
    input
}

#[test]
fn a_guest_decides_asserts_and_faults_through_the_executor() {
    use dst_executors::kvm::executor::Kvm;
    use dst_executors::{End, Executor};
    if vm().is_none() {
        return;
    }
    let program = guest(
        "table",
        "#include \"dst.h\"\n\
         static int table[16];\n\
         int main(void) {\n\
           int n = (int)dst_random_below(16);\n\
           table[n] = 1;\n\
           DST_SOMETIMES(n == 3, \"three\", 0);\n\
           DST_ALWAYS(n != 9, \"never nine\", 0);\n\
           if (n == 12) { volatile int *p = 0; return *p; }\n\
           return table[n] - 1; }\n",
    );
    let mut exec = Kvm::open(&program, std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(exec.execute(&[]), End::Ok, "the nominal run");
    // The region and the stream's tail are in guest memory: assertions and
    // decisions take no exit; the end of the run is one.
    assert_eq!(exec.exits, 1, "only the end of the run");
    assert_eq!(exec.execute(&explicit(5)), End::Ok);
    assert_eq!(exec.exits, 1, "only the end of the run");
    let messages: Vec<&str> = exec.catalog().iter().map(|s| s.message.as_str()).collect();
    assert!(messages.contains(&"never nine"), "{messages:?}");
    let End::Crash(dst_kernel::Outcome::Crash {
        cause,
        message,
        location,
    }) = exec.execute(&explicit(12))
    else {
        panic!("12 dereferences null")
    };
    assert_eq!(cause, "page fault");
    assert!(message.contains("at address 0x0 (read"), "{message}");
    assert!(location.unwrap().contains("table.c:8"), "{message}");
    assert_eq!(
        exec.execute(&explicit(9)),
        End::Ok,
        "a property failure is not a crash"
    );
    let failed = exec
        .region()
        .header()
        .first_failure
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_ne!(failed, 0, "never nine failed");
    for _ in 0..3 {
        assert_eq!(
            exec.execute(&[]),
            End::Ok,
            "each run starts from the snapshot"
        );
    }
    let edges = exec.coverage().edges.to_vec();
    assert!(edges.iter().any(|&c| c > 0), "edges counted");
}

#[test]
fn the_guest_writes_the_region_as_the_sdk_does() {
    use dst_executors::kvm::executor::Kvm;
    use dst_executors::{End, Executor};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    if vm().is_none() {
        return;
    }
    // Every kind of decision and assertion the runtime takes itself.
    let program = guest(
        "kinds",
        "#include \"dst.h\"\n\
         int main(void) {\n\
           unsigned long total = 0;\n\
           for (int i = 0; i < 6; i++) {\n\
             unsigned long n = dst_random_below(1000);\n\
             if (dst_random_bool()) total += n;\n\
             if (dst_fault(\"drop\")) total ^= dst_random_u64() % 5000;\n\
             DST_SOMETIMES_GT(total, 2500, \"the total passes 2500\", 0);\n\
             DST_ALWAYS_LT(total, 4000, \"the total stays under 4000\", 0);\n\
             DST_REACHABLE(\"a round\", 0);\n\
           }\n\
           return 0; }\n",
    );
    let mut exec = Kvm::open(&program, std::time::Duration::from_secs(5)).unwrap();
    let sites = |exec: &Kvm| -> Vec<(u64, u64, u32, u64)> {
        let view = exec.region();
        let load = |a: &AtomicU64| a.load(Relaxed);
        (0..exec.catalog().len())
            .map(|i| {
                let s = view.site(i).unwrap();
                let flags = s.flags.load(Relaxed);
                (
                    load(&s.evaluations),
                    load(&s.true_count),
                    flags,
                    load(&s.guidance),
                )
            })
            .collect()
    };
    let (mut failures, mut tails) = (0, 0);
    for seed in 0u64..300 {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let len = 8 + (seed as usize % 40);
        let input: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        // Plain: the guest writes the region itself.
        let end = exec.execute(&input);
        let plain = dst_kernel::RunRecord::read(exec.region(), end.clone(), exec.catalog());
        let (plain_sites, plain_exits) = (sites(&exec), exec.exits);
        // Traced: every call goes to the host's SDK.
        let traced = dst_kernel::finding::traced_run(&mut exec, &input);
        assert_eq!(plain.decisions, traced.decisions, "seed {seed}: decisions");
        assert_eq!(
            plain.consumed, traced.consumed,
            "seed {seed}: bytes consumed"
        );
        assert_eq!(
            plain.trace_hash, traced.trace_hash,
            "seed {seed}: trace hash"
        );
        assert_eq!(plain.outcome, traced.outcome, "seed {seed}: outcome");
        assert_eq!(plain_sites, sites(&exec), "seed {seed}: assertion state");
        if end != End::Ok || plain.outcome.signature().is_some() {
            failures += 1;
        }
        // The end, and the report of a first failure: nothing else exits,
        // not even decisions past the input's bytes (the tail is in guest
        // memory too).
        assert!(plain_exits <= 2, "seed {seed}: {plain_exits} exits");
        if plain.consumed > (len - 8) as u64 {
            tails += 1;
        }
    }
    assert!(failures > 0, "some inputs break the always");
    assert!(tails > 0, "some inputs run past their explicit bytes");
}

#[test]
fn both_resets_start_every_run_from_the_snapshot() {
    use dst_executors::Executor;
    use dst_executors::kvm::executor::{Kvm, Reset};
    if vm().is_none() {
        return;
    }
    // State that leaks from run to run unless the reset puts it back.
    let program = guest(
        "leak",
        "#include \"dst.h\"\n\
         static int runs; static char big[20000];\n\
         int main(void) { runs++; big[(int)dst_random_below(20000)]++;\n\
           for (int i = 0; i < 20000; i++) if (big[i] > 1) return 2;\n\
           return runs == 1 ? 0 : 1; }\n",
    );
    for reset in [Reset::Copy, Reset::DirtyLog] {
        let mut exec = Kvm::open_with(&program, std::time::Duration::from_secs(5), reset).unwrap();
        for byte in [0u8, 7, 7, 200, 0] {
            let mut input = explicit(byte);
            input.push(byte);
            assert_eq!(
                exec.execute(&input),
                dst_executors::End::Ok,
                "{reset:?}, byte {byte}"
            );
        }
        assert!(exec.restored_bytes() > 0, "{reset:?}");
    }
}

#[test]
fn a_run_past_the_tail_in_guest_memory_continues_on_the_host() {
    use dst_executors::Executor;
    use dst_executors::kvm::executor::{Kvm, TAIL_BYTES};
    if vm().is_none() {
        return;
    }
    // More one-byte decisions than the tail the guest reads itself: the
    // rest are hypercalls, and the host's stream must continue where the
    // guest's left off.
    let program = guest(
        "long",
        &format!(
            "#include \"dst.h\"\n\
             int main(void) {{ unsigned long sum = 0;\n\
               for (int i = 0; i < {}; i++) sum += dst_random_bool();\n\
               DST_ALWAYS(sum % 7 != 3, \"the sum is not 3 mod 7\", 0);\n\
               return 0; }}\n",
            TAIL_BYTES + 300
        ),
    );
    let mut exec = Kvm::open(&program, std::time::Duration::from_secs(30)).unwrap();
    // One seed: a traced run takes every decision on the host, one exit
    // each (seconds).
    let seed = 3u64;
    let input = seed.to_le_bytes();
    let end = exec.execute(&input);
    let plain = dst_kernel::RunRecord::read(exec.region(), end, exec.catalog());
    let exits = exec.exits;
    let traced = dst_kernel::finding::traced_run(&mut exec, &input);
    assert!(
        exits > 300,
        "seed {seed}: decisions past the tail exit ({exits})"
    );
    assert_eq!(plain.consumed, traced.consumed, "seed {seed}");
    assert_eq!(plain.trace_hash, traced.trace_hash, "seed {seed}");
    assert_eq!(plain.outcome, traced.outcome, "seed {seed}");
}

#[test]
fn what_the_guest_sees_of_the_machine_is_dsts() {
    use dst_executors::kvm::executor::{Kvm, REGION_AT};
    use dst_executors::{End, Executor};
    if vm().is_none() {
        return;
    }
    let program = guest(
        "machine",
        &format!(
            "#include \"dst.h\"\n\
             static unsigned long tsc(void) {{ unsigned lo, hi;\n\
               __asm__ volatile(\"rdtsc\" : \"=a\"(lo), \"=d\"(hi)); return (unsigned long)hi << 32 | lo; }}\n\
             int main(void) {{\n\
               int what = (int)dst_random_below(6);\n\
               if (what == 1) {{ unsigned a = 1, b, c, d; __asm__ volatile(\"cpuid\" : \"+a\"(a), \"=b\"(b), \"=c\"(c), \"=d\"(d));\n\
                 return (c >> 30) & 1; }}\n\
               if (what == 2) {{ unsigned long t0 = tsc(), t1 = tsc(); return t1 - t0 > 1000000 ? 3 : 0; }}\n\
               if (what == 3) __asm__ volatile(\"ud2\");\n\
               if (what == 4) {{ volatile int zero = 0; return 10 / zero; }}\n\
               if (what == 5) *(volatile unsigned long *){REGION_AT:#x} = 0;\n\
               return 0; }}\n"
        ),
    );
    let mut exec = Kvm::open(&program, std::time::Duration::from_secs(5)).unwrap();
    let run = |exec: &mut Kvm, what: u8, jump: bool| {
        let mut input = explicit(what);
        input.push(0); // the first RDTSC's step: 1 us
        input.push(if jump { 0xFF } else { 0 }); // the second's: a jump, or 1 us
        exec.execute(&input)
    };
    // kvm-pvm runs the guest's user mode on the host CPU: CPUID is dst's
    // table only where the host CPU has CPUID faulting (Intel's; not the
    // AMD EPYC hosts, where KVM accepts the MSR and CPUID stays the host's).
    let faulting = std::fs::read_to_string("/proc/cpuinfo")
        .is_ok_and(|info| info.split_whitespace().any(|flag| flag == "cpuid_fault"));
    if faulting {
        assert_eq!(run(&mut exec, 1, false), End::Ok, "CPUID has no RDRAND");
    } else {
        eprintln!("not checked: this host's CPU has no CPUID faulting");
    }
    assert_eq!(run(&mut exec, 2, false), End::Ok);
    if exec.exits == 3 {
        // Both RDTSCs trapped (CR4.TSD) and were answered with virtual time.
        let jumped = run(&mut exec, 2, true);
        assert!(
            matches!(&jumped, End::Crash(dst_kernel::Outcome::Crash { message, .. }) if message == "main returned 3"),
            "a decided clock jump: {jumped:?}"
        );
    } else {
        eprintln!(
            "not checked: RDTSC is not trapped by this KVM (kvm-pvm runs the guest's user mode \
             on the host CPU, where CR4.TSD does not apply)"
        );
    }
    let cause = |end: End| match end {
        End::Crash(dst_kernel::Outcome::Crash { cause, .. }) => cause,
        other => panic!("{other:?}"),
    };
    assert_eq!(cause(run(&mut exec, 3, false)), "invalid opcode");
    assert_eq!(cause(run(&mut exec, 4, false)), "divide error");
    assert_eq!(
        cause(run(&mut exec, 5, false)),
        "region",
        "a scribbled header"
    );
    assert_eq!(run(&mut exec, 0, false), End::Ok, "the header was put back");
}

#[test]
fn a_guest_built_for_another_region_layout_is_refused_in_one_line() {
    use dst_executors::kvm::executor::Kvm;
    if vm().is_none() {
        return;
    }
    let current = dst_executors::kvm::build::region_header();
    let version = format!("#define DST_REGION_VERSION {:#x}ull", dst::region::VERSION);
    assert!(current.contains(&version), "{current}");
    let older = current.replace(
        &version,
        &format!(
            "#define DST_REGION_VERSION {:#x}ull",
            dst::region::VERSION - 1
        ),
    );
    let source = "#include \"dst.h\"\nint main(void) { return (int)dst_random_below(2); }\n";
    let program = guest_with("older", source, &older);
    let err = Kvm::open(&program, std::time::Duration::from_secs(5))
        .err()
        .expect("a guest built for another layout is refused");
    assert!(
        err.contains("another region layout") && !err.contains('\n'),
        "{err}"
    );
    // The same program with the current layout runs.
    let program = guest("current", source);
    assert!(Kvm::open(&program, std::time::Duration::from_secs(5)).is_ok());
}
