//! A scribbled WebAssembly module, given to the wasm executor: parsed,
//! rewritten (globals exported, edges instrumented, hooks rerouted), its
//! `dst_catalog` section read, instantiated. It is loaded or refused with
//! a one-line error, never a panic. (Runs are not explored here: a run
//! attaches the executor's region to the SDK in place of this target's
//! own; the wasm executor's tests run modules.)

use std::sync::OnceLock;

use dst_executors::wasm::{Options, Wasm};
use dst_fuzz_targets::scribble;
use dst_kernel::Executor;

/// A module that writes to stdout, keeps a mutable global, branches, and
/// carries a catalog of one `always` record (dst.h's record layout).
const MODULE: &str = r#"
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $count (mut i32) (i32.const 0))
  (data (i32.const 64) "hello\n")
  (func (export "_start")
    (local $i i32)
    (loop $again
      (global.set $count (i32.add (global.get $count) (i32.const 1)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 3))))
    (if (i32.eq (global.get $count) (i32.const 3))
      (then
        (i32.store (i32.const 0) (i32.const 64))
        (i32.store (i32.const 4) (i32.const 6))
        (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))))
  (@custom "dst_catalog"
    "\44\53\54\43\01\00\18\00\20\00\00\00\07\00\00\00\02\00\01\00\02\00\00\00m\00\00f\00\00\00\00"))
"#;

fn module() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| wat::parse_str(MODULE).expect("the module is valid text"))
}

dst_fuzz::target!(|| {
    let valid = module();
    let mut bytes = valid.to_vec();
    scribble(&mut bytes, 4, &[]);
    let options = Options {
        fuel: 100_000,
        ..Options::default()
    };
    match Wasm::new(&bytes, "module", options) {
        Ok(wasm) => {
            dst::assert_sometimes!(bytes != valid, "a scribbled module loads");
            if bytes == valid {
                dst::assert_always!(
                    wasm.catalog().len() == 1,
                    "the intact module loads with its catalog"
                );
            }
        }
        Err(error) => {
            let text = error.to_string();
            dst::assert_always!(
                !text.is_empty() && !text.contains('\n'),
                "a refused module gets one line",
                &text
            );
            dst::assert_sometimes!(true, "a scribbled module is refused");
        }
    }
});
