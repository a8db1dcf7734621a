//! dst.h inside a guest, at any level whose guest cannot reach the SDK
//! itself (the emulator's, the KVM executor's): the guest runtime
//! (`sdk-c/guest/dst_riscv.c`, an `ecall` numbered `DST_ECALL` + n;
//! `sdk-c/guest/dst_kvm.c`, a port I/O hypercall) turns each of dst.h's
//! functions into call n with up to six arguments, and [`call`] answers it
//! on the run's region as libdst does natively: the same decisions
//! (kind, site id, width, value function) at the same call sites, and
//! assertions counted at the catalog index of their `dst_catalog` record,
//! found by the record's address (the catalog comes from the ELF, read
//! without running it: `crate::elf::guest_catalog`).
//!
//! Not yet: a fault's own catalog entry (libdst registers one on first
//! use; here a fault is only its decision).

use std::collections::HashMap;
use std::sync::Arc;

use dst::catalog::{self, Kind as SiteKind};
use dst::decision::{Kind, Value, below_width};
use dst::protocol::SiteText;
use dst::region::{Layout, Region};
use object::{Object, ObjectSection};

/// What a guest executor writes its runs with: a recorder of the run
/// protocol over a region it owns (shared with what it lends it to: the
/// emulator's machine, the wasm store).
pub type Recorder = dst::protocol::Recorder<Arc<Region>>;

/// A recorder over a new region of `layout`.
pub fn recorder(layout: Layout) -> Recorder {
    Recorder::new(Arc::new(Region::new(layout)))
}

/// Lifecycle events a sandboxed run leaves (`record_output`): its system
/// calls (a JSON list of `[name, result]`), and what it wrote to standard
/// output and error.
pub const CALLS_EVENT: &str = "wasi";
pub const STDOUT_EVENT: &str = "stdout";
pub const STDERR_EVENT: &str = "stderr";

/// Leaves a sandboxed run's system calls (name and result; `None` when not
/// recorded) and its output as the lifecycle events `replay` shows
/// ([`CALLS_EVENT`], [`STDOUT_EVENT`], [`STDERR_EVENT`]): for every level
/// whose system is dst's (wasm, the emulator).
pub fn record_output(
    recorder: &mut Recorder,
    calls: Option<&[(String, i64)]>,
    stdout: &[u8],
    stderr: &[u8],
) {
    if let Some(calls) = calls {
        recorder.event(CALLS_EVENT, serde_json::to_string(calls).ok());
    }
    for (name, bytes) in [(STDOUT_EVENT, stdout), (STDERR_EVENT, stderr)] {
        if !bytes.is_empty() {
            recorder.event(name, Some(String::from_utf8_lossy(bytes).into_owned()));
        }
    }
}

/// dst's calls (the guest runtimes have the same list).
const RANDOM_U64: u64 = 0;
const RANDOM_BELOW: u64 = 1;
const RANDOM_BOOL: u64 = 2;
const FAULT: u64 = 3;
const ASSERT: u64 = 4;
const EVENT: u64 = 5;
pub const SETUP_COMPLETE: u64 = 6;
/// The report of an assertion's first failure whose evaluation the guest
/// counted itself in a region in its memory (the KVM runtime): catalog
/// index, condition, details, then as for ASSERT.
const REPORT: u64 = 7;
/// How many there are.
pub const DST_CALLS: u64 = 8;

/// The guest's assertion sites by the address of their record: (catalog
/// index, kind).
#[derive(Debug, Clone, Default)]
pub struct Sites {
    by_address: HashMap<u64, (usize, SiteKind)>,
    /// The program links `dst_setup_complete`.
    pub setup_call: bool,
}

impl Sites {
    /// These sites with their catalog indexes `by` further on, past the
    /// SDK's own (another program's sites before them in a cluster's
    /// catalog).
    pub fn shifted(mut self, by: usize) -> Sites {
        for (index, _) in self.by_address.values_mut() {
            *index += by;
        }
        self
    }

    /// The sites of `file`'s `dst_catalog` section, indexed as
    /// `guest_catalog` indexes them (after the SDK's own).
    pub fn of(file: &object::File<'_>) -> Sites {
        let setup_call = file.symbol_by_name("dst_setup_complete").is_some();
        let none = Sites {
            setup_call,
            ..Sites::default()
        };
        let Some(section) = file.section_by_name("dst_catalog") else {
            return none;
        };
        let Ok(data) = section.data() else {
            return none;
        };
        let offset = catalog::BUILTIN.len();
        let by_address = catalog::c::parse(data)
            .iter()
            .enumerate()
            .map(|(i, record)| {
                (
                    section.address() + record.offset as u64,
                    (offset + i, record.kind),
                )
            })
            .collect();
        Sites {
            by_address,
            setup_call,
        }
    }
}

