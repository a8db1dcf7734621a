//! `dst-c-api`: dst.h's functions, written over the Rust SDK, so there is
//! one implementation of the decision stream, the region and local mode.
//! `libdst` (`sdk-c`, `libdst.so` and `libdst.a`) and the fuzzing engine
//! (`engine/`, `libdst_engine.a`) each export them; `include/dst.h`
//! declares the C API and its assertion macros.
//!
//! Each macro site is a record in the binary's `dst_catalog` section (format:
//! `dst::catalog::c`). A constructor emitted by `dst.h` hands the section to
//! [`dst_register_catalog`] before `main`, which adds every record to the
//! SDK's catalog; an assertion call passes its record and a slot where the
//! record's catalog index is cached after the first call.
//!
//! [`coverage`] receives gcc's and clang's `trace-pc` edge callbacks into the
//! region's coverage map; [`cmplog`] their `trace-cmp` callbacks (and a
//! harness's `memcmp`s) into the comparison log.
//!
//! The fork server (`dst::forkserver`) starts from the constructor `dst.h`
//! adds (in [`dst_register_catalog`]), or from `dst_setup_complete` under
//! `DST_DEFER=1`; [`dst_run`] is its persistent mode.
//!
//! [`libfuzzer`] is the `main` of a libFuzzer harness
//! (`libfuzzer/dst_libfuzzer_main.c` calls it), under dst or by itself;
//! what a harness does when it fuzzes by itself is the caller's
//! ([`libfuzzer::Engine`]).

pub mod cmplog;
pub mod coverage;
pub mod libfuzzer;
pub mod pthread;

use std::collections::HashMap;
use std::ffi::{CStr, c_char};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use dst_sdk::catalog::{self, Site, c};
use dst_sdk::random::ForeignSite;

