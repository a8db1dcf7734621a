//! The SDK inside a WebAssembly module, and the interface through which the
//! wasm executor reaches it.
//!
//! A module built for `wasm32-wasip1` with this crate exports a few *hook*
//! functions ([`HOOKS`]). Their bodies in the module do nothing (opaquely,
//! so the compiler keeps every call), and `__dst_host_present` returns 0:
//! run anywhere else (node's WASI, wasmtime), the SDK is in local mode, with
//! `DST_SEED`, `DST_INPUT` and `DST_OUTPUT` as natively, its region in the
//! module's own memory.
//!
//! The wasm executor rewrites each hook's body into a call of its own host
//! function of the same name and type (the small `dst` interface: a
//! decision, an assertion evaluation and its report, a lifecycle event), so
//! under the explorer the module's decisions are taken by the executor's
//! recorder of the run protocol ([`crate::protocol`]): the same stream, trace and site ids as a
//! native program's. Hooks rather than imports, because a module that
//! imports from `dst` could not be instantiated by anyone else.
//!
//! Strings and buffers are passed as (pointer, length) into the module's
//! memory; a length of -1 is "none".

/// A value type of a hook's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    I32,
    I64,
    F64,
}

/// One hook: its export name and signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hook {
    pub name: &'static str,
    pub params: &'static [Ty],
    pub results: &'static [Ty],
}

use Ty::{F64, I32, I64};

/// `() -> i32`: nonzero under the wasm executor.
pub const PRESENT: Hook = Hook {
    name: "__dst_host_present",
    params: &[],
    results: &[I32],
};
/// `(kind, site id, value tag, value parameter, buffer, length, file,
/// file length, line, column, name, name length) -> value`: one decision
/// (`decision::Kind`, `decision::Value::encode`); the host fills the buffer
/// with the decision's bytes.
pub const DECIDE: Hook = Hook {
    name: "__dst_host_decide",
    params: &[I32, I32, I32, I64, I32, I32, I32, I32, I32, I32, I32, I32],
    results: &[I64],
};
/// `(site id, kind number, message, message length, condition, score) ->
/// report?`: one evaluation of an assertion site (kinds numbered as in
/// `catalog::c::number`); nonzero asks for [`REPORT`].
pub const ASSERT: Hook = Hook {
    name: "__dst_host_assert",
    params: &[I32, I32, I32, I32, I32, F64],
    results: &[I32],
};
/// `(site id, kind number, message, message length, condition, details,
/// details length)`: the report [`ASSERT`] asked for, with the details'
/// JSON text.
pub const REPORT: Hook = Hook {
    name: "__dst_host_report",
    params: &[I32, I32, I32, I32, I32, I32, I32],
    results: &[],
};
/// `(name, name length, details, details length)`: a lifecycle event.
pub const EVENT: Hook = Hook {
    name: "__dst_host_event",
    params: &[I32, I32, I32, I32],
    results: &[],
};
/// `() -> wanted?`: whether lifecycle events are recorded now.
pub const EVENTS_WANTED: Hook = Hook {
    name: "__dst_host_events_wanted",
    params: &[],
    results: &[I32],
};

/// Every hook, in the order of the executor's slots.
pub const HOOKS: [Hook; 6] = [PRESENT, DECIDE, ASSERT, REPORT, EVENT, EVENTS_WANTED];

#[cfg(target_family = "wasm")]
pub(crate) use guest::{assert, decide, event, events_wanted, hosted};

#[cfg(target_family = "wasm")]
mod guest {
    use std::sync::atomic::{AtomicU8, Ordering};

    use crate::catalog::{self, Site};
    use crate::decision::{Kind, Value};
    use crate::protocol::SiteText;

    // The hooks' bodies as the module has them. Each reads a volatile zero
    // and touches its arguments (and, for a buffer, may write it) behind
    // it, so that the compiler can neither fold a hook's result nor drop or
    // move a call; the executor replaces the bodies.
    static ZERO: u32 = 0;
    static mut SINK: u64 = 0;

    fn zero() -> u32 {
        // SAFETY: a volatile read of a static.
        unsafe { std::ptr::read_volatile(&ZERO) }
    }

    fn sink(value: u64) {
        // SAFETY: a volatile write of a static only these bodies use; the
        // module is single-threaded.
        unsafe { std::ptr::write_volatile(&raw mut SINK, value) }
    }

    /// Reads (and with `write`, writes) `len` bytes at `at`, when
    /// [`zero`] is not zero: never, but the compiler cannot know.
    fn touch(at: *mut u8, len: i32, write: bool) {
        let n = zero().min(len.max(0) as u32) as usize;
        for i in 0..n {
            // SAFETY: never reached (n is 0); were it, `at` is a buffer
            // of `len` bytes the caller passed.
            unsafe {
                let p = at.add(i);
                sink(u64::from(std::ptr::read_volatile(p)));
                if write {
                    std::ptr::write_volatile(p, 0);
                }
            }
        }
    }

