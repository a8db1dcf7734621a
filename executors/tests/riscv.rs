//! The emulator's machine on real static glibc programs (built with
//! Debian's riscv64-linux-gnu-gcc, which .ci/run installs): output, exit
//! status, and every bad file refused in one line.

use std::path::{Path, PathBuf};
use std::process::Command;

use dst_executors::riscv::machine::{Exit, Machine, check};

mod common;
use common::input;

/// Builds `source` as a static riscv64 program; `None` (saying so) without
/// the cross compiler.
fn build(name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("dst-rv-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let program = dir.join(name);
    let built = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O1", "-g"])
        .args(flags)
        .arg(&c)
        .arg("-o")
        .arg(&program)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: riscv64-linux-gnu-gcc is not installed");
        return None;
    }
    Some(program)
}

fn run(program: &Path, args: &[&str]) -> (Machine, Exit) {
    let bytes = std::fs::read(program).unwrap();
    let mut argv = vec![program.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let mut machine = Machine::load(&bytes, &argv, &[]).unwrap();
    let exit = machine.run(100_000_000);
    (machine, exit)
}

#[test]
fn a_glibc_program_prints_and_exits() {
    let Some(program) = build(
        "hello",
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
         int main(int argc, char **argv) {\n\
           char *copy = malloc(64); strcpy(copy, argv[1]);\n\
           printf(\"%s %d %.3f\\n\", copy, argc * 21, 1.5 / argc);\n\
           free(copy); return argc == 2 ? 3 : 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let (machine, exit) = run(&program, &["hi"]);
    assert_eq!(
        exit,
        Exit::Status(3),
        "stdout {:?} stderr {:?} calls {:?}",
        String::from_utf8_lossy(&machine.stdout),
        String::from_utf8_lossy(&machine.stderr),
        machine.calls
    );
    assert_eq!(String::from_utf8_lossy(&machine.stdout), "hi 42 0.750\n");
}

#[test]
fn crashes_and_aborts_are_signals() {
    let Some(program) = build(
        "crash",
        "#include <stdlib.h>\n\
         int main(int argc, char **argv) { if (argc > 2) abort();\n\
           if (argc > 1) *(volatile int *)16 = 1; return 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    assert_eq!(run(&program, &[]).1, Exit::Status(0));
    assert!(
        matches!(
            run(&program, &["x"]).1,
            Exit::Signal {
                signal: 11,
                address: 16,
                ..
            }
        ),
        "a store to an unmapped page"
    );
    assert!(
        matches!(run(&program, &["x", "y"]).1, Exit::Signal { signal: 6, .. }),
        "abort is SIGABRT"
    );
    // Named by the program's frame that called abort (unwound through
    // glibc), and a store to page 0 by its own line.
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let location = |args: &[&str]| {
        let mut argv = vec!["crash".to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut exec = Emulator::open(&program, &argv, 10_000_000).unwrap();
        match exec.execute(&[]) {
            End::Crash(dst_kernel::Outcome::Crash { location, .. }) => location.unwrap(),
            other => panic!("{other:?}"),
        }
    };
    let abort = location(&["x", "y"]);
    assert!(
        abort.starts_with("main (") && abort.ends_with("crash.c:2)"),
        "{abort}"
    );
    let store = location(&["x"]);
    assert!(
        store.starts_with("main (") && store.ends_with("crash.c:3)"),
        "{store}"
    );
}

#[test]
fn what_is_not_a_static_riscv64_program_is_refused_in_one_line() {
    let err = check(b"not an elf").err().unwrap();
    assert!(err.starts_with("not an ELF file"), "{err}");
    let native = std::fs::read("/bin/true").unwrap();
    let err = check(&native).err().unwrap();
    assert!(err.starts_with("not a riscv64 program"), "{err}");
    let Some(dynamic) = build("dynamic", "int main(void) { return 0; }\n", &[]) else {
        return;
    };
    let err = check(&std::fs::read(dynamic).unwrap()).err().unwrap();
    assert!(err.starts_with("not a static program"), "{err}");
    assert!(!err.contains('\n'));
}

#[test]
fn as_an_executor_the_clock_and_getrandom_are_decisions() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    // Aborts only after a clock jump of more than 30 s and the random byte 7.
    let Some(program) = build(
        "lease",
        "#include <stdlib.h>\n#include <time.h>\n#include <sys/random.h>\n\
         int main(void) { struct timespec a, b; unsigned char r = 0;\n\
           clock_gettime(CLOCK_MONOTONIC, &a); getrandom(&r, 1, 0);\n\
           clock_gettime(CLOCK_MONOTONIC, &b);\n\
           if (b.tv_sec - a.tv_sec > 30 && r % 8 == 7) abort(); return 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let bytes = std::fs::read(&program).unwrap();
    let mut exec = Emulator::new(&bytes, &["lease".to_string()], 10_000_000).unwrap();
    assert_eq!(exec.execute(&[]), End::Ok, "the nominal run passes");
    let decisions = exec
        .region()
        .header()
        .decisions
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        decisions >= 3,
        "getrandom and both clock readings decided: {decisions}"
    );
    let failing = (1u64..5000)
        .map(|seed| seed.to_le_bytes())
        .find(|input| matches!(exec.execute(input), End::Crash(_)))
        .expect("some seed jumps the clock and draws a 7");
    let first = exec.execute(&failing);
    assert!(
        matches!(&first, End::Crash(dst_kernel::Outcome::Crash { cause, .. }) if cause == "SIGABRT"),
        "{first:?}"
    );
    assert_eq!(exec.execute(&failing), first, "the same on replay");
    assert_eq!(
        exec.execute(&[]),
        End::Ok,
        "each run starts from the loaded program"
    );
    let edges = exec.coverage().edges.to_vec();
    let counted = edges.iter().filter(|&&c| c > 0).count();
    assert!(counted > 30, "branch edges counted: {counted}");
    // A program that spins ends by its instruction budget, every time.
    let Some(spin) = build("spin", "int main(void) { for (;;) {} }\n", &["-static"]) else {
        return;
    };
    let mut exec = Emulator::new(
        &std::fs::read(spin).unwrap(),
        &["spin".to_string()],
        1_000_000,
    )
    .unwrap();
    assert_eq!(exec.execute(&[]), End::Timeout);
    assert_eq!(exec.execute(&[]), End::Timeout);
}

#[test]
fn a_system_call_the_emulator_lacks_is_a_finding_naming_it() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let Some(program) = build(
        "socket",
        "#include <sys/socket.h>\nint main(void) { return socket(AF_INET, SOCK_STREAM, 0) < 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let mut exec = Emulator::new(
        &std::fs::read(program).unwrap(),
        &["socket".to_string()],
        10_000_000,
    )
    .unwrap();
    let End::Crash(dst_kernel::Outcome::Crash {
        cause,
        message,
        location,
    }) = exec.execute(&[])
    else {
        panic!("an unsupported call ends the run")
    };
    assert_eq!(cause, "unsupported system call");
    assert!(message.contains("socket (198)"), "{message}");
    assert_eq!(location.as_deref(), Some("socket (198)"));
}

/// Inputs of `len` pseudo-random bytes, one per seed (a fixed generator,
/// so the search below is the same on every machine).
fn build_example(name: &str) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/riscv/{name}.c"));
    build(
        name,
        &std::fs::read_to_string(source).unwrap(),
        &["-static", "-pthread"],
    )
}

#[test]
fn threads_run_one_at_a_time_and_a_preemption_loses_an_update() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let Some(program) = build_example("counter") else {
        return;
    };
    let mut exec = Emulator::open(&program, &["counter".to_string()], 10_000_000).unwrap();
    // Nominal: no preemption, each thread runs its loop whole.
    assert_eq!(exec.execute(&[]), End::Ok);
    let machine = exec.machine();
    assert_eq!(String::from_utf8_lossy(&machine.stdout), "counter 400\n");
    assert_eq!(machine.threads.len(), 3, "main and two threads");
    assert!(
        !machine.threads.switches.is_empty()
            && machine.threads.switches.iter().all(|s| !s.preempted),
        "the nominal run switches only where a thread waits or exits: {:?}",
        machine.threads.switches
    );
    let failing = (1u64..3000)
        .map(|seed| input(seed, 64))
        .find(|input| exec.execute(input) != End::Ok)
        .expect("some schedule preempts a thread between its load and its store");
    let first = exec.execute(&failing);
    let End::Crash(dst_kernel::Outcome::Crash { cause, .. }) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(cause, "SIGABRT");
    assert!(
        String::from_utf8_lossy(&exec.machine().stderr).starts_with("lost "),
        "{:?}",
        String::from_utf8_lossy(&exec.machine().stderr)
    );
    assert!(
        exec.machine().threads.switches.iter().any(|s| s.preempted),
        "a preemption did it"
    );
    let switches = exec.machine().threads.switches.clone();
    for _ in 0..3 {
        assert_eq!(exec.execute(&failing), first, "the same on replay");
        assert_eq!(
            exec.machine().threads.switches,
            switches,
            "the same schedule"
        );
    }
}

#[test]
fn threads_that_all_wait_are_a_deadlock_and_a_timed_wait_times_out() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    // The main thread holds the lock and joins the thread that wants it.
    let Some(program) = build(
        "deadlock",
        "#include <pthread.h>\n\
         static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n\
         static void *take(void *a) { pthread_mutex_lock(&m); return a; }\n\
         int main(void) { pthread_t t; pthread_mutex_lock(&m);\n\
           pthread_create(&t, 0, take, 0); pthread_join(t, 0); return 0; }\n",
        &["-static", "-pthread"],
    ) else {
        return;
    };
    let (_, exit) = run(&program, &[]);
    let Exit::Deadlock { waiting } = exit else {
        panic!("{exit:?}")
    };
    assert_eq!(waiting.len(), 2, "both threads wait: {waiting:?}");
    let mut exec = Emulator::open(&program, &["deadlock".to_string()], 10_000_000).unwrap();
    assert_eq!(
        exec.execute(&[]),
        End::Ok,
        "a property failure, not a crash"
    );
    assert_eq!(exec.catalog()[0].message, dst::catalog::BUILTIN[0].message);
    let header = exec.region().header();
    assert_eq!(
        header
            .first_failure
            .load(std::sync::atomic::Ordering::Relaxed),
        1,
        "the deadlock property failed"
    );

    // Here the thread gives up after a second of virtual time instead.
    let Some(program) = build(
        "timedlock",
        "#include <errno.h>\n#include <pthread.h>\n#include <time.h>\n\
         static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n\
         static void *take(void *a) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t);\n\
           t.tv_sec += 1; return (void *)(long)pthread_mutex_timedlock(&m, &t); }\n\
         int main(void) { pthread_t t; void *r; pthread_mutex_lock(&m);\n\
           pthread_create(&t, 0, take, 0); pthread_join(t, &r);\n\
           return (long)r == ETIMEDOUT ? 0 : 1; }\n",
        &["-static", "-pthread"],
    ) else {
        return;
    };
    let mut exec = Emulator::open(&program, &["timedlock".to_string()], 10_000_000).unwrap();
    assert_eq!(exec.execute(&[]), End::Ok, "{:?}", exec.machine().calls);
    let now = exec.machine().now;
    assert!(
        now >= 1_000_000_000,
        "a second of virtual time passed: {now}"
    );
}

#[test]
fn code_written_at_run_time_runs_as_written() {
    // `one` runs (and is decoded, cached), then is overwritten with
    // `li a0, 2; ret` and runs again: the new code runs.
    let Some(program) = build(
        "selfmod",
        "#include <string.h>\n#include <sys/mman.h>\n\
         __attribute__((noinline)) int one(void) { return 1; }\n\
         int main(void) { int (*volatile f)(void) = one; int a = f();\n\
           unsigned short patch[2] = {0x4509, 0x8082};\n\
           mprotect((void *)((long)one & ~4095L), 8192, PROT_READ | PROT_WRITE | PROT_EXEC);\n\
           memcpy((void *)one, patch, sizeof patch); __asm__ volatile(\"fence.i\");\n\
           int b = f(); return a * 10 + b; }\n",
        &["-static"],
    ) else {
        return;
    };
    let (_, exit) = run(&program, &[]);
    assert_eq!(exit, Exit::Status(12));
    // Restored from its snapshot, the next run starts with the original
    // code again (decodes of the patched code are not kept).
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let mut exec = Emulator::open(&program, &["selfmod".to_string()], 10_000_000).unwrap();
    let first = exec.execute(&[]);
    assert!(
        matches!(&first, End::Crash(dst_kernel::Outcome::Crash { message, .. }) if message.ends_with("status 12")),
        "{first:?}"
    );
    assert_eq!(exec.execute(&[]), first);
}

#[test]
fn protected_memory_faults_where_linux_would_and_the_place_is_named() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    // argv[1]: "literal" writes into a string literal (read-only data),
    // "guard" touches the page below an mprotect-ed mapping's end, "exec"
    // jumps into the stack.
    let Some(program) = build(
        "protect",
        "#include <string.h>\n#include <sys/mman.h>\n\
         int main(int argc, char **argv) {\n\
           if (argc < 2) return 0;\n\
           if (!strcmp(argv[1], \"literal\")) { char *s = (char *)\"abc\"; s[0] = 'x'; return s[0]; }\n\
           if (!strcmp(argv[1], \"guard\")) { char *p = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n\
             p[0] = 1; mprotect(p, 4096, PROT_NONE); return p[1]; }\n\
           if (!strcmp(argv[1], \"exec\")) { unsigned code[1] = {0x00008067}; return ((int (*)(void))code)(); }\n\
           if (!strcmp(argv[1], \"atomic\")) { static long words[2]; char *p = (char *)words + 1;\n\
             return (int)__atomic_fetch_add((long *)p, 1, __ATOMIC_SEQ_CST); }\n\
           return 1; }\n",
        &["-static"],
    ) else {
        return;
    };
    assert_eq!(run(&program, &[]).1, Exit::Status(0));
    for case in ["literal", "guard", "exec"] {
        let (_, exit) = run(&program, &[case]);
        assert!(
            matches!(exit, Exit::Signal { signal: 11, .. }),
            "{case}: {exit:?}"
        );
    }
    let (_, exit) = run(&program, &["atomic"]);
    assert!(
        matches!(exit, Exit::Signal { signal: 7, address, .. } if address % 8 == 1),
        "a misaligned atomic is SIGBUS: {exit:?}"
    );
    let mut exec = Emulator::open(
        &program,
        &["protect".to_string(), "literal".to_string()],
        10_000_000,
    )
    .unwrap();
    let End::Crash(dst_kernel::Outcome::Crash {
        cause, location, ..
    }) = exec.execute(&[])
    else {
        panic!("a crash")
    };
    assert_eq!(cause, "SIGSEGV");
    let location = location.unwrap();
    assert!(location.starts_with("main ("), "{location}");
    assert!(location.contains("protect.c:5"), "{location}");
}