/// Record addresses already registered, with their catalog indices.
static REGISTERED: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);
/// Fault names, with their registered sites and catalog indices.
static FAULTS: Mutex<Option<HashMap<String, (&'static Site, usize)>>> = Mutex::new(None);

/// The faults the fork server registered before serving
/// ([`preregister_faults`]), frozen: keyed by the names' FNV-64 hashes.
static LEARNED_FAULTS: AtomicPtr<Frozen<(&'static Site, usize)>> =
    AtomicPtr::new(std::ptr::null_mut());
/// [`REGISTERED`] as [`dst_register_catalog`] left it, frozen: keyed by
/// record address.
static REGISTERED_FROZEN: AtomicPtr<Frozen<usize>> = AtomicPtr::new(std::ptr::null_mut());

/// A lookup table that never changes once published, read without a lock.
/// A forked run's first write to a page copies the page, and taking the
/// [`FAULTS`] or [`REGISTERED`] lock was the only write to theirs in a run
/// of examples/c-kv; what the fork server registered before it forks is
/// looked up here instead.
struct Frozen<T>(Box<[(u64, T)]>);

impl<T: Copy> Frozen<T> {
    /// Publishes `entries` in `slot`. The table it replaces is not freed (a
    /// few are made, once each, and another thread may be reading it).
    fn publish(slot: &AtomicPtr<Frozen<T>>, mut entries: Vec<(u64, T)>) {
        entries.sort_by_key(|e| e.0);
        let table = Box::into_raw(Box::new(Frozen(entries.into_boxed_slice())));
        slot.store(table, Ordering::Release);
    }

    /// The entry under `key` that `matches`, in the table `slot` holds.
    fn find(slot: &AtomicPtr<Frozen<T>>, key: u64, matches: impl Fn(&T) -> bool) -> Option<T> {
        let table = slot.load(Ordering::Acquire);
        if table.is_null() {
            return None;
        }
        // SAFETY: published by `publish` from a leaked box, never freed.
        let entries = unsafe { &(*table).0 };
        let first = entries.partition_point(|e| e.0 < key);
        entries[first..]
            .iter()
            .take_while(|e| e.0 == key)
            .find(|e| matches(&e.1))
            .map(|e| e.1)
    }
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

/// Adds a parsed record (at address `at`) to the catalog, once.
fn register(at: usize, record: &c::Record, registered: &mut HashMap<usize, usize>) -> usize {
    *registered.entry(at).or_insert_with(|| {
        catalog::register(Site {
            kind: record.kind,
            message: leak(&record.message),
            condition: leak(&record.condition),
            file: leak(&record.file),
            line: record.line,
            column: 0,
            module: "",
            id: catalog::site_hash(&record.file, record.line, 0),
        })
    })
}

/// Registers the records of a `dst_catalog` section.
///
/// # Safety
/// `start..stop` must be a readable range (a section's bounds), or null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_register_catalog(start: *const u8, stop: *const u8) {
    if start.is_null() || stop <= start {
        return;
    }
    // SAFETY: the caller passes the bounds of a mapped section.
    let section = unsafe { std::slice::from_raw_parts(start, stop as usize - start as usize) };
    {
        let mut registered = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
        let registered = registered.get_or_insert_with(HashMap::new);
        for record in c::parse(section) {
            register(start as usize + record.offset, &record, registered);
        }
        let entries = registered.iter().map(|(&at, &index)| (at as u64, index));
        Frozen::publish(&REGISTERED_FROZEN, entries.collect());
    }
    // dst.h calls this from a constructor, before main: the fork server
    // (when an explorer asks for one, and DST_DEFER does not) starts here,
    // with the catalog registered once for all runs (and the comparison
    // log mapped once, for every child).
    dst_sdk::cmplog::attach_from_env();
    start_fork_server();
}

/// The catalog index of the record at `site`, cached in `slot` (index + 1).
///
/// # Safety
/// `site` must point at a record made by `dst.h`; `slot` at its `u32`.
unsafe fn index_of(site: *const u8, slot: *mut u32) -> Option<usize> {
    if site.is_null() || slot.is_null() {
        return None;
    }
    // SAFETY: `slot` is the site's own static (caller's contract).
    let cached = unsafe { slot.read_volatile() };
    if cached != 0 {
        return Some(cached as usize - 1);
    }
    let index = match Frozen::find(&REGISTERED_FROZEN, site as u64, |_| true) {
        Some(index) => index,
        // SAFETY: forwarded from this function's contract.
        None => unsafe { registered_index(site) }?,
    };
    // SAFETY: as above.
    unsafe { slot.write_volatile(index as u32 + 1) };
    Some(index)
}

/// The catalog index of the record at `site`, registering it if no
/// constructor did (a binary built without one).
///
/// # Safety
/// As for [`index_of`].
unsafe fn registered_index(site: *const u8) -> Option<usize> {
    let mut registered = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
    let registered = registered.get_or_insert_with(HashMap::new);
    let index = match registered.get(&(site as usize)) {
        Some(&index) => index,
        None => {
            // Not registered by a constructor (a binary built without one):
            // register this record alone.
            // SAFETY: the header says how long the record is.
            let size = unsafe { site.add(8).cast::<u32>().read_unaligned() } as usize;
            // SAFETY: the record spans `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(site, size.max(c::HEADER)) };
            let record = c::parse_one(bytes)?;
            register(site as usize, &record, registered)
        }
    };
    Some(index)
}

/// Details as JSON text: a valid JSON string as is, an invalid one reported.
///
/// # Safety
/// `details` must be null or a NUL-terminated string.
unsafe fn details(details: *const c_char) -> Option<String> {
    if details.is_null() {
        return None;
    }
    // SAFETY: caller's contract.
    let text = unsafe { CStr::from_ptr(details) }.to_string_lossy();
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(_) => Some(text.into_owned()),
        Err(err) => {
            eprintln!("dst: details are not valid JSON ({err}): {text}");
            Some(
                serde_json::json!({ "dst_error": format!("invalid JSON: {err}"), "text": text })
                    .to_string(),
            )
        }
    }
}

/// An assertion evaluation from a `dst.h` macro.
///
/// # Safety
/// `site` and `slot` come from `DST__SITE`; `details_json` is null or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_assert_site(
    site: *const u8,
    slot: *mut u32,
    condition: bool,
    details_json: *const c_char,
) {
    // SAFETY: forwarded from this function's contract.
    let Some(index) = (unsafe { index_of(site, slot) }) else {
        return;
    };
    let Some(info) = catalog::get(index) else {
        return;
    };
    // SAFETY: forwarded from this function's contract.
    let details = || unsafe { details(details_json) };
    dst_sdk::runtime::assert_at(info, index, condition, f64::NAN, details);
}