/// A guest's memory, as the calls read it.
pub trait GuestMemory {
    /// The NUL-terminated string at `address` (at most `max` bytes), if
    /// the guest can read it.
    fn c_string(&self, address: u64, max: usize) -> Option<Vec<u8>>;
}

/// Text up to 4 KiB at guest `address` (lossy), `None` at 0 or unmapped.
fn text(memory: &impl GuestMemory, address: u64) -> Option<String> {
    if address == 0 {
        return None;
    }
    let bytes = memory.c_string(address, 4096)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Details as libdst takes them: valid JSON as is, invalid JSON wrapped.
fn details(text: Option<String>) -> Option<String> {
    let text = text?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(_) => Some(text),
        Err(err) => Some(
            serde_json::json!({ "dst_error": format!("invalid JSON: {err}"), "text": text })
                .to_string(),
        ),
    }
}

/// dst call `n` with `args`, written through `recorder` (the run's), on
/// the guest's memory and assertion sites; its result. `Err` for a call
/// this executor does not know (a newer guest runtime).
pub fn call(
    recorder: &mut Recorder,
    n: u64,
    args: [u64; 6],
    memory: &impl GuestMemory,
    sites: &Sites,
) -> Result<i64, &'static str> {
    {
        let [a0, a1, a2, a3, a4, a5] = args;
        // A decision at `file:line` (file at a1, line at a2), as libdst's
        // `foreign_site` makes it.
        let decide =
            |recorder: &mut Recorder, m: &_, kind: Kind, bytes: &mut [u8], value: Value| -> u64 {
                let file = text(m, a1);
                let line = a2 as u32;
                let (file, id) = match &file {
                    Some(f) => (f.as_str(), catalog::site_hash(f, line, 0)),
                    None => ("?", 0),
                };
                let site = SiteText {
                    id,
                    file,
                    line,
                    column: 0,
                    name: None,
                };
                recorder.decide_at(kind, site, bytes, value)
            };
        Ok(match n {
            RANDOM_U64 => decide(recorder, memory, Kind::U64, &mut [0; 8], Value::Be) as i64,
            RANDOM_BELOW => {
                let width = below_width(a0);
                if width == 0 {
                    return Ok(0);
                }
                decide(
                    recorder,
                    memory,
                    Kind::Below,
                    &mut [0; 8][..width],
                    Value::Mod(a0),
                ) as i64
            }
            RANDOM_BOOL => decide(recorder, memory, Kind::Bool, &mut [0], Value::Bit) as i64,
            FAULT => {
                let name = text(memory, a0).unwrap_or_else(|| "unnamed fault".into());
                let file = text(memory, a1).unwrap_or_default();
                let site = SiteText {
                    id: catalog::site_hash(&name, 0, 0),
                    file: &file,
                    line: a2 as u32,
                    column: 0,
                    name: Some(&name),
                };
                recorder.decide_at(Kind::Fault, site, &mut [0], Value::FAULT) as i64
            }
            ASSERT => {
                let Some(&(index, kind)) = sites.by_address.get(&a0) else {
                    return Ok(0); // not a record of this ELF's catalog
                };
                let condition = a1 != 0;
                let (left, right) = (f64::from_bits(a4), f64::from_bits(a5));
                let score = if a3 != 0 {
                    kind.score(left - right)
                } else {
                    f64::NAN
                };
                if recorder.evaluate(index, kind, condition, score).report() {
                    let details = details(text(memory, a2)).or_else(|| {
                        (a3 != 0).then(|| {
                            serde_json::json!({ "left": left, "right": right }).to_string()
                        })
                    });
                    recorder.report(index, condition, details);
                }
                0
            }
            REPORT => {
                let (left, right) = (f64::from_bits(a4), f64::from_bits(a5));
                let details = details(text(memory, a2)).or_else(|| {
                    (a3 != 0)
                        .then(|| serde_json::json!({ "left": left, "right": right }).to_string())
                });
                recorder.report(a0 as usize, a1 != 0, details);
                0
            }
            EVENT | SETUP_COMPLETE => {
                if recorder.events_wanted() {
                    let name = if n == EVENT {
                        text(memory, a0).unwrap_or_else(|| "event".into())
                    } else {
                        "setup_complete".into()
                    };
                    let at = if n == EVENT { a1 } else { a0 };
                    recorder.event(&name, details(text(memory, at)));
                }
                0
            }
            _ => {
                debug_assert!(n >= DST_CALLS);
                return Err("this dst call (a newer guest runtime than the executor)");
            }
        })
    }
}