    #[unsafe(no_mangle)]
    #[inline(never)]
    extern "C" fn __dst_host_present() -> i32 {
        zero() as i32
    }

    #[unsafe(no_mangle)]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    extern "C" fn __dst_host_decide(
        kind: i32,
        id: i32,
        tag: i32,
        parameter: i64,
        buf: *mut u8,
        len: i32,
        file: *const u8,
        file_len: i32,
        line: i32,
        column: i32,
        name: *const u8,
        name_len: i32,
    ) -> i64 {
        sink((kind as u64) << 32 | id as u32 as u64);
        sink((tag as u64) << 32 | parameter as u64 ^ (line as u64) << 16 ^ column as u64);
        touch(buf, len, true);
        touch(file.cast_mut(), file_len, false);
        touch(name.cast_mut(), name_len, false);
        i64::from(zero())
    }

    #[unsafe(no_mangle)]
    #[inline(never)]
    extern "C" fn __dst_host_assert(
        id: i32,
        kind: i32,
        message: *const u8,
        message_len: i32,
        condition: i32,
        score: f64,
    ) -> i32 {
        sink((id as u64) << 32 | kind as u32 as u64 ^ condition as u64 ^ score.to_bits());
        touch(message.cast_mut(), message_len, false);
        zero() as i32
    }

    #[unsafe(no_mangle)]
    #[inline(never)]
    extern "C" fn __dst_host_report(
        id: i32,
        kind: i32,
        message: *const u8,
        message_len: i32,
        condition: i32,
        details: *const u8,
        details_len: i32,
    ) {
        sink((id as u64) << 32 | kind as u32 as u64 ^ condition as u64);
        touch(message.cast_mut(), message_len, false);
        touch(details.cast_mut(), details_len, false);
    }

    #[unsafe(no_mangle)]
    #[inline(never)]
    extern "C" fn __dst_host_event(
        name: *const u8,
        name_len: i32,
        details: *const u8,
        details_len: i32,
    ) {
        touch(name.cast_mut(), name_len, false);
        touch(details.cast_mut(), details_len, false);
    }

    #[unsafe(no_mangle)]
    #[inline(never)]
    extern "C" fn __dst_host_events_wanted() -> i32 {
        zero() as i32
    }

    /// 0: not asked yet in this run; 1: no host; 2: under the executor.
    /// In the module's memory, so restored with it before every run.
    static HOSTED: AtomicU8 = AtomicU8::new(0);

    /// Whether the module runs under the wasm executor (asked once a run).
    pub(crate) fn hosted() -> bool {
        match HOSTED.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let hosted = __dst_host_present() != 0;
                HOSTED.store(if hosted { 2 } else { 1 }, Ordering::Relaxed);
                hosted
            }
        }
    }

    fn text(text: Option<&str>) -> (*const u8, i32) {
        text.map_or((std::ptr::null(), -1), |t| (t.as_ptr(), t.len() as i32))
    }

    pub(crate) fn decide(kind: Kind, site: SiteText<'_>, bytes: &mut [u8], value: Value) -> u64 {
        let (tag, parameter) = value.encode();
        let (name, name_len) = text(site.name);
        __dst_host_decide(
            kind as i32,
            site.id as i32,
            tag as i32,
            parameter as i64,
            bytes.as_mut_ptr(),
            bytes.len() as i32,
            site.file.as_ptr(),
            site.file.len() as i32,
            site.line as i32,
            site.column as i32,
            name,
            name_len,
        ) as u64
    }

    pub(crate) fn assert(
        site: &'static Site,
        condition: bool,
        score: f64,
        details: impl FnOnce() -> Option<String>,
    ) {
        let kind = i32::from(catalog::c::number(site.kind));
        let message = (site.message.as_ptr(), site.message.len() as i32);
        let report = __dst_host_assert(
            site.id as i32,
            kind,
            message.0,
            message.1,
            i32::from(condition),
            score,
        );
        if report != 0 {
            let details = details();
            let (at, len) = text(details.as_deref());
            __dst_host_report(
                site.id as i32,
                kind,
                message.0,
                message.1,
                i32::from(condition),
                at,
                len,
            );
        }
    }

    pub(crate) fn event(name: &str, details: Option<String>) {
        let (at, len) = text(details.as_deref());
        __dst_host_event(name.as_ptr(), name.len() as i32, at, len);
    }

    pub(crate) fn events_wanted() -> bool {
        __dst_host_events_wanted() != 0
    }
}
