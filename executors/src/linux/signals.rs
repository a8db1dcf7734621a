//! Signals: the process's table of actions (`rt_sigaction`), each
//! thread's mask (`rt_sigprocmask`) and alternate stack (`sigaltstack`),
//! and sending (`kill`, `tkill`, `tgkill`).
//!
//! A signal whose action is the default either is ignored (SIGCHLD,
//! SIGURG, SIGWINCH, SIGCONT) or ends the process (the front reports it
//! as the program's crash); one that is ignored is dropped; one bound for
//! a handler, or blocked, waits in the thread's pending set until the
//! front delivers it ([`Signals::take`], [`Signals::deliver`]) where Linux
//! does, on the way back to the program: a frame as riscv64 Linux lays it
//! out (`struct rt_sigframe`: siginfo, then a ucontext with the
//! registers) on the thread's stack or its alternate stack, the handler
//! called with the vDSO's return trampoline ([`TRAMPOLINE`]) as its return
//! address, and `rt_sigreturn` restoring the registers and mask from the
//! frame ([`Signals::sigreturn`]).

use std::collections::BTreeMap;

use super::{EFAULT, EINVAL, Guest, Outcome, written};

/// The vDSO page, where a handler returns to: `li a7, 139; ecall`
/// (`rt_sigreturn`), as Linux's `__vdso_rt_sigreturn` (riscv64 has no
/// `sa_restorer`). The front maps it ([`Signals::map_vdso`]).
pub const TRAMPOLINE: u64 = 0x7FFF_F800_0000;
/// A signal frame's bytes: siginfo (128), then the ucontext (960).
const FRAME: u64 = 1088;
/// Offsets in the frame: the ucontext, its stack_t, mask and registers
/// (`uc_mcontext.sc_regs`: pc, then x1 to x31), the floating-point state
/// (`__riscv_d_ext_state`: f0 to f31, fcsr).
const UC: u64 = 128;
const UC_STACK: u64 = UC + 16;
const UC_SIGMASK: u64 = UC + 40;
const UC_REGS: u64 = UC + 176;
const UC_FP: u64 = UC_REGS + 256;
/// `sa_flags` bits.
const SA_ONSTACK: u64 = 0x0800_0000;
/// A call the signal interrupted is made again after its handler.
pub const SA_RESTART: u64 = 0x1000_0000;
const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;
/// `SS_ONSTACK`: the thread runs on its alternate stack.
const SS_ONSTACK: u32 = 1;

/// A thread's registers, as a signal frame saves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs {
    /// x0 to x31 (x0 is not saved).
    pub x: [u64; 32],
    pub f: [u64; 32],
    pub pc: u64,
    pub fcsr: u32,
}

/// Why a signal came: siginfo's code and what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Sent by `kill` or `tgkill` (SI_TKILL, from pid 1).
    Sent,
    /// A fault of the thread's own access (SIGSEGV, SIGBUS, SIGILL): its
    /// code (`SEGV_MAPERR`, ...) and address.
    Fault { code: i32, address: u64 },
}

/// Signal numbers run from 1 to this.
pub const SIGNALS: u64 = 64;
/// `sa_handler` values.
const SIG_DFL: u64 = 0;
const SIG_IGN: u64 = 1;
const SIGKILL: u64 = 9;
const SIGSTOP: u64 = 19;

/// One `struct sigaction` as riscv64 Linux takes it (no restorer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SigAction {
    pub handler: u64,
    pub flags: u64,
    pub mask: u64,
}

impl SigAction {
    const SIZE: usize = 24;

    fn bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..8].copy_from_slice(&self.handler.to_le_bytes());
        out[8..16].copy_from_slice(&self.flags.to_le_bytes());
        out[16..].copy_from_slice(&self.mask.to_le_bytes());
        out
    }
}

/// A thread's alternate signal stack (`stack_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AltStack {
    pub sp: u64,
    pub flags: u32,
    pub size: u64,
}

/// `SS_DISABLE`: no alternate stack.
const SS_DISABLE: u32 = 2;

