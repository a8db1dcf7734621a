;; A lease holder that imports nothing from dst: only WASI's clock, random
;; and fd_write. It takes a lease, then does eight steps of work, reading
;; the monotonic clock at each. Its bug: when a step finds the lease expired
;; (more than 30 s after it was taken) it renews it, and when the renewal
;; races another holder (the random ticket is 42) it goes on writing under
;; a lease it no longer holds: `unreachable`. Finding it takes a clock jump
;; and one particular random value; nominal runs (1 us per clock reading)
;; never get there.
(module
  (import "wasi_snapshot_preview1" "clock_time_get"
    (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get"
    (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; Work done across the run (restored to zero before every run).
  (global $steps (mut i32) (i32.const 0))

  (func $now (result i64)
    (drop (call $clock (i32.const 1) (i64.const 0) (i32.const 0)))
    (i64.load (i32.const 0)))

  (func $say (param $at i32) (param $len i32)
    (i32.store (i32.const 32) (local.get $at))
    (i32.store (i32.const 36) (local.get $len))
    (drop (call $write (i32.const 1) (i32.const 32) (i32.const 1) (i32.const 40))))

  (func (export "_start")
    (local $taken i64)
    (local.set $taken (call $now))
    (loop $work
      (if (i64.gt_u (i64.sub (call $now) (local.get $taken)) (i64.const 30000000000))
        (then
          (call $say (i32.const 100) (i32.const 14))
          (drop (call $random (i32.const 16) (i32.const 1)))
          (local.set $taken (call $now))
          (if (i32.eq (i32.load8_u (i32.const 16)) (i32.const 42))
            (then unreachable))))
      (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
      (br_if $work (i32.lt_u (global.get $steps) (i32.const 8))))
    (call $say (i32.const 120) (i32.const 10)))

  (data (i32.const 100) "lease expired\0a")
  (data (i32.const 120) "work done\0a"))
