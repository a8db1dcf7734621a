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
        String::from_utf8_lossy(&machine.kernel.stdout),
        String::from_utf8_lossy(&machine.kernel.stderr),
        machine.calls
    );
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "hi 42 0.750\n"
    );
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
        "memfd",
        "#define _GNU_SOURCE\n#include <sys/mman.h>\nint main(void) { return memfd_create(\"x\", 0) < 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let mut exec = Emulator::new(
        &std::fs::read(program).unwrap(),
        &["memfd".to_string()],
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
    assert!(message.contains("memfd_create (279)"), "{message}");
    assert_eq!(location.as_deref(), Some("memfd_create (279)"));
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
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "counter 400\n"
    );
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
        String::from_utf8_lossy(&exec.machine().kernel.stderr).starts_with("lost "),
        "{:?}",
        String::from_utf8_lossy(&exec.machine().kernel.stderr)
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

#[test]
fn a_thread_spinning_on_another_s_flag_lets_it_run_when_its_time_slice_ends() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::riscv::threads::Why;
    use dst_executors::{End, Executor};
    let Some(program) = build(
        "spin",
        "#include <pthread.h>\n#include <stdio.h>\n\
         static volatile int flag;\n\
         static void *setter(void *arg) { (void)arg; flag = 1; return 0; }\n\
         int main(void) {\n\
           pthread_t t; pthread_create(&t, 0, setter, 0);\n\
           long spins = 0; while (!flag) spins++;\n\
           pthread_join(t, 0); printf(\"spun %s\\n\", spins > 0 ? \"yes\" : \"no\"); return 0; }\n",
        &["-static", "-pthread"],
    ) else {
        return;
    };
    let mut exec = Emulator::open(&program, &["spin".to_string()], 10_000_000).unwrap();
    // Nominal: main runs on after clone and spins until the kernel's
    // timer preempts it; then the setter runs (without time slices the
    // spin ran out of instructions).
    assert_eq!(exec.execute(&[]), End::Ok);
    let machine = exec.machine();
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "spun yes\n"
    );
    let preemptions: Vec<_> = machine
        .threads
        .switches
        .iter()
        .filter(|s| s.why == Why::Preempt && s.preempted)
        .cloned()
        .collect();
    assert_eq!(preemptions.len(), 1, "{:?}", machine.threads.switches);
    assert!(
        preemptions[0].at >= dst_executors::riscv::threads::QUANTUM,
        "a whole slice first: {:?}",
        preemptions[0]
    );
    let switches = machine.threads.switches.clone();
    assert_eq!(exec.execute(&[]), End::Ok);
    assert_eq!(
        exec.machine().threads.switches,
        switches,
        "the same on replay"
    );
}

#[test]
fn the_start_up_facts_and_signal_actions_are_linux_s() {
    let Some(program) = build(
        "facts",
        "#define _GNU_SOURCE\n#include <signal.h>\n#include <sched.h>\n#include <stdio.h>\n\
         #include <poll.h>\n#include <unistd.h>\n#include <fcntl.h>\n#include <sys/resource.h>\n\
         int main(void) {\n\
           cpu_set_t set; CPU_ZERO(&set);\n\
           if (sched_getaffinity(0, sizeof set, &set) != 0) return 10;\n\
           struct rlimit r; if (getrlimit(RLIMIT_STACK, &r) != 0) return 11;\n\
           struct pollfd p[3] = {{0, POLLIN, 0}, {1, POLLOUT, 0}, {7, POLLIN, 0}};\n\
           int ready = poll(p, 3, 0);\n\
           char cwd[64]; if (!getcwd(cwd, sizeof cwd)) return 12;\n\
           stack_t ss; if (sigaltstack(NULL, &ss) != 0) return 13;\n\
           signal(SIGUSR1, SIG_IGN); raise(SIGUSR1);\n\
           sigset_t block, pending; sigemptyset(&block); sigaddset(&block, SIGUSR2);\n\
           sigprocmask(SIG_BLOCK, &block, NULL); raise(SIGUSR2); sigpending(&pending);\n\
           printf(\"cpus %d stack %ld ready %d nval %d cwd %s altstack %s pending %d fl %d\\n\",\n\
             CPU_COUNT(&set), (long)r.rlim_cur, ready, p[2].revents == POLLNVAL, cwd,\n\
             ss.ss_flags & SS_DISABLE ? \"off\" : \"on\", sigismember(&pending, SIGUSR2),\n\
             fcntl(1, F_GETFL) & O_ACCMODE);\n\
           fflush(stdout);\n\
           sigprocmask(SIG_UNBLOCK, &block, NULL);\n\
           return 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let (machine, exit) = run(&program, &[]);
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "cpus 1 stack 8388608 ready 3 nval 1 cwd / altstack off pending 1 fl 1\n",
        "calls {:?}",
        machine.calls
    );
    // SIGUSR1 was ignored; SIGUSR2 stayed pending while blocked, and its
    // default action ended the process when it was unblocked.
    let Exit::Signal { signal, .. } = exit else {
        panic!("{exit:?}")
    };
    assert_eq!(signal, 12, "SIGUSR2");
}