impl Default for AltStack {
    fn default() -> AltStack {
        AltStack {
            sp: 0,
            flags: SS_DISABLE,
            size: 0,
        }
    }
}

/// The signal state of a process and its threads.
#[derive(Debug, Clone)]
pub struct Signals {
    /// By signal number minus one.
    actions: [SigAction; SIGNALS as usize],
    /// Blocked signals of each thread (bit `n - 1` for signal `n`).
    masks: BTreeMap<u64, u64>,
    /// Signals sent to each thread and not delivered (blocked).
    pending: BTreeMap<u64, u64>,
    altstacks: BTreeMap<u64, AltStack>,
}

impl Default for Signals {
    fn default() -> Signals {
        Signals {
            actions: [SigAction::default(); SIGNALS as usize],
            masks: BTreeMap::new(),
            pending: BTreeMap::new(),
            altstacks: BTreeMap::new(),
        }
    }
}

fn bit(signal: u64) -> u64 {
    debug_assert!((1..=SIGNALS).contains(&signal));
    1 << (signal - 1)
}

impl Signals {
    /// The action of `signal` (1 to 64).
    pub fn action(&self, signal: u64) -> SigAction {
        self.actions[(signal - 1) as usize]
    }

    /// Thread `child` was created by `parent`: it starts with its mask.
    pub fn thread_created(&mut self, parent: u64, child: u64) {
        let mask = self.masks.get(&parent).copied().unwrap_or(0);
        self.masks.insert(child, mask);
    }

    /// Signals sent to `tid` and not delivered yet.
    pub fn pending(&self, tid: u64) -> u64 {
        self.pending.get(&tid).copied().unwrap_or(0)
    }

    /// Maps the vDSO's return trampoline ([`TRAMPOLINE`]).
    pub fn map_vdso(guest: &mut impl Guest) {
        guest.map(TRAMPOLINE, super::PAGE, super::READ | super::WRITE);
        let mut code = [0u8; 8];
        code[..4].copy_from_slice(&0x08B0_0893u32.to_le_bytes()); // addi a7, zero, 139
        code[4..].copy_from_slice(&0x0000_0073u32.to_le_bytes()); // ecall
        let written = guest.write(TRAMPOLINE, &code);
        debug_assert!(written.is_ok(), "the page was just mapped");
        guest.protect(TRAMPOLINE, super::PAGE, super::READ | super::EXEC);
    }

    /// Whether some thread has a signal waiting (a cheap test for the
    /// front's delivery point).
    pub fn any_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The lowest signal pending for `tid` that it does not block, taken
    /// off its pending set.
    pub fn take(&mut self, tid: u64) -> Option<u64> {
        let mask = self.masks.get(&tid).copied().unwrap_or(0);
        let ready = self.pending(tid) & !mask;
        if ready == 0 {
            return None;
        }
        let signal = u64::from(ready.trailing_zeros()) + 1;
        self.clear_pending(tid, signal);
        Some(signal)
    }

    fn clear_pending(&mut self, tid: u64, signal: u64) {
        if let Some(set) = self.pending.get_mut(&tid) {
            *set &= !bit(signal);
            if *set == 0 {
                self.pending.remove(&tid);
            }
        }
    }

    /// Whether thread `tid` blocks `signal` (its mask).
    pub fn blocks(&self, tid: u64, signal: u64) -> bool {
        self.masks.get(&tid).copied().unwrap_or(0) & bit(signal) != 0
    }

    /// Whether a fault's `signal` would run a handler in thread `tid`
    /// (else it ends the process, as a blocked or default one does).
    pub fn handles(&self, tid: u64, signal: u64) -> bool {
        let handler = self.action(signal).handler;
        handler != SIG_DFL && handler != SIG_IGN && !self.blocks(tid, signal)
    }

