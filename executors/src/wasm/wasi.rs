//! WASI preview 1, as dst provides it: every call deterministic, every
//! source of nondeterminism a decision of the run.
//!
//! - `clock_time_get` reads virtual time, which each reading advances by a
//!   decided step: nominally 1 µs, and when the decision byte is 0xF0 or
//!   above (1 in 16 on a random tail, as a `fault!`) a jump of 1 to 600
//!   seconds, long enough to expire leases and timeouts.
//! - `random_get` fills the buffer with decision bytes.
//! - `poll_oneoff` sleeps in virtual time (the earliest clock subscription
//!   fires; no real waiting); `sched_yield` does nothing.
//! - `fd_write` to 1 and 2 is captured; `fd_read` on 0 reads nothing.
//! - `args_*` and `environ_*` are fixed per campaign; `proc_exit` ends the
//!   run with its status.
//! - `fd_close`, `fd_fdstat_get`, `fd_filestat_get`, `fd_prestat_get`,
//!   `fd_prestat_dir_name`, `fd_seek`: what std programs call at start (no
//!   files, no preopened directories, so `path_open` is `EBADF`).
//!
//! Decisions are written by the host's recorder of the run protocol
//! (`dst::protocol`), so they land in the decision trace, the trace hash
//! and decision coverage exactly as a Rust target's do.

use dst::decision::{Kind, Value};
use dst::protocol::SiteText;
use wasmi::{Caller, Error, Extern, Linker};

/// The module WASI preview 1 functions are imported from.
pub const MODULE: &str = "wasi_snapshot_preview1";

/// Every function dst provides, by name.
pub const PROVIDED: &[&str] = &[
    "args_get",
    "args_sizes_get",
    "environ_get",
    "environ_sizes_get",
    "clock_res_get",
    "clock_time_get",
    "fd_write",
    "fd_read",
    "fd_close",
    "fd_fdstat_get",
    "fd_filestat_get",
    "fd_prestat_get",
    "fd_prestat_dir_name",
    "fd_seek",
    "path_open",
    "poll_oneoff",
    "proc_exit",
    "random_get",
    "sched_yield",
];

pub const SUCCESS: i32 = 0;
pub const EBADF: i32 = 8;
pub const EFAULT: i32 = 21;
pub const EINVAL: i32 = 28;
pub const ENOSYS: i32 = 52;
pub const ESPIPE: i32 = 70;

/// The decision site of `random_get`: the one it had as a call of
/// `dst::random::fill` at this file's line 374 (a caller site, hashed from
/// its location), kept so that stored runs replay to the same trace.
const RANDOM_SITE: SiteText<'static> = SiteText {
    id: dst::catalog::site_hash(RANDOM_FILE, 374, 17),
    file: RANDOM_FILE,
    line: 374,
    column: 17,
    name: None,
};
const RANDOM_FILE: &str = "executors/src/wasm/wasi.rs";

/// Virtual time at the start of every run (`dst::world::clock::EPOCH_NS`).
use dst::world::clock::EPOCH_NS;

/// What WASI calls see and leave, per run.
#[derive(Debug, Default)]
pub struct Host {
    /// Command-line arguments (the program's name first) and environment
    /// (`KEY=VALUE`), fixed per campaign.
    pub args: Vec<String>,
    pub env: Vec<String>,
    /// Virtual nanoseconds since the run started.
    pub now: u64,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Captured output kept per stream, at most this many bytes.
    pub capture_limit: usize,
    /// WASI calls made this run, when recording (name and result).
    pub calls: Option<Vec<(String, i32)>>,
    /// The module's catalog sites by id, for the SDK's hooks.
    pub sites: std::sync::Arc<super::Sites>,
    /// Writes the runs into the executor's region (`None` only in a host
    /// taken out of its store).
    pub recorder: Option<crate::guest::Recorder>,
}

impl Host {
    /// Back to the state every run starts from (arguments and environment
    /// stay).
    pub fn reset(&mut self, record: bool) {
        self.now = 0;
        self.stdout.clear();
        self.stderr.clear();
        self.calls = record.then(Vec::new);
    }