/// A numeric assertion evaluation from a `dst.h` macro.
///
/// # Safety
/// As for [`dst_assert_site`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_assert_cmp_site(
    site: *const u8,
    slot: *mut u32,
    condition: bool,
    left: f64,
    right: f64,
    details_json: *const c_char,
) {
    // SAFETY: forwarded from this function's contract.
    let Some(index) = (unsafe { index_of(site, slot) }) else {
        return;
    };
    let Some(info) = catalog::get(index) else {
        return;
    };
    let score = info.kind.score(left - right);
    let details = || {
        // SAFETY: forwarded from this function's contract.
        unsafe { details(details_json) }
            .or_else(|| Some(serde_json::json!({ "left": left, "right": right }).to_string()))
    };
    dst_sdk::runtime::assert_at(info, index, condition, score, details);
}

/// The decision site at `file:line`, its id cached in `slot`.
///
/// # Safety
/// `file` is a `__FILE__` literal (or null); `slot` is null or the call
/// site's own static.
unsafe fn foreign_site(file: *const c_char, line: u32, slot: *mut u32) -> ForeignSite {
    if file.is_null() {
        // SAFETY: a static literal.
        return unsafe { ForeignSite::new(c"?".as_ptr(), line, 0) };
    }
    let cached = if slot.is_null() {
        0
    } else {
        // SAFETY: `slot` is the site's static (caller's contract).
        unsafe { slot.read_volatile() }
    };
    let id = if cached != 0 {
        cached
    } else {
        // SAFETY: `file` is a static NUL-terminated string.
        let id = unsafe { ForeignSite::id_of(file, line) };
        if !slot.is_null() {
            // SAFETY: as above.
            unsafe { slot.write_volatile(id) };
        }
        id
    };
    // SAFETY: as above.
    unsafe { ForeignSite::new(file, line, id) }
}

/// `dst_random_u64()` at a call site (what the `dst.h` macro calls).
///
/// # Safety
/// As for `foreign_site`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_random_u64_at(file: *const c_char, line: u32, slot: *mut u32) -> u64 {
    // SAFETY: forwarded from this function's contract.
    dst_sdk::random::u64_at(unsafe { foreign_site(file, line, slot) })
}

/// `dst_random_below(n)` at a call site.
///
/// # Safety
/// As for `foreign_site`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_random_below_at(
    n: u64,
    file: *const c_char,
    line: u32,
    slot: *mut u32,
) -> u64 {
    // SAFETY: forwarded from this function's contract.
    dst_sdk::random::below_at(n, unsafe { foreign_site(file, line, slot) })
}

/// `dst_random_bool()` at a call site.
///
/// # Safety
/// As for `foreign_site`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_random_bool_at(
    file: *const c_char,
    line: u32,
    slot: *mut u32,
) -> bool {
    // SAFETY: forwarded from this function's contract.
    dst_sdk::random::bool_at(unsafe { foreign_site(file, line, slot) })
}

/// A uniformly random `u64` (nominal 0).
#[unsafe(no_mangle)]
pub extern "C" fn dst_random_u64() -> u64 {
    dst_sdk::random::u64()
}

/// A value in `0..n` (nominal 0).
#[unsafe(no_mangle)]
pub extern "C" fn dst_random_below(n: u64) -> u64 {
    dst_sdk::random::below(n)
}

/// A random boolean (nominal false).
#[unsafe(no_mangle)]
pub extern "C" fn dst_random_bool() -> bool {
    dst_sdk::random::bool()
}

/// The catalog entry of fault `name` and its index, registered on its
/// first use in this process (which gives it its file, from `file`, and
/// line). Looked up without allocating.
fn fault_site(name: &str, line: u32, file: impl FnOnce() -> String) -> (&'static Site, usize) {
    let mut faults = FAULTS.lock().unwrap_or_else(|p| p.into_inner());
    let faults = faults.get_or_insert_with(HashMap::new);
    if let Some(&found) = faults.get(name) {
        return found;
    }
    let file = file();
    dst_sdk::forkserver::learned_fault(name, &file, line);
    let index = catalog::register(Site {
        kind: catalog::Kind::Fault,
        message: leak(name),
        condition: "",
        file: if file.is_empty() { "" } else { leak(&file) },
        line,
        column: 0,
        module: "",
        id: catalog::site_hash(name, 0, 0),
    });
    let site = catalog::get(index).expect("just registered");
    faults.insert(name.to_string(), (site, index));
    (site, index)
}

