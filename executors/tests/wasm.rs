//! The wasm executor on WAT fixtures: snapshots, fuel, traps, WASI calls as
//! decisions, and every way a module can be refused.

use dst_executors::wasm::{LoadError, Missing, Options, Wasm};
use dst_executors::{End, Executor};
use dst_kernel::{Outcome, Signature};

fn module(wat: &str) -> Wasm {
    load(wat, Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn load(wat: &str, options: Options) -> Result<Wasm, LoadError> {
    Wasm::new(&wat::parse_str(wat).unwrap(), "fixture", options)
}

const WASI: &str = r#"
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func $print (param $at i32) (param $len i32)
    (i32.store (i32.const 2048) (local.get $at))
    (i32.store (i32.const 2052) (local.get $len))
    (drop (call $write (i32.const 1) (i32.const 2048) (i32.const 1) (i32.const 2056))))
"#;

fn with_wasi(body: &str) -> String {
    format!("(module {WASI} {body})")
}

fn lease() -> Wasm {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/wasm/lease.wat");
    Wasm::load(std::path::Path::new(path), Options::default()).unwrap()
}

#[test]
fn every_run_starts_from_the_snapshot() {
    // Traps unless memory and globals are as instantiation left them; then
    // dirties both and grows nothing.
    let mut exec = module(&with_wasi(
        r#"(global $g (mut i32) (i32.const 5))
           (func (export "_start")
             (if (i32.ne (global.get $g) (i32.const 5)) (then unreachable))
             (if (i32.ne (i32.load (i32.const 64)) (i32.const 0)) (then unreachable))
             (global.set $g (i32.const 6))
             (i32.store (i32.const 64) (i32.const 99)))"#,
    ));
    for i in 0..50u64 {
        assert_eq!(exec.execute(&i.to_le_bytes()), End::Ok, "run {i}");
    }
    assert_eq!(exec.reinstantiated(), 0);
}

#[test]
fn a_run_that_grows_memory_is_restored_without_a_fresh_instance() {
    // Every run sees the size a fresh instance has, grows by the same
    // pages as a fresh instance would (returning the old size), finds them
    // zeroed, dirties them, and cannot pass the declared maximum.
    let mut exec = module(
        r#"(module (memory (export "memory") 1 4)
             (func (export "_start")
               (if (i32.ne (memory.size) (i32.const 1)) (then unreachable))
               (if (i32.ne (memory.grow (i32.const 2)) (i32.const 1)) (then unreachable))
               (if (i32.ne (memory.size) (i32.const 3)) (then unreachable))
               (if (i32.ne (i32.load (i32.const 131072)) (i32.const 0)) (then unreachable))
               (i32.store (i32.const 131072) (i32.const 7))
               (if (i32.ne (memory.grow (i32.const 2)) (i32.const -1)) (then unreachable))
               (if (i32.ne (memory.grow (i32.const 1)) (i32.const 3)) (then unreachable))))"#,
    );
    for run in 0..3 {
        assert_eq!(exec.execute(&[]), End::Ok, "run {run}");
    }
    assert_eq!(exec.reinstantiated(), 0, "the size is virtual");
    // An access past the virtual size traps, as it would in a fresh
    // instance, as long as no earlier run grew the real memory past it.
    let mut fresh = module(
        r#"(module (memory (export "memory") 1)
             (func (export "_start") (drop (i32.load (i32.const 70000)))))"#,
    );
    assert!(matches!(fresh.execute(&[]), End::Crash { .. }));
}

#[test]
fn running_out_of_fuel_is_a_timeout_every_time() {
    let mut exec = load(
        &with_wasi(r#"(func (export "_start") (loop $l (br $l)))"#),
        Options {
            fuel: 100_000,
            ..Options::default()
        },
    )
    .unwrap();
    for _ in 0..3 {
        assert_eq!(exec.execute(&[]), End::Timeout);
    }
    assert_eq!(exec.run(&[]).outcome, Outcome::Timeout);
}

#[test]
fn traps_are_crashes_and_the_next_run_is_clean() {
    // Stores outside memory when the first random byte is odd.
    let mut exec = module(&with_wasi(
        r#"(func (export "_start")
             (drop (call $random (i32.const 0) (i32.const 1)))
             (if (i32.and (i32.load8_u (i32.const 0)) (i32.const 1))
               (then (i32.store (i32.const 70000) (i32.const 1)))))"#,
    ));
    let odd = [0, 0, 0, 0, 0, 0, 0, 0, 1];
    let End::Crash(Outcome::Crash { cause, .. }) = exec.execute(&odd) else {
        panic!("an out-of-bounds store traps")
    };
    assert_eq!(cause, "trap: memory out of bounds");
    assert_eq!(exec.execute(&[]), End::Ok, "the nominal run after it");
    let signature = exec.run(&odd).signature();
    assert!(
        matches!(&signature, Some(Signature::Crash { cause, .. }) if cause == "trap: memory out of bounds"),
        "{signature:?}"
    );
    assert_eq!(exec.run(&odd).signature(), signature, "the same on replay");
}

