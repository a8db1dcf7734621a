//! The KVM guest runtime's entry points: `sdk-c/guest/dst_kvm.c` takes
//! decisions and evaluates assertions through these functions, compiled
//! from this crate into each guest (`--cfg dst_guest`), so a guest writes
//! its region with the code the `dst` crate writes it with. The region is
//! the one the executor laid out in guest memory (its sections read from
//! its header, which `_start` checked); the stream's tail is what the
//! executor wrote out before the run.

use core::ffi::{CStr, c_char};
use core::sync::atomic::Ordering;

use crate::decision::{self, Kind as DecisionKind, SEED_BYTES, Value};
use crate::kind::Kind;
use crate::region::{Header, Sections, Writer};

/// The sections of the region at `region`, as its header lays them out.
///
/// # Safety
/// `region` points at a region the executor laid out (8-aligned, as a
/// `Header` is), valid for the run.
unsafe fn sections(region: *mut u8) -> Sections {
    // SAFETY: the region starts with its header (the caller's contract).
    let h = unsafe { &*(region as *const Header) };
    let s = Sections {
        total_size: h.total_size as usize,
        input_offset: h.input_offset as usize,
        input_capacity: h.input_capacity as usize,
        coverage_offset: h.coverage_offset as usize,
        coverage_size: h.coverage_size as usize,
        sites_offset: h.sites_offset as usize,
        sites_capacity: h.sites_capacity as usize,
        decisions_offset: h.decisions_offset as usize,
        decisions_capacity: h.decisions_capacity as usize,
        events_offset: h.events_offset as usize,
        events_capacity: h.events_capacity as usize,
    };
    debug_assert!(
        s.input_offset + s.input_capacity <= s.total_size,
        "the input inside the region"
    );
    s
}

/// How a decision of `kind` made by dst.h's calls takes its value.
fn rule(kind: u8, modulus: u64) -> Option<Value> {
    Some(match DecisionKind::from_u8(kind)? {
        DecisionKind::Below => Value::Mod(modulus.max(1)),
        DecisionKind::Bool => Value::Bit,
        DecisionKind::Fault => Value::FAULT,
        _ => Value::Be,
    })
}

/// Takes the next `width` bytes of the decision stream (the input's
/// explicit bytes, then the `tail_len` bytes at `tail`) as one decision
/// of `kind` at `site` (`modulus`: a `below`'s bound) and writes its value
/// to `*value`: its record, the cursor, decision coverage and the trace
/// hash, as `dst::protocol::Recorder::decide` writes them. `false`, with
/// nothing written, when the host must take it: the run is explained or
/// recorded (its flags are set), or the bytes run past the tail given.
///
/// # Safety
/// `region` is the guest's region, `tail` valid for `tail_len` bytes,
/// `value` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_core_decide(
    region: *mut u8,
    tail: *const u8,
    tail_len: u64,
    kind: u8,
    site: u32,
    width: u32,
    modulus: u64,
    value: *mut u64,
) -> bool {
    // SAFETY: the caller's contract.
    let sections = unsafe { sections(region) };
    // SAFETY: the region is laid out as its header says.
    let writer = unsafe { Writer::new(region, &sections) };
    let header = writer.header();
    if header.flags.load(Ordering::Relaxed) != 0 {
        return false;
    }
    let (Some(rule), true) = (rule(kind, modulus), width <= 8) else {
        return false;
    };
    let len = (header.input_len.load(Ordering::Acquire) as usize).min(sections.input_capacity);
    // SAFETY: the input section is inside the region, `len` clamped to it.
    let input = unsafe { core::slice::from_raw_parts(region.add(sections.input_offset), len) };
    let tail = if tail.is_null() || tail_len == 0 {
        &[][..]
    } else {
        // SAFETY: the caller's contract; not null.
        unsafe { core::slice::from_raw_parts(tail, tail_len as usize) }
    };
    let cursor = header.cursor.load(Ordering::Acquire);
    let mut bytes = [0u8; 8];
    let bytes = &mut bytes[..width as usize];
    if !decision::take(input.get(SEED_BYTES..).unwrap_or(&[]), tail, cursor, bytes) {
        return false;
    }
    let v = rule.of(bytes);
    header
        .cursor
        .store(cursor + u64::from(width), Ordering::Release);
    writer.record(kind, site, cursor, bytes.len(), v);
    // SAFETY: the caller's contract.
    unsafe { value.write(v) };
    true
}

/// One evaluation of the assertion at catalog `index`, of `dst.h`'s kind
/// number `kind`, with `condition`, and for a numeric one (`numeric`) its
/// `left` and `right` (their distance is its guidance): counts, guidance,
/// the run's first failure, as the `dst` crate evaluates. Returns whether
/// the host must report it (the run's first failure of that polarity).
/// A kind number that names no kind (`Kind::from_c`) is not evaluated.
///
/// # Safety
/// `region` is the guest's region.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_core_evaluate(
    region: *mut u8,
    index: u64,
    kind: u16,
    condition: bool,
    numeric: bool,
    left: f64,
    right: f64,
) -> bool {
    let Some(kind) = Kind::from_c(kind) else {
        return false;
    };
    // SAFETY: the caller's contract.
    let sections = unsafe { sections(region) };
    // SAFETY: the region is laid out as its header says.
    let writer = unsafe { Writer::new(region, &sections) };
    let score = if numeric {
        kind.score(left - right)
    } else {
        f64::NAN
    };
    let evaluation = writer.evaluate(index as usize, kind, condition, score);
    evaluation.first && evaluation.failed
}

/// `dst::catalog::site_hash(file, line, 0)`: the id of a C call site.
///
/// # Safety
/// `file` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_core_site_hash(file: *const c_char, line: u32) -> u32 {
    // SAFETY: the caller's contract.
    let file = unsafe { CStr::from_ptr(file) };
    crate::hash::site_hash(file.to_bytes(), line, 0)
}

/// Bytes a `below(n)` decision takes.
#[unsafe(no_mangle)]
pub extern "C" fn dst_core_below_width(n: u64) -> u32 {
    decision::below_width(n) as u32
}

/// A broken invariant of the protocol (a `debug_assert!`): the guest stops
/// on an invalid instruction, which the executor reports.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        // SAFETY: `ud2` raises #UD and touches nothing.
        unsafe { core::arch::asm!("ud2") };
    }
}

/// What the precompiled `core` (built to unwind) names for unwinding; a
/// guest never unwinds (`panic=abort`), so nothing calls it.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