    /// Delivers `signal` to thread `tid`, whose registers are `regs`: its
    /// action taken, or its handler's frame built and `regs` set to call
    /// it. `Err` when the process ends (a default action, or a frame that
    /// cannot be written: SIGSEGV).
    pub fn deliver(
        &mut self,
        guest: &mut impl Guest,
        tid: u64,
        signal: u64,
        cause: Cause,
        regs: &mut Regs,
    ) -> Result<(), Outcome> {
        let action = self.action(signal);
        if action.handler == SIG_DFL || action.handler == SIG_IGN || signal == SIGKILL {
            return match self.act(signal) {
                None => Ok(()),
                Some(outcome) => Err(outcome),
            };
        }
        let alt = self.altstacks.get(&tid).copied().unwrap_or_default();
        let sp = regs.x[2];
        let on_alt = alt.flags & SS_DISABLE == 0 && (alt.sp..alt.sp + alt.size).contains(&sp);
        let top = if action.flags & SA_ONSTACK != 0 && alt.flags & SS_DISABLE == 0 && !on_alt {
            alt.sp + alt.size
        } else {
            sp
        };
        let frame = top.wrapping_sub(FRAME) & !15;
        let mask = self.masks.get(&tid).copied().unwrap_or(0);
        let mut bytes = vec![0u8; FRAME as usize];
        let mut put = |at: u64, value: &[u8]| {
            bytes[at as usize..at as usize + value.len()].copy_from_slice(value);
        };
        put(0, &(signal as i32).to_le_bytes());
        match cause {
            Cause::Sent => {
                put(8, &(-6i32).to_le_bytes()); // SI_TKILL
                put(16, &1i32.to_le_bytes()); // from pid 1, uid 0
            }
            Cause::Fault { code, address } => {
                put(8, &code.to_le_bytes());
                put(16, &address.to_le_bytes());
            }
        }
        put(UC_STACK, &alt.sp.to_le_bytes());
        let flags = if on_alt || top != sp {
            alt.flags | SS_ONSTACK
        } else {
            alt.flags
        };
        put(UC_STACK + 8, &flags.to_le_bytes());
        put(UC_STACK + 16, &alt.size.to_le_bytes());
        put(UC_SIGMASK, &mask.to_le_bytes());
        put(UC_REGS, &regs.pc.to_le_bytes());
        for i in 1..32 {
            put(UC_REGS + 8 * i as u64, &regs.x[i].to_le_bytes());
        }
        for i in 0..32 {
            put(UC_FP + 8 * i as u64, &regs.f[i].to_le_bytes());
        }
        put(UC_FP + 256, &regs.fcsr.to_le_bytes());
        if guest.write(frame, &bytes).is_err() {
            // Linux forces SIGSEGV on a thread whose frame cannot be
            // written; its handler would fault the same way.
            return Err(Outcome::Killed(11));
        }
        let mut blocked = mask | action.mask;
        if action.flags & SA_NODEFER == 0 {
            blocked |= bit(signal);
        }
        self.masks
            .insert(tid, blocked & !(bit(SIGKILL) | bit(SIGSTOP)));
        if action.flags & SA_RESETHAND != 0 {
            self.actions[(signal - 1) as usize] = SigAction::default();
        }
        regs.x[1] = TRAMPOLINE;
        regs.x[2] = frame;
        regs.x[10] = signal;
        regs.x[11] = frame;
        regs.x[12] = frame + UC;
        regs.pc = action.handler;
        Ok(())
    }