#[test]
fn the_environment_is_the_campaigns() {
    // Traps unless the environment is exactly one variable, "A=1".
    let wat = String::from(
        r#"(module
           (import "wasi_snapshot_preview1" "environ_sizes_get" (func $sizes (param i32 i32) (result i32)))
           (import "wasi_snapshot_preview1" "environ_get" (func $get (param i32 i32) (result i32)))
           (memory (export "memory") 1)
           (func (export "_start")
             (drop (call $sizes (i32.const 0) (i32.const 4)))
             (if (i32.ne (i32.load (i32.const 0)) (i32.const 1)) (then unreachable))
             (if (i32.ne (i32.load (i32.const 4)) (i32.const 4)) (then unreachable))
             (drop (call $get (i32.const 8) (i32.const 16)))
             (if (i32.ne (i32.load (i32.const 8)) (i32.const 16)) (then unreachable))
             (if (i32.ne (i32.load (i32.const 16)) (i32.const 0x00313d41)) (then unreachable))))"#,
    );
    let with = |env: &[&str]| {
        load(
            &wat,
            Options {
                env: env.iter().map(|s| s.to_string()).collect(),
                ..Options::default()
            },
        )
        .unwrap()
        .execute(&[])
    };
    assert_eq!(with(&["A=1"]), End::Ok);
    assert!(
        matches!(with(&[]), End::Crash { .. }),
        "no environment by default"
    );
}

#[test]
fn a_trap_is_located_by_function_and_code_offset() {
    // The trap is in $scribble, in the block after a call that returned:
    // located there, not in the callee; the unnamed entry goes by its
    // export's name.
    let wat = with_wasi(
        r#"(func $helper (drop (call $random (i32.const 0) (i32.const 1))))
           (func $scribble
             (call $helper)
             (i32.store (i32.const 70000) (i32.const 1)))
           (func (export "_start") (call $scribble))
           (func (export "other") (unreachable))"#,
    );
    let mut exec = module(&wat);
    let End::Crash(Outcome::Crash { location, .. }) = exec.execute(&[]) else {
        panic!("an out-of-bounds store traps")
    };
    let location = location.expect("located");
    assert!(location.starts_with("scribble+0x"), "{location}");
    let mut other = load(
        &wat,
        Options {
            entry: "other".into(),
            ..Options::default()
        },
    )
    .unwrap();
    let End::Crash(Outcome::Crash { location, .. }) = other.execute(&[]) else {
        panic!("unreachable traps")
    };
    assert!(location.unwrap().starts_with("other+0x"));
}

#[test]
fn random_bytes_and_clock_steps_are_decisions_of_the_input() {
    // Prints 4 random bytes, then the time between two clock readings in
    // whole seconds as one byte.
    let mut exec = module(&with_wasi(
        r#"(func (export "_start")
             (local $t i64)
             (drop (call $random (i32.const 0) (i32.const 4)))
             (drop (call $clock (i32.const 1) (i64.const 0) (i32.const 8)))
             (local.set $t (i64.load (i32.const 8)))
             (drop (call $clock (i32.const 1) (i64.const 0) (i32.const 8)))
             (i64.store8 (i32.const 4)
               (i64.div_u (i64.sub (i64.load (i32.const 8)) (local.get $t)) (i64.const 1000000000)))
             (call $print (i32.const 0) (i32.const 5)))"#,
    ));
    let run = |exec: &mut Wasm, input: &[u8]| {
        exec.execute(input);
        exec.output().0.to_vec()
    };
    assert_eq!(
        run(&mut exec, &[]),
        [0, 0, 0, 0, 0],
        "nominal: zeros, 1 us steps"
    );
    // Seed 0, then the random bytes, the first clock's step byte (no jump),
    // the second's (a jump) and the jump's size: 1 + 9 seconds.
    let input = [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0xF5, 0, 9];
    assert_eq!(run(&mut exec, &input), [1, 2, 3, 4, 10]);
    assert_eq!(run(&mut exec, &input), [1, 2, 3, 4, 10], "replayed");
    let record = exec.run(&input);
    assert_eq!(
        record.decision_count, 4,
        "fill, two steps, one jump: {record:?}"
    );
    assert_eq!(record.consumed, input.len() as u64 - 8);
}