/// Builds `source` as a static riscv64 Rust program with rustc; `None`
/// (saying so) without the riscv64gc-unknown-linux-gnu target, unless
/// `DST_REQUIRE_RISCV_RUST` is set (CI sets it where rustup installs it).
fn build_rust(name: &str, source: &str) -> Option<PathBuf> {
    let target = "riscv64gc-unknown-linux-gnu";
    if !rust_target_installed() {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("dst-rv-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let main = dir.join("main.rs");
    std::fs::write(&main, source).unwrap();
    let program = dir.join(name);
    let status = Command::new("rustc")
        .args(["--edition", "2021", "-O", "--target", target])
        .args([
            "-C",
            "target-feature=+crt-static",
            "-C",
            "linker=riscv64-linux-gnu-gcc",
        ])
        .arg(&main)
        .arg("-o")
        .arg(&program)
        .status()
        .unwrap();
    assert!(status.success(), "rustc {target} failed");
    Some(program)
}

/// Runs `program` on the nominal input, which must end with its exit
/// status 0 (else the output and calls are shown); the emulator after it.
fn runs_to_exit(program: &Path) -> dst_executors::riscv::executor::Emulator {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let mut exec = Emulator::open(program, &["prog".to_string()], 100_000_000).unwrap();
    let end = exec.execute(&[]);
    let machine = exec.machine();
    assert_eq!(
        end,
        End::Ok,
        "stdout {:?} stderr {:?} calls {:?}",
        String::from_utf8_lossy(&machine.kernel.stdout),
        String::from_utf8_lossy(&machine.kernel.stderr),
        machine.calls
    );
    exec
}

/// Whether rustc has the riscv64gc-unknown-linux-gnu target (see
/// [`common::rust_target_installed`]).
fn rust_target_installed() -> bool {
    common::rust_target_installed()
}

#[test]
fn an_unmodified_tokio_program_runs_its_multi_thread_runtime_timers_and_channels() {
    use dst_executors::{End, Executor};
    if !rust_target_installed() {
        return;
    }
    // executors/tests/tokio: tokio from crates.io, pinned by its lock file.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tokio/Cargo.toml");
    let program = common::build_riscv_rust(&manifest, "dst-riscv-tokio");
    let mut exec = runs_to_exit(&program);
    let machine = exec.machine();
    // Four sleeping tasks joined (1 + 4 + 9 + 16), ten messages through a
    // bounded channel, a timeout that fired, and a TCP echo over the
    // loopback: the runtime's worker threads, its epoll and eventfd, its
    // timer wheel on virtual time, and nonblocking sockets.
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "sum 30 got 45 timed out true echo HELLO\n"
    );
    for (call, name) in [(20, "epoll_create1"), (19, "eventfd2"), (22, "epoll_pwait")] {
        assert!(machine.calls.iter().any(|&(n, _)| n == call), "{name}");
    }
    let calls = machine.calls.clone();
    assert_eq!(exec.execute(&[]), End::Ok);
    assert_eq!(exec.machine().calls, calls, "the same calls on replay");
}

#[test]
fn a_rust_std_program_with_threads_a_lock_and_a_sleep_runs_to_its_exit() {
    let Some(program) = build_rust(
        "rusty",
        r#"use std::sync::{Arc, Mutex};
fn main() {
    let total = Arc::new(Mutex::new(0u64));
    let handles: Vec<_> = (1..=3u64)
        .map(|i| {
            let total = total.clone();
            std::thread::spawn(move || {
                for k in 0..100u64 {
                    *total.lock().unwrap() += k * i;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let start = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(start.elapsed() >= std::time::Duration::from_millis(5));
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("total {} cpus {cpus}", total.lock().unwrap());
}
"#,
    ) else {
        return;
    };
    let exec = runs_to_exit(&program);
    let machine = exec.machine();
    // 4950 * (1 + 2 + 3): every update of every thread; End::Ok is the
    // program's own exit, with status 0.
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "total 29700 cpus 1\n"
    );
    assert!(machine.threads.len() >= 4, "main and three threads");
}

#[test]
fn signal_handlers_run_on_their_stack_and_return_and_a_fault_reaches_its_handler() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let Some(program) = build(
        "handlers",
        "#define _GNU_SOURCE\n#include <signal.h>\n#include <setjmp.h>\n#include <stdio.h>\n\
         #include <stdlib.h>\n#include <string.h>\n\
         static char alt[65536]; static volatile int usr1, on_alt, faults; static volatile long at;\n\
         static sigjmp_buf back;\n\
         static void on_usr1(int sig, siginfo_t *info, void *uc) {\n\
           char here; (void)uc; usr1 += sig == SIGUSR1 && info->si_signo == SIGUSR1;\n\
           on_alt = &here >= alt && &here < alt + sizeof alt; }\n\
         static void on_segv(int sig, siginfo_t *info, void *uc) {\n\
           (void)sig; (void)uc; faults++; at = (long)info->si_addr; siglongjmp(back, 1); }\n\
         int main(void) {\n\
           stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };\n\
           if (sigaltstack(&ss, 0)) return 10;\n\
           struct sigaction sa; memset(&sa, 0, sizeof sa); sigemptyset(&sa.sa_mask);\n\
           sa.sa_sigaction = on_usr1; sa.sa_flags = SA_SIGINFO | SA_ONSTACK;\n\
           if (sigaction(SIGUSR1, &sa, 0)) return 11;\n\
           sa.sa_sigaction = on_segv; sa.sa_flags = SA_SIGINFO;\n\
           if (sigaction(SIGSEGV, &sa, 0)) return 12;\n\
           double kept = 1.25; int local = 7;\n\
           raise(SIGUSR1); raise(SIGUSR1);\n\
           if (!sigsetjmp(back, 1)) { *(volatile int *)16 = 1; return 13; }\n\
           printf(\"usr1 %d alt %d faults %d at %ld kept %.2f %d\\n\", usr1, on_alt, faults, at, kept, local);\n\
           return 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let mut exec = Emulator::open(&program, &["handlers".to_string()], 10_000_000).unwrap();
    let end = exec.execute(&[]);
    let machine = exec.machine();
    assert_eq!(end, End::Ok, "calls {:?}", machine.calls);
    // Each raise ran the handler on the alternate stack and came back
    // (rt_sigreturn restored the registers, floating point included); the
    // write to address 16 ran the SIGSEGV handler, with that address.
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "usr1 2 alt 1 faults 1 at 16 kept 1.25 7\n"
    );
    let returns = machine.calls.iter().filter(|(n, _)| *n == 139).count();
    assert_eq!(returns, 2, "two handlers returned, the third jumped out");
}

/// Builds `executors/tests/go/NAME.go` (see [`common::build_go`]).
fn build_go(name: &str) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/go/{name}.go"));
    common::build_go(&source, name)
}

#[test]
fn go_programs_run_goroutines_timers_and_the_runtime_s_preemption_signal() {
    use dst_executors::{End, Executor};
    let Some(hello) = build_go("hello") else {
        return;
    };
    // Goroutines that sleep, a mutex, a WaitGroup and a channel: the
    // runtime's threads, futexes, its netpoller (epoll and a pipe) as its
    // timer wait, and virtual time.
    let mut exec = runs_to_exit(&hello);
    let machine = exec.machine();
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "total 4995000 results 4\n"
    );
    let calls = machine.calls.clone();
    assert!(
        calls.iter().any(|&(n, _)| n == 22),
        "the timer wait is epoll_pwait"
    );
    assert_eq!(exec.execute(&[]), End::Ok);
    assert_eq!(exec.machine().calls, calls, "the same calls on replay");

    // A goroutine spinning on an atomic while the one that sets it sleeps,
    // on one CPU: only the runtime's asynchronous preemption (sysmon's
    // SIGURG, its handler rewriting the interrupted pc) lets it go on.
    let Some(spin) = build_go("spin") else {
        return;
    };
    let exec = runs_to_exit(&spin);
    let machine = exec.machine();
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "procs 1 spun true\n"
    );
    assert!(
        machine.calls.iter().any(|&(n, _)| n == 131)
            && machine.calls.iter().any(|&(n, _)| n == 139),
        "tgkill and rt_sigreturn: the signal reached its handler and came back"
    );
    // net.Listen, Accept, Dial and a line each way over the loopback: the
    // runtime's nonblocking sockets in its netpoller.
    let Some(net) = build_go("net") else {
        return;
    };
    let exec = runs_to_exit(&net);
    assert_eq!(
        String::from_utf8_lossy(&exec.machine().kernel.stdout),
        "HELLO OVER TCP\n"
    );
}

#[test]
fn pipes_eventfds_and_epoll_block_wake_and_time_out_in_virtual_time() {
    let Some(program) = build(
        "waits",
        "#define _GNU_SOURCE\n#include <pthread.h>\n#include <signal.h>\n#include <stdio.h>\n\
         #include <stdint.h>\n#include <string.h>\n#include <time.h>\n#include <unistd.h>\n\
         #include <errno.h>\n#include <sys/epoll.h>\n#include <sys/eventfd.h>\n\
         static int p[2];\n\
         static void *writer(void *arg) { (void)arg; write(p[1], \"ping\", 4); return 0; }\n\
         static long ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);\n\
           return t.tv_sec * 1000 + t.tv_nsec / 1000000; }\n\
         int main(void) {\n\
           if (pipe(p)) return 10;\n\
           pthread_t t; pthread_create(&t, 0, writer, 0);\n\
           char buf[8] = {0}; long n = read(p[0], buf, sizeof buf - 1);\n\
           pthread_join(t, 0);\n\
           int ep = epoll_create1(0), ev = eventfd(0, EFD_NONBLOCK);\n\
           struct epoll_event e = { .events = EPOLLIN, .data.u64 = 42 };\n\
           epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e);\n\
           long before = ms(); struct epoll_event got[4];\n\
           int none = epoll_wait(ep, got, 4, 50); long waited = ms() - before;\n\
           uint64_t one = 1; write(ev, &one, 8);\n\
           int ready = epoll_wait(ep, got, 4, -1);\n\
           uint64_t value = 0; read(ev, &value, 8);\n\
           int again = read(ev, &value, 8) < 0 && errno == EAGAIN;\n\
           signal(SIGPIPE, SIG_IGN); close(p[0]);\n\
           int broken = write(p[1], \"x\", 1) < 0 && errno == EPIPE;\n\
           printf(\"read %ld %s none %d waited %d ready %d data %llu value %llu again %d broken %d\\n\",\n\
             n, buf, none, waited >= 50, ready, (unsigned long long)got[0].data.u64,\n\
             (unsigned long long)value, again, broken);\n\
           fflush(stdout);\n\
           int q[2]; pipe(q); read(q[0], buf, 1);\n\
           return 0; }\n",
        &["-static", "-pthread"],
    ) else {
        return;
    };
    let (machine, exit) = run(&program, &[]);
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "read 4 ping none 0 waited 1 ready 1 data 42 value 1 again 1 broken 1\n",
        "calls {:?}",
        machine.calls
    );
    // The last read waits on a pipe whose only writer is the reader
    // itself: nothing can wake it.
    let Exit::Deadlock { waiting } = exit else {
        panic!("{exit:?}")
    };
    assert_eq!(waiting.len(), 1, "{waiting:?}");
}