    fn called(&mut self, name: &str, result: i32) -> i32 {
        if let Some(calls) = &mut self.calls {
            calls.push((name.to_string(), result));
        }
        result
    }

    /// The run's recorder.
    pub fn recorder(&mut self) -> &mut crate::guest::Recorder {
        self.recorder
            .as_mut()
            .expect("a host in its store has its recorder")
    }

    /// One clock reading: virtual time advances by the decided step
    /// (`dst::world::clock`).
    fn tick(&mut self) -> u64 {
        let step =
            dst::world::clock::step(self.recorder(), "dst wasi: clock", "dst wasi: clock jump");
        self.now = self.now.saturating_add(step);
        self.now
    }
}

/// The guest's memory, for reading and writing arguments.
pub(super) fn memory<'a>(caller: &'a mut Caller<'_, Host>) -> Option<(&'a mut [u8], &'a mut Host)> {
    let memory = caller
        .get_export(super::rewrite::MEMORY_EXPORT)
        .and_then(Extern::into_memory)?;
    Some(memory.data_and_store_mut(caller))
}

pub(super) fn slice(memory: &[u8], at: i32, len: usize) -> Option<&[u8]> {
    let at = at as u32 as usize;
    memory.get(at..at.checked_add(len)?)
}

pub(super) fn slice_mut(memory: &mut [u8], at: i32, len: usize) -> Option<&mut [u8]> {
    let at = at as u32 as usize;
    memory.get_mut(at..at.checked_add(len)?)
}