    /// `rt_sigreturn` of thread `tid`: the registers and mask saved in the
    /// frame at its stack pointer come back (the handler may have changed
    /// them, as Go's preemption does with the pc). `Err`: the frame is
    /// not readable (SIGSEGV).
    pub fn sigreturn(
        &mut self,
        guest: &impl Guest,
        tid: u64,
        regs: &mut Regs,
    ) -> Result<(), Outcome> {
        let frame = regs.x[2];
        let mut bytes = vec![0u8; FRAME as usize];
        if guest.read(frame, &mut bytes).is_err() {
            return Err(Outcome::Killed(11));
        }
        let word = |at: u64| {
            let at = at as usize;
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
        };
        let mask = word(UC_SIGMASK) & !(bit(SIGKILL) | bit(SIGSTOP));
        self.masks.insert(tid, mask);
        regs.pc = word(UC_REGS);
        for i in 1..32 {
            regs.x[i] = word(UC_REGS + 8 * i as u64);
        }
        for i in 0..32 {
            regs.f[i] = word(UC_FP + 8 * i as u64);
        }
        regs.fcsr = word(UC_FP + 256) as u32;
        let (sp, flags, size) = (
            word(UC_STACK),
            word(UC_STACK + 8) as u32,
            word(UC_STACK + 16),
        );
        if flags & SS_DISABLE != 0 || size >= 2048 {
            self.altstacks.insert(
                tid,
                AltStack {
                    sp,
                    flags: flags & SS_DISABLE,
                    size,
                },
            );
        }
        Ok(())
    }

    /// `kill` (129), `tkill` (130), `tgkill` (131), `sigaltstack` (132),
    /// `rt_sigaction` (134), `rt_sigprocmask` (135), `rt_sigpending`
    /// (136)
    /// of thread `tid`.
    pub fn call(&mut self, guest: &mut impl Guest, tid: u64, number: u64, a: [u64; 6]) -> Outcome {
        let r = match number {
            129 => {
                // kill(pid, signal): this process is pid 1 (0 and -1 name it too)
                if !matches!(a[0] as i64, -1..=1) {
                    -3 // ESRCH
                } else {
                    return self.send(tid, a[1]);
                }
            }
            130 | 131 => {
                // tkill(tid, signal), tgkill(pid, tid, signal): a thread
                // of this process (the front checks the tid exists).
                let (target, signal) = if number == 130 {
                    (a[0], a[1])
                } else {
                    (a[1], a[2])
                };
                return self.send(target, signal);
            }
            132 => {
                // sigaltstack(new, old)
                let current = self.altstacks.get(&tid).copied().unwrap_or_default();
                if a[1] != 0 {
                    let mut old = [0u8; 24];
                    old[..8].copy_from_slice(&current.sp.to_le_bytes());
                    old[8..12].copy_from_slice(&current.flags.to_le_bytes());
                    old[16..].copy_from_slice(&current.size.to_le_bytes());
                    if guest.write(a[1], &old).is_err() {
                        return Outcome::Return(EFAULT);
                    }
                }
                if a[0] != 0 {
                    let (Ok(sp), Ok(flags), Ok(size)) = (
                        guest.load::<8>(a[0]),
                        guest.load::<4>(a[0] + 8),
                        guest.load::<8>(a[0] + 16),
                    ) else {
                        return Outcome::Return(EFAULT);
                    };
                    let flags = flags as u32;
                    if flags & !SS_DISABLE != 0 {
                        return Outcome::Return(EINVAL);
                    }
                    if flags & SS_DISABLE == 0 && size < 2048 {
                        return Outcome::Return(-12); // ENOMEM: below MINSIGSTKSZ
                    }
                    self.altstacks.insert(tid, AltStack { sp, flags, size });
                }
                0
            }
            134 => {
                // rt_sigaction(signal, new, old, sigsetsize)
                let signal = a[0];
                if !(1..=SIGNALS).contains(&signal) || a[3] != 8 {
                    return Outcome::Return(EINVAL);
                }
                if a[2] != 0 && guest.write(a[2], &self.action(signal).bytes()).is_err() {
                    return Outcome::Return(EFAULT);
                }
                if a[1] != 0 {
                    if signal == SIGKILL || signal == SIGSTOP {
                        return Outcome::Return(EINVAL);
                    }
                    let (Ok(handler), Ok(flags), Ok(mask)) = (
                        guest.load::<8>(a[1]),
                        guest.load::<8>(a[1] + 8),
                        guest.load::<8>(a[1] + 16),
                    ) else {
                        return Outcome::Return(EFAULT);
                    };
                    self.actions[(signal - 1) as usize] = SigAction {
                        handler,
                        flags,
                        mask: mask & !(bit(SIGKILL) | bit(SIGSTOP)),
                    };
                }
                0
            }
            135 => {
                // rt_sigprocmask(how, set, old, sigsetsize)
                if a[3] != 8 {
                    return Outcome::Return(EINVAL);
                }
                let current = self.masks.get(&tid).copied().unwrap_or(0);
                if a[2] != 0 && guest.write(a[2], &current.to_le_bytes()).is_err() {
                    return Outcome::Return(EFAULT);
                }
                if a[1] != 0 {
                    let Ok(set) = guest.load::<8>(a[1]) else {
                        return Outcome::Return(EFAULT);
                    };
                    let mask = match a[0] {
                        0 => current | set,  // SIG_BLOCK
                        1 => current & !set, // SIG_UNBLOCK
                        2 => set,            // SIG_SETMASK
                        _ => return Outcome::Return(EINVAL),
                    };
                    let mask = mask & !(bit(SIGKILL) | bit(SIGSTOP));
                    self.masks.insert(tid, mask);
                    // Pending signals it unblocks take effect now, lowest
                    // first (abort() raises SIGABRT with every signal
                    // blocked, then unblocks it).
                    let ready = self.pending(tid) & !mask;
                    if ready != 0 {
                        let signal = u64::from(ready.trailing_zeros()) + 1;
                        let handled = !matches!(self.action(signal).handler, SIG_DFL | SIG_IGN);
                        if !handled {
                            self.clear_pending(tid, signal);
                            if let Some(outcome) = self.act(signal) {
                                return outcome;
                            }
                        }
                    }
                }
                0
            }
            136 => {
                // rt_sigpending(set, sigsetsize)
                written(guest.write(a[0], &self.pending(tid).to_le_bytes()))
            }
            _ => return Outcome::NotMine,
        };
        Outcome::Return(r)
    }