/// Registers each fault (name, file, line) as its first use would: the fork
/// server does, for the names its learning runs used, so that runs find
/// them registered, in [`LEARNED_FAULTS`], published once.
fn preregister_faults(learned: &[dst_sdk::forkserver::LearnedFault]) {
    for (name, file, line) in learned {
        fault_site(name, *line, || file.clone());
    }
    let faults = FAULTS.lock().unwrap_or_else(|p| p.into_inner());
    let entries = faults
        .iter()
        .flatten()
        .map(|(_, &(site, index))| (dst_sdk::hash::fnv64(site.message.as_bytes()), (site, index)));
    Frozen::publish(&LEARNED_FAULTS, entries.collect());
}

/// Starts the fork server, if an explorer asks for one (see
/// `dst::forkserver`), able to register the faults runs use.
fn start_fork_server() {
    dst_sdk::forkserver::set_fault_registrar(preregister_faults);
    dst_sdk::forkserver::on_load();
}

/// A named fault point (nominal false); the name becomes a catalog entry.
///
/// # Safety
/// `name` must be null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_fault(name: *const c_char) -> bool {
    // SAFETY: forwarded from this function's contract.
    unsafe { dst_fault_at(name, std::ptr::null(), 0) }
}

/// `dst_fault(name)` at a call site: the first call of a name gives the
/// fault's catalog entry its file and line (its id stays the name's).
///
/// # Safety
/// `name` and `file` must be null or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_fault_at(name: *const c_char, file: *const c_char, line: u32) -> bool {
    if !name.is_null() {
        // SAFETY: caller's contract.
        let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
        let hash = dst_sdk::hash::fnv64(bytes);
        let learned = Frozen::find(&LEARNED_FAULTS, hash, |(site, _)| {
            site.message.as_bytes() == bytes
        });
        if let Some((site, index)) = learned {
            return dst_sdk::runtime::__fault_at(site, index);
        }
    }
    let name = if name.is_null() {
        std::borrow::Cow::Borrowed("unnamed fault")
    } else {
        // SAFETY: caller's contract.
        unsafe { CStr::from_ptr(name) }.to_string_lossy()
    };
    let site = fault_site(&name, line, || {
        if file.is_null() {
            String::new()
        } else {
            // SAFETY: caller's contract.
            unsafe { CStr::from_ptr(file) }
                .to_string_lossy()
                .into_owned()
        }
    });
    dst_sdk::runtime::__fault_at(site.0, site.1)
}

/// # Safety
/// `details_json` must be null or a NUL-terminated string.
unsafe fn event(name: &str, details_json: *const c_char) {
    // SAFETY: forwarded from this function's contract.
    let details = unsafe { details(details_json) }
        .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
        .unwrap_or(serde_json::Value::Null);
    dst_sdk::lifecycle::send_event(name, &details);
}

/// Declares that setup is complete.
///
/// # Safety
/// `details_json` must be null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_setup_complete(details_json: *const c_char) {
    if !dst_sdk::runtime::events_wanted() {
        // Under DST_DEFER=1 the fork server starts here.
        dst_sdk::lifecycle::setup_complete(&serde_json::Value::Null);
        return;
    }
    // SAFETY: forwarded from this function's contract.
    let details = unsafe { details(details_json) }
        .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
        .unwrap_or(serde_json::Value::Null);
    // Under DST_DEFER=1 the fork server starts here.
    dst_sdk::lifecycle::setup_complete(&details);
}

/// Persistent mode: calls `body` once per input (see `dst::forkserver`).
#[unsafe(no_mangle)]
pub extern "C" fn dst_run(body: Option<extern "C" fn()>) {
    let Some(body) = body else {
        return;
    };
    dst_sdk::run(|| {
        coverage::new_run();
        body();
    });
}

/// Records a named event.
///
/// # Safety
/// `name` and `details_json` must be null or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_send_event(name: *const c_char, details_json: *const c_char) {
    if !dst_sdk::runtime::events_wanted() {
        return;
    }
    let name = if name.is_null() {
        "event".to_string()
    } else {
        // SAFETY: caller's contract.
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { event(&name, details_json) };
}