fn read_u32(memory: &[u8], at: i32) -> Option<u32> {
    slice(memory, at, 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

fn write_bytes(memory: &mut [u8], at: i32, bytes: &[u8]) -> Option<()> {
    slice_mut(memory, at, bytes.len())?.copy_from_slice(bytes);
    Some(())
}

/// Writes a list of strings as WASI does: pointers at `list`, the
/// NUL-terminated strings at `buf`.
fn write_strings(memory: &mut [u8], items: &[String], list: i32, buf: i32) -> Option<()> {
    let mut at = buf as u32;
    for (i, item) in items.iter().enumerate() {
        write_bytes(memory, list.checked_add(4 * i as i32)?, &at.to_le_bytes())?;
        write_bytes(memory, at as i32, item.as_bytes())?;
        write_bytes(memory, (at as i32).checked_add(item.len() as i32)?, &[0])?;
        at = at.checked_add(item.len() as u32 + 1)?;
    }
    Some(())
}

fn sizes(memory: &mut [u8], items: &[String], count: i32, size: i32) -> Option<()> {
    let bytes: usize = items.iter().map(|s| s.len() + 1).sum();
    write_bytes(memory, count, &(items.len() as u32).to_le_bytes())?;
    write_bytes(memory, size, &(bytes as u32).to_le_bytes())
}

/// Runs `f` on the guest's memory and the host; a missing memory or an
/// access outside it is `EFAULT`. Records the call.
fn with_memory(
    caller: &mut Caller<'_, Host>,
    name: &str,
    f: impl FnOnce(&mut [u8], &mut Host) -> Option<i32>,
) -> i32 {
    let result = match memory(caller) {
        Some((memory, host)) => f(memory, host).unwrap_or(EFAULT),
        None => EFAULT,
    };
    caller.data_mut().called(name, result)
}

/// Defines every function of [`PROVIDED`] in `linker`.
pub fn define(linker: &mut Linker<Host>) -> Result<(), wasmi::errors::LinkerError> {
    linker.func_wrap(
        MODULE,
        "args_get",
        |mut c: Caller<'_, Host>, list: i32, buf: i32| {
            with_memory(&mut c, "args_get", |m, h| {
                write_strings(m, &h.args, list, buf).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "args_sizes_get",
        |mut c: Caller<'_, Host>, n: i32, size: i32| {
            with_memory(&mut c, "args_sizes_get", |m, h| {
                sizes(m, &h.args, n, size).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "environ_get",
        |mut c: Caller<'_, Host>, list: i32, buf: i32| {
            with_memory(&mut c, "environ_get", |m, h| {
                write_strings(m, &h.env, list, buf).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "environ_sizes_get",
        |mut c: Caller<'_, Host>, n: i32, size: i32| {
            with_memory(&mut c, "environ_sizes_get", |m, h| {
                sizes(m, &h.env, n, size).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "clock_res_get",
        |mut c: Caller<'_, Host>, id: i32, at: i32| {
            with_memory(&mut c, "clock_res_get", |m, _| {
                if !(0..=3).contains(&id) {
                    return Some(EINVAL);
                }
                write_bytes(m, at, &dst::world::clock::STEP_NS.to_le_bytes()).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "clock_time_get",
        |mut c: Caller<'_, Host>, id: i32, _precision: i64, at: i32| {
            with_memory(&mut c, "clock_time_get", |m, h| {
                let now = match id {
                    0 => EPOCH_NS.saturating_add(h.tick()),
                    1..=3 => h.tick(),
                    _ => return Some(EINVAL),
                };
                write_bytes(m, at, &now.to_le_bytes()).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_write",
        |mut c: Caller<'_, Host>, fd: i32, iovs: i32, n: i32, written: i32| {
            with_memory(&mut c, "fd_write", |m, h| {
                let mut total = 0u32;
                for i in 0..n.max(0) {
                    let iov = iovs.checked_add(8 * i)?;
                    let (at, len) = (read_u32(m, iov)?, read_u32(m, iov.checked_add(4)?)?);
                    let bytes = slice(m, at as i32, len as usize)?;
                    let out = match fd {
                        1 => &mut h.stdout,
                        2 => &mut h.stderr,
                        _ => return Some(EBADF),
                    };
                    let room = h.capture_limit.saturating_sub(out.len());
                    out.extend_from_slice(&bytes[..bytes.len().min(room)]);
                    total = total.checked_add(len)?;
                }
                write_bytes(m, written, &total.to_le_bytes()).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_read",
        |mut c: Caller<'_, Host>, fd: i32, _iovs: i32, _n: i32, read: i32| {
            with_memory(&mut c, "fd_read", |m, _| {
                if fd != 0 {
                    return Some(EBADF);
                }
                write_bytes(m, read, &0u32.to_le_bytes()).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(MODULE, "fd_close", |mut c: Caller<'_, Host>, fd: i32| {
        let result = if (0..=2).contains(&fd) {
            SUCCESS
        } else {
            EBADF
        };
        c.data_mut().called("fd_close", result)
    })?;
    linker.func_wrap(
        MODULE,
        "fd_fdstat_get",
        |mut c: Caller<'_, Host>, fd: i32, at: i32| {
            with_memory(&mut c, "fd_fdstat_get", |m, _| {
                if !(0..=2).contains(&fd) {
                    return Some(EBADF);
                }
                // A character device, no flags, every right.
                let mut stat = [0u8; 24];
                stat[0] = 2;
                stat[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
                stat[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
                write_bytes(m, at, &stat).map(|()| SUCCESS)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_get",
        |mut c: Caller<'_, Host>, fd: i32, at: i32| {
            with_memory(&mut c, "fd_filestat_get", |m, _| {
                if !(0..=2).contains(&fd) {
                    return Some(EBADF);
                }
                // A character device, one link, empty, all times zero.
                let mut stat = [0u8; 64];
                stat[16] = 2;
                stat[24..32].copy_from_slice(&1u64.to_le_bytes());
                write_bytes(m, at, &stat).map(|()| SUCCESS)
            })
        },
    )?;
    // No directory is preopened, so no descriptor names one to open in.
    linker.func_wrap(
        MODULE,
        "path_open",
        |mut c: Caller<'_, Host>,
         _dir: i32,
         _dirflags: i32,
         _path: i32,
         _path_len: i32,
         _oflags: i32,
         _base: i64,
         _inheriting: i64,
         _fdflags: i32,
         _opened: i32| c.data_mut().called("path_open", EBADF),
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_get",
        |mut c: Caller<'_, Host>, _fd: i32, _at: i32| c.data_mut().called("fd_prestat_get", EBADF),
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_dir_name",
        |mut c: Caller<'_, Host>, _fd: i32, _at: i32, _len: i32| {
            c.data_mut().called("fd_prestat_dir_name", EBADF)
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_seek",
        |mut c: Caller<'_, Host>, fd: i32, _offset: i64, _whence: i32, _at: i32| {
            let result = if (0..=2).contains(&fd) { ESPIPE } else { EBADF };
            c.data_mut().called("fd_seek", result)
        },
    )?;
    linker.func_wrap(
        MODULE,
        "poll_oneoff",
        |mut c: Caller<'_, Host>, subs: i32, events: i32, n: i32, count: i32| {
            with_memory(&mut c, "poll_oneoff", |m, h| {
                poll(m, h, subs, events, n, count)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |mut c: Caller<'_, Host>, code: i32| -> Result<(), Error> {
            c.data_mut().called("proc_exit", code);
            Err(Error::i32_exit(code))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "random_get",
        |mut c: Caller<'_, Host>, at: i32, len: i32| {
            with_memory(&mut c, "random_get", |m, h| {
                let buf = slice_mut(m, at, len as u32 as usize)?;
                h.recorder()
                    .decide_at(Kind::Fill, RANDOM_SITE, buf, Value::Hash);
                Some(SUCCESS)
            })
        },
    )?;
    linker.func_wrap(MODULE, "sched_yield", |mut c: Caller<'_, Host>| {
        c.data_mut().called("sched_yield", SUCCESS)
    })?;
    Ok(())
}

/// `poll_oneoff`: every fd subscription is ready at once; otherwise
/// virtual time moves to the earliest clock subscription, which fires.
fn poll(m: &mut [u8], h: &mut Host, subs: i32, events: i32, n: i32, count: i32) -> Option<i32> {
    if n <= 0 {
        return Some(EINVAL);
    }
    let mut fired = Vec::new();
    let mut earliest: Option<(u64, u64)> = None;
    for i in 0..n {
        let sub = slice(m, subs.checked_add(48 * i)?, 48)?;
        let userdata = u64::from_le_bytes(sub[0..8].try_into().ok()?);
        match sub[8] {
            0 => {
                let id = u32::from_le_bytes(sub[16..20].try_into().ok()?);
                let timeout = u64::from_le_bytes(sub[24..32].try_into().ok()?);
                let absolute = u16::from_le_bytes(sub[40..42].try_into().ok()?) & 1 != 0;
                let base = if id == 0 { EPOCH_NS } else { 0 };
                let due = if absolute {
                    timeout.saturating_sub(base)
                } else {
                    h.now.saturating_add(timeout)
                };
                if earliest.is_none_or(|(d, _)| due < d) {
                    earliest = Some((due, userdata));
                }
            }
            tag @ (1 | 2) => fired.push((userdata, tag)),
            _ => return Some(EINVAL),
        }
    }
    if fired.is_empty()
        && let Some((due, userdata)) = earliest
    {
        h.now = h.now.max(due);
        fired.push((userdata, 0));
    }
    for (i, (userdata, tag)) in fired.iter().enumerate() {
        let mut event = [0u8; 32];
        event[0..8].copy_from_slice(&userdata.to_le_bytes());
        event[10] = *tag;
        write_bytes(m, events.checked_add(32 * i as i32)?, &event)?;
    }
    write_bytes(m, count, &(fired.len() as u32).to_le_bytes())?;
    Some(SUCCESS)
}

#[cfg(test)]
mod tests {
    /// `RANDOM_SITE` names this file as a caller site's `Location` does
    /// (the path rustc was given, from the workspace's root).
    #[test]
    fn the_random_site_names_this_file_as_a_caller_site_would() {
        assert_eq!(std::panic::Location::caller().file(), super::RANDOM_FILE);
    }
}