    /// Sends `signal` to thread `tid`: dropped if ignored, pending if
    /// blocked, else its action taken.
    pub fn send(&mut self, tid: u64, signal: u64) -> Outcome {
        if signal == 0 {
            return Outcome::Return(0);
        }
        if signal > SIGNALS {
            return Outcome::Return(EINVAL);
        }
        let blocked = self.masks.get(&tid).copied().unwrap_or(0) & bit(signal) != 0;
        let handled = !matches!(self.action(signal).handler, SIG_DFL | SIG_IGN);
        if (blocked || handled) && signal != SIGKILL && signal != SIGSTOP && !self.ignores(signal) {
            // Delivered by the front on the thread's way back to the
            // program (now, if it is the caller), or when unblocked.
            *self.pending.entry(tid).or_default() |= bit(signal);
            return Outcome::Return(0);
        }
        self.act(signal).unwrap_or(Outcome::Return(0))
    }

    /// Whether `signal` is dropped when sent (its action ignores it).
    fn ignores(&self, signal: u64) -> bool {
        let handler = self.action(signal).handler;
        signal != SIGKILL
            && signal != SIGSTOP
            && (handler == SIG_IGN || (handler == SIG_DFL && ignored_by_default(signal)))
    }

    /// The action of an unblocked `signal`: `None` when it is ignored.
    fn act(&mut self, signal: u64) -> Option<Outcome> {
        if self.ignores(signal) {
            return None;
        }
        let handler = self.action(signal).handler;
        Some(
            if signal == SIGSTOP || (handler == SIG_DFL && (20..=22).contains(&signal)) {
                Outcome::Unsupported(Some("a signal that stops the process"))
            } else {
                debug_assert!(
                    handler == SIG_DFL || signal == SIGKILL,
                    "handlers are the front's"
                );
                Outcome::Killed(signal as i32)
            },
        )
    }
}

/// Whether the default action of `signal` is to ignore it.
fn ignored_by_default(signal: u64) -> bool {
    matches!(signal, 17 | 18 | 23 | 28) // SIGCHLD, SIGCONT, SIGURG, SIGWINCH
}