#[test]
fn exit_statuses_and_captured_output() {
    let mut exec = module(&with_wasi(
        r#"(func (export "_start")
             (call $print (i32.const 4096) (i32.const 3))
             (call $exit (i32.load8_u (i32.const 4099))))
           (data (i32.const 4096) "hi\0a\00")"#,
    ));
    assert_eq!(exec.execute(&[]), End::Ok, "exit status 0 is a normal end");
    assert_eq!(exec.output().0, b"hi\n");
    let mut failing = module(&with_wasi(
        r#"(func (export "_start") (call $exit (i32.const 3)))"#,
    ));
    let End::Crash(Outcome::Crash { cause, message, .. }) = failing.execute(&[]) else {
        panic!("a nonzero status is a finding")
    };
    assert_eq!(
        (cause.as_str(), message.as_str()),
        ("exit", "the module exited with status 3")
    );
}

#[test]
fn missing_imports_are_listed_or_return_enosys() {
    let wat = r#"(module
      (import "wasi_snapshot_preview1" "sock_accept" (func $open (param i32 i32 i32) (result i32)))
      (import "env" "now" (func $now (result i64)))
      (memory (export "memory") 1)
      (func (export "_start")
        (i32.store (i32.const 0)
          (call $open (i32.const 0) (i32.const 0) (i32.const 0)))
        (if (i32.ne (i32.load (i32.const 0)) (i32.const 52)) (then unreachable))))"#;
    let Err(LoadError::BadModule(message)) = load(wat, Options::default()) else {
        panic!("refused")
    };
    assert!(
        message.contains("wasi_snapshot_preview1.sock_accept, env.now"),
        "every missing import, in one line: {message}"
    );
    assert!(!message.contains('\n'));
    let mut exec = load(
        wat,
        Options {
            missing: Missing::Enosys,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(exec.execute(&[]), End::Ok, "sock_accept returned ENOSYS");
}

#[test]
fn edges_are_counted_out_of_the_guests_reach() {
    // Branches on a random byte; then writes all over its own memory.
    let mut exec = module(&with_wasi(
        r#"(func (export "_start")
             (drop (call $random (i32.const 0) (i32.const 1)))
             (if (i32.load8_u (i32.const 0))
               (then (drop (i32.const 1)))
               (else (drop (i32.const 2))))
             (memory.fill (i32.const 0) (i32.const 255) (i32.const 65536)))"#,
    ));
    let seed = |b: u8| [0, 0, 0, 0, 0, 0, 0, 0, b];
    exec.execute(&seed(0));
    let zero = exec.edges();
    exec.execute(&seed(1));
    let one = exec.edges();
    assert_ne!(zero, one, "the two arms are different edges");
    assert!(
        zero.iter().all(|&c| c <= 1),
        "counts per run, not summed: {zero:?}"
    );
    assert!(zero.contains(&1));
    exec.execute(&seed(0));
    assert_eq!(exec.edges(), zero, "the same run, the same edges");
    let mut coverage = exec.coverage().edges.to_vec();
    coverage.truncate(zero.len());
    assert_eq!(coverage, zero, "the explorer's map");
}

#[test]
fn bad_modules_are_one_line_errors() {
    let Err(LoadError::BadModule(message)) =
        Wasm::new(b"\0asm\x01\0\0\0\x01\x09", "m", Options::default())
    else {
        panic!("a truncated module is refused")
    };
    assert!(message.contains("byte offset"), "{message}");
    let Err(LoadError::StartFailed(message)) = load(
        "(module (memory 1) (func $s unreachable) (start $s) (func (export \"_start\")))",
        Options::default(),
    ) else {
        panic!("a trapping start function is its own error")
    };
    assert!(message.contains("start function"), "{message}");
    let Err(LoadError::BadModule(message)) = load("(module (memory 1))", Options::default()) else {
        panic!("nothing to run")
    };
    assert!(message.contains("_start"), "{message}");
    // wasmparser pretty-prints a bad magic number over several lines; the
    // error is still one (found by dst's own wasm_module target).
    let Err(error) = Wasm::new(b"\0as\xc2\x01\0\0\0", "m", Options::default()) else {
        panic!("a bad magic number is refused")
    };
    let text = error.to_string();
    assert!(text.contains("magic") && !text.contains('\n'), "{text}");
}

#[test]
fn the_lease_example_fails_only_after_a_jump_and_ticket_42() {
    let mut exec = lease();
    assert_eq!(exec.execute(&[]), End::Ok);
    assert_eq!(exec.output().0, b"work done\n");
    // The first reading is nominal; the second jumps 1 + 40 s (two bytes);
    // the renewal's ticket is 42.
    let input = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0, 40, 42];
    let End::Crash(Outcome::Crash { cause, .. }) = exec.execute(&input) else {
        panic!("the bug: {:?}", exec.output())
    };
    assert_eq!(cause, "trap: unreachable");
    assert_eq!(exec.output().0, b"lease expired\n");
    let mut ticket_41 = input;
    ticket_41[12] = 41;
    assert_eq!(exec.execute(&ticket_41), End::Ok);
}
