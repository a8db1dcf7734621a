//! The crash handler of a target process: when the run dies of a signal
//! (segfault, abort, bus error, illegal instruction, arithmetic fault), it
//! writes the signal, the faulting address and the stack from the faulting
//! pc outwards into the region's header, then lets the signal take its
//! previous course (the default action kills the process as before).
//!
//! Installed only in a process attached through `DST_REGION` (the process
//! executor); the explorer symbolizes the frames from the binary's DWARF.
//! The handler runs on its own stack, so a stack overflow is recorded too.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use crate::region::{CRASH_FRAMES, RegionRef};

const SIGNALS: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];
/// Frames walked before the faulting pc is found (the handler's own frames
/// and the signal trampoline come first).
const WALK: usize = CRASH_FRAMES + 16;
const ALT_STACK: usize = 64 * 1024;

/// Actions in place before ours, restored before the signal is re-delivered.
static mut PREVIOUS: [Option<libc::sigaction>; 5] = [None; 5];
/// The region the handler writes to.
static mut REGION: Option<RegionRef<'static>> = None;

#[repr(C)]
struct UnwindContext {
    _private: [u8; 0],
}
type UnwindTrace = extern "C" fn(*mut UnwindContext, *mut c_void) -> c_int;
unsafe extern "C" {
    fn _Unwind_Backtrace(trace: UnwindTrace, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(context: *mut UnwindContext) -> usize;
}

struct Walk {
    frames: [usize; WALK],
    len: usize,
}

extern "C" fn step(context: *mut UnwindContext, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` passed to `_Unwind_Backtrace` below, which
    // outlives the walk; `context` is the unwinder's current frame.
    let walk = unsafe { &mut *arg.cast::<Walk>() };
    if walk.len == WALK {
        return 4; // _URC_NORMAL_STOP
    }
    // SAFETY: as above.
    walk.frames[walk.len] = unsafe { _Unwind_GetIP(context) };
    walk.len += 1;
    0 // _URC_NO_REASON: go on
}

/// The faulting pc from the signal's machine context.
///
/// # Safety
/// `context` is the third argument of an `SA_SIGINFO` handler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn faulting_pc(context: *mut c_void) -> usize {
    // SAFETY: the kernel passes a `ucontext_t` to SA_SIGINFO handlers.
    unsafe {
        (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RIP as usize] as usize
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
unsafe fn faulting_pc(_context: *mut c_void) -> usize {
    0
}

/// The stack pointer from the signal's machine context.
///
/// # Safety
/// `context` is the third argument of an `SA_SIGINFO` handler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn faulting_sp(context: *mut c_void) -> usize {
    // SAFETY: the kernel passes a `ucontext_t` to SA_SIGINFO handlers.
    unsafe {
        (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RSP as usize] as usize
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
unsafe fn faulting_sp(_context: *mut c_void) -> usize {
    0
}

extern "C" fn on_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: REGION and PREVIOUS are written once by `install`, before the
    // handler is installed, and only read afterwards.
    let (region, previous) =
        unsafe { (*std::ptr::addr_of!(REGION), *std::ptr::addr_of!(PREVIOUS)) };
    if let Some(region) = region {
        let header = region.header();
        // SAFETY: arguments of an SA_SIGINFO handler.
        let pc = unsafe { faulting_pc(context) };
        // SAFETY: `info` is the kernel's siginfo for this signal.
        let address = unsafe { (*info).si_addr() } as u64;
        let mut walk = Walk {
            frames: [0; WALK],
            len: 0,
        };
        // SAFETY: `step` only touches `walk`, which lives across the call.
        unsafe { _Unwind_Backtrace(step, (&raw mut walk).cast()) };
        let walked = &walk.frames[..walk.len];
        let from = walked.iter().position(|&f| f == pc);
        let stack: &[usize] = match from {
            Some(i) => &walked[i..],
            None => &walked[walked.len().min(2)..],
        };
        let mut depth = 0;
        if from.is_none() && pc != 0 {
            header.crash_frames[0].store(pc as u64, Ordering::Relaxed);
            depth = 1;
        }
        for &frame in stack.iter().filter(|&&f| f != 0).take(CRASH_FRAMES - depth) {
            header.crash_frames[depth].store(frame as u64, Ordering::Relaxed);
            depth += 1;
        }
        header.crash_depth.store(depth as u64, Ordering::Relaxed);
        header.crash_address.store(address, Ordering::Relaxed);
        // SAFETY: as for the pc.
        let sp = unsafe { faulting_sp(context) };
        header.crash_sp.store(sp as u64, Ordering::Relaxed);
        header.crash_signal.store(signal as u64, Ordering::Release);
    }
    // Hand the signal back: restore what was there before (the default
    // action, or the program's own handler) and return, so the faulting
    // instruction runs again, or `abort` raises again, under that action.
    // A signal that was sent rather than raised by a fault (abort, kill)
    // would not come again on return: send it again.
    let slot = SIGNALS.iter().position(|&s| s == signal);
    // SAFETY: restoring a saved action (or the default) for this signal;
    // `info` is the kernel's siginfo.
    unsafe {
        match slot.and_then(|i| previous[i]) {
            Some(action) => libc::sigaction(signal, &action, std::ptr::null_mut()),
            None => {
                libc::signal(signal, libc::SIG_DFL);
                0
            }
        };
        if (*info).si_code <= 0 {
            libc::raise(signal);
        }
    }
}

/// In a forked child of an explorer: the crash signals' actions inherited
/// from the parent (LibAFL's in-process handlers, which would take the
/// child for their own process) go back to the default, then the handler
/// is installed for `region`, so the crash is recorded and kills the child.
pub(crate) fn install_in_child(region: RegionRef<'static>) {
    for &signal in &SIGNALS {
        // SAFETY: the default action is always a valid one to set.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    install(region);
}

/// Installs the handler for `region` (once per process; later calls only
/// change the region). The alternate stack is for the calling thread.
pub(crate) fn install(region: RegionRef<'static>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: written before the handler exists (first call) or while no
    // signal is being handled (a later attach, between runs).
    unsafe { *std::ptr::addr_of_mut!(REGION) = Some(region) };
    ONCE.call_once(|| {
        // Load the unwinder now: its first use may allocate and load code,
        // which a signal handler must not.
        let mut warm = Walk {
            frames: [0; WALK],
            len: 0,
        };
        // SAFETY: as in the handler.
        unsafe { _Unwind_Backtrace(step, (&raw mut warm).cast()) };
        // SAFETY: an anonymous private mapping for the alternate stack,
        // checked; it is never unmapped.
        unsafe {
            let stack = libc::mmap(
                std::ptr::null_mut(),
                ALT_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if stack != libc::MAP_FAILED {
                let alt = libc::stack_t {
                    ss_sp: stack,
                    ss_flags: 0,
                    ss_size: ALT_STACK,
                };
                libc::sigaltstack(&alt, std::ptr::null_mut());
            }
        }
        for (i, &signal) in SIGNALS.iter().enumerate() {
            // SAFETY: a zeroed sigaction is a valid value to fill in; the
            // handler has the SA_SIGINFO signature.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    (*std::ptr::addr_of_mut!(PREVIOUS))[i] = Some(old);
                }
            }
        }
    });
}