#[test]
fn files_seeded_from_a_folder_are_read_written_renamed_and_listed() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::{End, Executor};
    let Some(program) = build(
        "files",
        "#define _GNU_SOURCE\n#include <stdio.h>\n#include <string.h>\n#include <fcntl.h>\n\
         #include <unistd.h>\n#include <dirent.h>\n#include <sys/stat.h>\n#include <stdlib.h>\n\
         int main(void) {\n\
           char buf[64] = {0}; FILE *f = fopen(\"conf/name.txt\", \"r\");\n\
           if (!f || !fgets(buf, sizeof buf, f)) return 10; fclose(f);\n\
           buf[strcspn(buf, \"\\n\")] = 0;\n\
           mkdir(\"data\", 0755); chdir(\"data\");\n\
           int fd = open(\"log.tmp\", O_CREAT | O_WRONLY | O_TRUNC, 0644);\n\
           dprintf(fd, \"hello %s\", buf); fsync(fd); close(fd);\n\
           if (rename(\"log.tmp\", \"log\")) return 11;\n\
           fd = open(\"/data/log\", O_RDWR | O_APPEND); write(fd, \"!\", 1);\n\
           struct stat st; fstat(fd, &st); lseek(fd, 6, SEEK_SET);\n\
           char back[32] = {0}; read(fd, back, sizeof back - 1); close(fd);\n\
           char cwd[64]; getcwd(cwd, sizeof cwd);\n\
           int urandom = open(\"/dev/urandom\", O_RDONLY); unsigned char r[4];\n\
           int got = read(urandom, r, 4); close(urandom);\n\
           DIR *d = opendir(\"/\"); struct dirent *e; char names[128] = {0};\n\
           while ((e = readdir(d))) if (e->d_name[0] != '.') { strcat(names, e->d_name); strcat(names, \" \"); }\n\
           closedir(d);\n\
           struct stat dn; int null_dev = stat(\"/dev/null\", &dn) == 0 && S_ISCHR(dn.st_mode);\n\
           printf(\"%s|%ld|%s|%s|%d|%s|%d|%d\\n\", buf, (long)st.st_size, back, cwd, got, names,\n\
             access(\"/conf/missing\", F_OK) == -1, null_dev);\n\
           return 0; }\n",
        &["-static"],
    ) else {
        return;
    };
    let folder = std::env::temp_dir().join(format!("dst-rv-seed-{}", std::process::id()));
    std::fs::create_dir_all(folder.join("conf")).unwrap();
    std::fs::write(folder.join("conf/name.txt"), "dst\n").unwrap();
    let mut exec =
        Emulator::open_with(&program, &["files".to_string()], 10_000_000, Some(&folder)).unwrap();
    let end = exec.execute(&[]);
    let machine = exec.machine();
    assert_eq!(end, End::Ok, "calls {:?}", machine.calls);
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "dst|10|dst!|/data|4|conf data |1|1\n"
    );
    // Every run starts from the folder's copy, and the folder is only read.
    assert_eq!(exec.execute(&[]), End::Ok);
    assert_eq!(
        String::from_utf8_lossy(&exec.machine().kernel.stdout),
        "dst|10|dst!|/data|4|conf data |1|1\n"
    );
    let host: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(host, vec!["conf"]);
    std::fs::remove_dir_all(&folder).unwrap();
}

