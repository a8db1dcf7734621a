//! The host side of the SDK inside a module (`dst::wasm`): one host
//! function per hook, put in the table the rewrite appended, each writing
//! the run through the host's recorder (`dst::protocol`), as a native
//! target's SDK writes its own. A hook called with arguments that do not make sense (a buffer
//! outside memory, an unknown kind) traps the run with a message naming
//! the hook: the module and this dst disagree.

use dst::catalog;
use dst::decision::{self, Value};
use dst::protocol::SiteText;
use dst::wasm::HOOKS;
use wasmi::{Caller, Error, Func, Nullable, Ref, Store, Table};

use super::wasi::{Host, memory, slice, slice_mut};

fn bad(hook: &str, why: &str) -> Error {
    Error::new(format!("dst hook {hook}: {why}"))
}

/// The text of (pointer, length) in `memory`; a length of -1 is none.
fn text<'m>(memory: &'m [u8], at: i32, len: i32, hook: &str) -> Result<Option<&'m str>, Error> {
    if len == -1 {
        return Ok(None);
    }
    let bytes = usize::try_from(len)
        .ok()
        .and_then(|len| slice(memory, at, len))
        .ok_or_else(|| bad(hook, "a string outside the module's memory"))?;
    std::str::from_utf8(bytes)
        .map(Some)
        .map_err(|_| bad(hook, "a string that is not UTF-8"))
}

/// The catalog site a hook names by id (and by message, read from memory
/// only when the id is ambiguous; an unreadable one matches nothing).
fn site_of(
    caller: &mut Caller<'_, Host>,
    id: i32,
    at: i32,
    len: i32,
    hook: &str,
) -> Result<Option<(usize, catalog::Kind)>, Error> {
    let (memory, host) = memory(caller).ok_or_else(|| bad(hook, "the module has no memory"))?;
    Ok(host
        .sites
        .find(id as u32, || text(memory, at, len, hook).ok().flatten()))
}

/// The host function of every hook, in `HOOKS`' order.
fn functions(store: &mut Store<Host>) -> Vec<Func> {
    let present = Func::wrap(&mut *store, || -> i32 { 1 });
    let decide = Func::wrap(
        &mut *store,
        |mut caller: Caller<'_, Host>,
         kind: i32,
         id: i32,
         tag: i32,
         parameter: i64,
         buf: i32,
         len: i32,
         file: i32,
         file_len: i32,
         line: i32,
         column: i32,
         name: i32,
         name_len: i32|
         -> Result<i64, Error> {
            const HOOK: &str = "__dst_host_decide";
            let kind = u8::try_from(kind)
                .ok()
                .and_then(decision::Kind::from_u8)
                .ok_or_else(|| bad(HOOK, "an unknown decision kind"))?;
            let value = Value::decode(tag as u32, parameter as u64)
                .ok_or_else(|| bad(HOOK, "an unknown value function"))?;
            let len = usize::try_from(len).map_err(|_| bad(HOOK, "a negative length"))?;
            let (memory, host) =
                memory(&mut caller).ok_or_else(|| bad(HOOK, "the module has no memory"))?;
            if slice(memory, buf, len).is_none() {
                return Err(bad(HOOK, "a buffer outside the module's memory"));
            }
            let mut small = [0u8; 8];
            let mut large = Vec::new();
            let bytes = if len <= small.len() {
                &mut small[..len]
            } else {
                large.resize(len, 0);
                &mut large[..]
            };
            let site = SiteText {
                id: id as u32,
                file: text(memory, file, file_len, HOOK)?.unwrap_or(""),
                line: line as u32,
                column: column as u32,
                name: text(memory, name, name_len, HOOK)?,
            };
            let value = host.recorder().decide_at(kind, site, bytes, value);
            slice_mut(memory, buf, len)
                .expect("checked above")
                .copy_from_slice(bytes);
            Ok(value as i64)
        },
    );
    let assert = Func::wrap(
        &mut *store,
        |mut caller: Caller<'_, Host>,
         id: i32,
         kind: i32,
         message: i32,
         message_len: i32,
         condition: i32,
         score: f64|
         -> Result<i32, Error> {
            let site = site_of(&mut caller, id, message, message_len, "__dst_host_assert")?;
            // A site missing from the catalog (a stripped custom section)
            // is one past the region's table, as a native site would be:
            // the run's status says STATUS_SITES_OVERFLOW.
            let (index, kind) = site.unwrap_or((
                usize::MAX,
                catalog::c::kind(kind as u16).unwrap_or(catalog::Kind::Always),
            ));
            let evaluation =
                caller
                    .data_mut()
                    .recorder()
                    .evaluate(index, kind, condition != 0, score);
            Ok(i32::from(evaluation.report()))
        },
    );
    let report = Func::wrap(
        &mut *store,
        |mut caller: Caller<'_, Host>,
         id: i32,
         _kind: i32,
         message: i32,
         message_len: i32,
         condition: i32,
         details: i32,
         details_len: i32|
         -> Result<(), Error> {
            const HOOK: &str = "__dst_host_report";
            let site = site_of(&mut caller, id, message, message_len, HOOK)?;
            let (memory, host) =
                memory(&mut caller).ok_or_else(|| bad(HOOK, "the module has no memory"))?;
            let details = text(memory, details, details_len, HOOK)?.map(str::to_string);
            if let Some((index, _)) = site {
                host.recorder().report(index, condition != 0, details);
            }
            Ok(())
        },
    );
    let event = Func::wrap(
        &mut *store,
        |mut caller: Caller<'_, Host>,
         name: i32,
         name_len: i32,
         details: i32,
         details_len: i32|
         -> Result<(), Error> {
            const HOOK: &str = "__dst_host_event";
            let (memory, host) =
                memory(&mut caller).ok_or_else(|| bad(HOOK, "the module has no memory"))?;
            let name = text(memory, name, name_len, HOOK)?.unwrap_or("");
            let details = text(memory, details, details_len, HOOK)?.map(str::to_string);
            host.recorder().event(name, details);
            Ok(())
        },
    );
    let events_wanted = Func::wrap(&mut *store, |mut caller: Caller<'_, Host>| -> i32 {
        i32::from(caller.data_mut().recorder().events_wanted())
    });
    let functions = vec![present, decide, assert, report, event, events_wanted];
    debug_assert_eq!(functions.len(), HOOKS.len(), "one host function per hook");
    functions
}

/// Fills the hooks table of a fresh instance.
pub fn install(store: &mut Store<Host>, table: Table) {
    for (slot, func) in functions(store).into_iter().enumerate() {
        table
            .set(&mut *store, slot as u64, Ref::Func(Nullable::Val(func)))
            .expect("the rewrite sized the table for every hook");
    }
}