/// A store that renames a new state file over the old one: its data is
/// synced only with `-DFIXED`.
const STORE: &str = "#include <stdio.h>\n#include <stdlib.h>\n#include <fcntl.h>\n#include <unistd.h>\n\
     int main(void) {\n\
       char buf[32] = {0}; long n = 0; int fd = open(\"state\", O_RDONLY);\n\
       if (fd >= 0) {\n\
         int got = read(fd, buf, sizeof buf - 1); close(fd);\n\
         if (got <= 0 || sscanf(buf, \"count=%ld\", &n) != 1) {\n\
           fprintf(stderr, \"state lost: %d bytes\\n\", got); abort(); } }\n\
       fd = open(\"state.tmp\", O_CREAT | O_WRONLY | O_TRUNC, 0644);\n\
       dprintf(fd, \"count=%ld\\n\", n + 1);\n\
     #ifdef FIXED\n\
       fsync(fd);\n\
     #endif\n\
       close(fd); rename(\"state.tmp\", \"state\");\n\
       int dir = open(\".\", O_RDONLY | O_DIRECTORY); fsync(dir); close(dir);\n\
       printf(\"count %ld\\n\", n + 1); return 0; }\n";

#[test]
fn a_crash_after_a_rename_whose_data_was_not_synced_is_found_and_replays() {
    use dst_executors::riscv::executor::Emulator;
    use dst_executors::riscv::machine::CRASHED;
    use dst_executors::{End, Executor};
    let (Some(buggy), Some(fixed)) = (
        build("store", STORE, &["-static"]),
        build("store-fixed", STORE, &["-static", "-DFIXED"]),
    ) else {
        return;
    };
    let folder = std::env::temp_dir().join(format!("dst-rv-store-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("state"), "count=1\n").unwrap();
    let open = |program: &Path| {
        Emulator::open_with(program, &["store".to_string()], 10_000_000, Some(&folder)).unwrap()
    };
    let mut exec = open(&buggy);
    // Nominal: no crash, the count goes on from the folder's state.
    assert_eq!(exec.execute(&[]), End::Ok);
    assert_eq!(
        String::from_utf8_lossy(&exec.machine().kernel.stdout),
        "count 2\n"
    );
    let inputs: Vec<Vec<u8>> = (1u64..2000).map(|seed| input(seed, 64)).collect();
    let failing = inputs
        .iter()
        .find(|input| exec.execute(input) != End::Ok)
        .expect("some run crashes the node after the rename and before the data is durable");
    let first = exec.execute(failing);
    let End::Crash(dst_kernel::Outcome::Crash { cause, .. }) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(
        cause, "SIGABRT",
        "the restarted store found its state empty"
    );
    let machine = exec.machine();
    assert!(machine.calls.iter().any(|&(n, _)| n == CRASHED));
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stderr),
        "state lost: 0 bytes\n"
    );
    let calls = machine.calls.clone();
    assert_eq!(exec.execute(failing), first, "the same on replay");
    assert_eq!(exec.machine().calls, calls);
    // Syncing the data before the rename: no input loses the state.
    let mut exec = open(&fixed);
    for input in &inputs {
        assert_eq!(
            exec.execute(input),
            End::Ok,
            "{:?}",
            String::from_utf8_lossy(&exec.machine().kernel.stderr)
        );
    }
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn tcp_and_udp_over_the_node_s_loopback_connect_accept_and_carry_bytes() {
    let Some(program) = build(
        "sockets",
        "#define _GNU_SOURCE\n#include <pthread.h>\n#include <stdio.h>\n#include <string.h>\n\
         #include <unistd.h>\n#include <errno.h>\n#include <arpa/inet.h>\n#include <sys/socket.h>\n\
         #include <sys/epoll.h>\n#include <netinet/in.h>\n\
         static int server;\n\
         static void *serve(void *arg) { (void)arg;\n\
           int c = accept(server, 0, 0); char buf[64]; long n = read(c, buf, sizeof buf);\n\
           for (long i = 0; i < n; i++) buf[i] = buf[i] >= 'a' && buf[i] <= 'z' ? buf[i] - 32 : buf[i];\n\
           write(c, buf, n); close(c); return 0; }\n\
         int main(void) {\n\
           server = socket(AF_INET, SOCK_STREAM, 0);\n\
           struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7000) };\n\
           a.sin_addr.s_addr = htonl(INADDR_ANY);\n\
           if (bind(server, (void *)&a, sizeof a) || listen(server, 8)) return 10;\n\
           pthread_t t; pthread_create(&t, 0, serve, 0);\n\
           int c = socket(AF_INET, SOCK_STREAM, 0); a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n\
           if (connect(c, (void *)&a, sizeof a)) return 11;\n\
           write(c, \"hello\", 5); char buf[64] = {0}; long n = read(c, buf, sizeof buf - 1);\n\
           long end = read(c, buf + 32, 8); close(c); pthread_join(t, 0);\n\
           struct sockaddr_in none = a; none.sin_port = htons(7001);\n\
           int refused = socket(AF_INET, SOCK_STREAM, 0);\n\
           int r = connect(refused, (void *)&none, sizeof none) < 0 && errno == ECONNREFUSED;\n\
           int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);\n\
           struct sockaddr_in ua = { .sin_family = AF_INET, .sin_port = htons(9000) };\n\
           ua.sin_addr.s_addr = htonl(INADDR_LOOPBACK); bind(u2, (void *)&ua, sizeof ua);\n\
           int ep = epoll_create1(0); struct epoll_event e = { .events = EPOLLIN, .data.fd = u2 };\n\
           epoll_ctl(ep, EPOLL_CTL_ADD, u2, &e);\n\
           sendto(u1, \"ping\", 4, 0, (void *)&ua, sizeof ua);\n\
           struct epoll_event got; int ready = epoll_wait(ep, &got, 1, -1);\n\
           struct sockaddr_in from; socklen_t fl = sizeof from; char d[16] = {0};\n\
           long dn = recvfrom(u2, d, sizeof d, 0, (void *)&from, &fl);\n\
           printf(\"%ld %s end %ld refused %d udp %d %ld %s from %d\\n\", n, buf, end, r, ready, dn, d,\n\
             ntohs(from.sin_port) >= 40000);\n\
           return 0; }\n",
        &["-static", "-pthread"],
    ) else {
        return;
    };
    let (machine, exit) = run(&program, &[]);
    assert_eq!(exit, Exit::Status(0), "calls {:?}", machine.calls);
    assert_eq!(
        String::from_utf8_lossy(&machine.kernel.stdout),
        "5 HELLO end 0 refused 1 udp 1 4 ping from 1\n",
        "calls {:?}",
        machine.calls
    );
}
