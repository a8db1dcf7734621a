//! Guest threads: `clone` makes one, `futex` blocks and wakes them, and
//! one runs at a time. Which runs next is a decision at every scheduling
//! point (clone, futex, yield, sleep, a thread's exit) where more than one
//! could, and the running thread can be preempted after any instruction.
//!
//! The encoding keeps the stream short and shrinkable, as PCT's change
//! points do: at each contested point two decisions are taken, which
//! thread runs (one byte, a choice among the runnable threads in nominal
//! order: the current one first unless it yields, then the others from it
//! in thread order) and how many instructions it runs before it is
//! preempted (two bytes: 0 never, else a count on a log scale, from 1 to
//! millions). The all-zero input preempts only as a kernel's timer does,
//! a thread that ran [`QUANTUM`] instructions while others could (fair
//! time slices: a spin-wait ends), a decided preemption is two nonzero
//! bytes, and a preempted thread goes last in the next point's order, so
//! the next byte 0 runs another thread. Each preemption counts
//! the pair (preempted pc, resumed pc) as interleaving coverage.
//!
//! This is the one scheduling encoding of every level (`dst::decision`'s
//! doc): the SDK's strategies (`dst::sched`: direct, PCT, POS) drive
//! baton-passing OS threads at SDK calls and `dst::sim` polls tasks with
//! the same schedule decisions; here the scheduler is the CPU's own loop,
//! and the slice is counted in instructions.
//! Every thread waiting in `futex` without a timeout is a deadlock, which
//! the executor reports as the SDK's own deadlock property.
//!
//! [`Threads`] is the thread table and its schedule; what its operations
//! use of the machine (the running thread's registers, memory, the virtual
//! clock, the recorder) they are given as `Parts`, so the machine calls
//! into this module and nothing here calls back.

use dst::decision::{Kind, Value};
use dst::protocol::SiteText;

use super::cpu::{Cpu, Memory};
use crate::guest::Recorder;

/// Why a thread is not running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Runnable,
    /// In `futex` wait on `address`, woken by a wake whose bitset meets
    /// `bitset`; `deadline` in virtual nanoseconds (monotonic), if any.
    Waiting {
        address: u64,
        bitset: u32,
        deadline: Option<u64>,
        /// Order of waiting (wakes are first in, first out).
        since: u64,
    },
    Exited,
}

/// A guest thread. The running thread's registers are the machine's
/// `cpu`; `cpu` here holds them while the thread is switched out.
#[derive(Debug, Clone)]
pub struct Thread {
    pub tid: u64,
    pub cpu: Cpu,
    pub state: State,
    /// `CLONE_CHILD_CLEARTID`: zeroed and woken when the thread exits.
    pub clear_tid: u64,
}

/// A scheduling point: why the scheduler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    Clone,
    Wait,
    Wake,
    Yield,
    Sleep,
    Exit,
    Preempt,
    /// A system call of the application kernel blocked (see [`POLL`]).
    Block,
}

impl Why {
    pub fn name(self) -> &'static str {
        match self {
            Why::Clone => "clone",
            Why::Wait => "futex wait",
            Why::Wake => "futex wake",
            Why::Yield => "sched_yield",
            Why::Sleep => "sleep",
            Why::Exit => "exit",
            Why::Preempt => "preemption",
            Why::Block => "blocking call",
        }
    }

    /// Whether the current thread goes last (it gives way).
    fn gives_way(self) -> bool {
        matches!(self, Why::Yield | Why::Sleep | Why::Preempt)
    }
}

/// One switch of the running thread, for replays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// Instructions retired when it happened.
    pub at: u64,
    pub why: Why,
    pub from: u32,
    pub to: u32,
    /// Where the thread that runs now resumes.
    pub pc: u64,
    /// Where `from` stopped.
    pub from_pc: u64,
    /// `from` could have gone on.
    pub preempted: bool,
}

/// Instructions a thread runs, when others could, before the nominal
/// schedule preempts it (a kernel timer's time slice): a thread that spins
/// waiting for another one lets it run, as on a real kernel.
pub const QUANTUM: u64 = 200_000;

/// The address a thread blocked in a system call of the application
/// kernel waits on (`Outcome::Block`: ppoll, epoll_pwait, a read of an
/// empty pipe): no guest address is this. Such a thread is woken when a
/// file's readiness changes, or at its deadline, and makes its call again
/// (its result is not set: a0 still holds the call's first argument).
pub const POLL: u64 = u64::MAX;

/// The address a sleeping thread (`nanosleep`, `clock_nanosleep`) waits
/// on until its deadline: it runs again once virtual time reaches it.
pub const SLEEP: u64 = u64::MAX - 1;

/// Why no thread can run at a scheduling point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stall {
    /// Every live thread waits for ever: (tid, futex address, pc) each.
    Deadlock(Waiting),
    /// The machine runs in a cluster ([`Threads::idle_exit`]): its threads
    /// wait, and the cluster decides when time passes or bytes arrive.
    Idle,
}

/// Threads a run may have (a `clone` past it fails with EAGAIN).
pub const MAX_THREADS: usize = 256;

const CLONE_VM: u64 = 0x100;
const CLONE_THREAD: u64 = 0x10000;
const CLONE_SETTLS: u64 = 0x80000;
const CLONE_PARENT_SETTID: u64 = 0x100000;
const CLONE_CHILD_CLEARTID: u64 = 0x200000;
const CLONE_CHILD_SETTID: u64 = 0x0100_0000;

/// What `clone` asks that the emulator cannot do (a new process).
pub const NOT_A_THREAD: &str = "clone without CLONE_VM | CLONE_THREAD (a new process)";

/// What the threads' operations use of the machine they run on.
pub(super) struct Parts<'a> {
    /// The running thread's registers.
    pub cpu: &'a mut Cpu,
    pub memory: &'a mut Memory,
    /// Virtual nanoseconds since the run started.
    pub now: &'a mut u64,
    /// Takes the schedule's decisions and counts preemptions.
    pub recorder: &'a mut Recorder,
    /// The node's realtime clock's offset (nanoseconds): an absolute
    /// realtime deadline is this much later in virtual time.
    pub skew: i64,
}

/// Threads waiting for ever, when none can run: (tid, futex address, pc)
/// each.
pub type Waiting = Vec<(u64, u64, u64)>;

/// The guest threads of a machine, and their schedule.
#[derive(Debug, Clone)]
pub struct Threads {
    /// Every thread, by index (0 is the main thread); `current` runs.
    pub list: Vec<Thread>,
    pub current: usize,
    /// Instructions retired at which the running thread is preempted.
    pub(super) slice_end: u64,
    /// The run's thread switches, in order.
    pub switches: Vec<Switch>,
    wait_seq: u64,
    /// When no thread can run, stop with [`Stall::Idle`] instead of
    /// moving virtual time to the earliest deadline: the machine is a node
    /// of a cluster, whose time is the cluster's.
    pub idle_exit: bool,
}

impl Threads {
    /// One thread (the main one, tid 1), running.
    pub(super) fn main() -> Threads {
        Threads {
            list: vec![Thread {
                tid: 1,
                cpu: Cpu::default(),
                state: State::Runnable,
                clear_tid: 0,
            }],
            current: 0,
            slice_end: u64::MAX,
            switches: Vec::new(),
            wait_seq: 0,
            idle_exit: false,
        }
    }

    /// Threads made so far (exited ones too).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Never: the main thread is always there.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The running thread's id.
    pub fn tid(&self) -> u64 {
        self.list[self.current].tid
    }

    /// `clone` of a thread (flags, stack, parent tid pointer, tls, child
    /// tid pointer); the child resumes after the `ecall` with a0 = 0. The
    /// caller's result (the new tid) is returned.
    pub(super) fn clone_thread(
        &mut self,
        m: &mut Parts<'_>,
        flags: u64,
        stack: u64,
        parent_tid: u64,
        tls: u64,
        child_tid: u64,
    ) -> Result<i64, &'static str> {
        if flags & (CLONE_VM | CLONE_THREAD) != CLONE_VM | CLONE_THREAD {
            return Err(NOT_A_THREAD);
        }
        if self.list.len() >= MAX_THREADS {
            return Ok(-11); // EAGAIN
        }
        let tid = self.list.iter().map(|t| t.tid).max().unwrap_or(0) + 1;
        let mut cpu = m.cpu.clone();
        cpu.x[10] = 0;
        if stack != 0 {
            cpu.x[2] = stack;
        }
        if flags & CLONE_SETTLS != 0 {
            cpu.x[4] = tls;
        }
        cpu.reservation = None;
        if flags & CLONE_PARENT_SETTID != 0 && m.memory.store(parent_tid, 4, tid).is_err() {
            return Ok(-14);
        }
        if flags & CLONE_CHILD_SETTID != 0 && m.memory.store(child_tid, 4, tid).is_err() {
            return Ok(-14);
        }
        self.list.push(Thread {
            tid,
            cpu,
            state: State::Runnable,
            clear_tid: if flags & CLONE_CHILD_CLEARTID != 0 {
                child_tid
            } else {
                0
            },
        });
        debug_assert!(self.list.len() <= MAX_THREADS);
        debug_assert!(
            self.list[..self.list.len() - 1].iter().all(|t| t.tid < tid),
            "thread ids are unique and grow"
        );
        Ok(tid as i64)
    }

    /// `futex(address, op, value, timeout, address2, value3)`: the result
    /// and whether the caller now waits. `Err` names an operation the
    /// emulator lacks.
    pub(super) fn futex(
        &mut self,
        m: &mut Parts<'_>,
        a: [u64; 6],
    ) -> Result<(i64, bool), &'static str> {
        const EAGAIN: i64 = -11;
        const EFAULT: i64 = -14;
        let [address, op, value, timeout, address2, value3] = a;
        let realtime = op & 256 != 0;
        let current = |m: &Parts<'_>| m.memory.load(address, 4).map(|v| v as u32);
        match op & 127 {
            cmd @ (0 | 9) => {
                // FUTEX_WAIT (relative timeout) and FUTEX_WAIT_BITSET (absolute)
                let Ok(now_value) = current(m) else {
                    return Ok((EFAULT, false));
                };
                if now_value != value as u32 {
                    return Ok((EAGAIN, false));
                }
                let deadline = if timeout == 0 {
                    None
                } else {
                    let (Ok(s), Ok(ns)) =
                        (m.memory.load(timeout, 8), m.memory.load(timeout + 8, 8))
                    else {
                        return Ok((EFAULT, false));
                    };
                    let t = s.saturating_mul(1_000_000_000).saturating_add(ns);
                    Some(if cmd == 0 {
                        m.now.saturating_add(t)
                    } else if realtime {
                        t.saturating_sub(dst::world::clock::EPOCH_NS.saturating_add_signed(m.skew))
                    } else {
                        t
                    })
                };
                let bitset = if cmd == 9 { value3 as u32 } else { u32::MAX };
                if bitset == 0 {
                    return Ok((-22, false));
                }
                self.wait_seq += 1;
                self.list[self.current].state = State::Waiting {
                    address,
                    bitset,
                    deadline,
                    since: self.wait_seq,
                };
                Ok((0, true))
            }
            cmd @ (1 | 10) => {
                let bitset = if cmd == 10 { value3 as u32 } else { u32::MAX };
                Ok((self.wake(m.cpu, address, value, bitset) as i64, false))
            }
            cmd @ (3 | 4) => {
                // FUTEX_REQUEUE, FUTEX_CMP_REQUEUE: wake `value`, move up
                // to `timeout` (val2) others to `address2`.
                if cmd == 4 {
                    match current(m) {
                        Err(_) => return Ok((EFAULT, false)),
                        Ok(v) if v != value3 as u32 => return Ok((EAGAIN, false)),
                        Ok(_) => {}
                    }
                }
                let woken = self.wake(m.cpu, address, value, u32::MAX);
                let mut moved = 0;
                for t in self.waiters(address, u32::MAX) {
                    if moved >= timeout {
                        break;
                    }
                    if let State::Waiting { address: a, .. } = &mut self.list[t].state {
                        *a = address2;
                        moved += 1;
                    }
                }
                Ok(((woken + moved) as i64, false))
            }
            5 => Err("futex FUTEX_WAKE_OP"),
            6..=8 | 11 | 12 => Err("futex priority-inheritance operations"),
            _ => Err("futex with an unknown operation"),
        }
    }

    /// The running thread blocks on `address` ([`POLL`]: in a call it
    /// will make again; [`SLEEP`]: sleeping), until woken or `deadline`.
    pub(super) fn block_on(&mut self, address: u64, deadline: Option<u64>) {
        debug_assert!(address == POLL || (address == SLEEP && deadline.is_some()));
        self.wait_seq += 1;
        self.list[self.current].state = State::Waiting {
            address,
            bitset: u32::MAX,
            deadline,
            since: self.wait_seq,
        };
    }

    /// The earliest deadline of a waiting thread.
    pub fn next_deadline(&self) -> Option<u64> {
        self.list
            .iter()
            .filter_map(|t| match t.state {
                State::Waiting { deadline, .. } => deadline,
                _ => None,
            })
            .min()
    }

    /// Whether the thread that ran last can go on.
    pub fn current_runnable(&self) -> bool {
        self.list[self.current].state == State::Runnable
    }

    /// Threads waiting on `address` whose bitset meets `bitset`, oldest
    /// first.
    fn waiters(&self, address: u64, bitset: u32) -> Vec<usize> {
        let mut found: Vec<(u64, usize)> = self
            .list
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.state {
                State::Waiting {
                    address: a,
                    bitset: b,
                    since,
                    ..
                } if a == address && b & bitset != 0 => Some((since, i)),
                _ => None,
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, i)| i).collect()
    }

    /// Wakes up to `count` waiters on `address`; returns how many.
    pub(super) fn wake(&mut self, cpu: &mut Cpu, address: u64, count: u64, bitset: u32) -> u64 {
        let mut woken = 0;
        for t in self.waiters(address, bitset) {
            if woken >= count {
                break;
            }
            self.list[t].state = State::Runnable;
            if address != POLL {
                self.set_result(cpu, t, 0);
            }
            woken += 1;
        }
        woken
    }

    /// A signal came for thread `tid`, whose handler will run: if it
    /// waits, it runs again to take it. A futex wait or a sleep returns
    /// EINTR; a call it would make again ([`POLL`]) is made again after
    /// the handler with `restart` (`SA_RESTART`; never a wait for
    /// readiness, as on Linux), else it returns EINTR now: `Some` of that
    /// call's number.
    pub(super) fn interrupt(&mut self, cpu: &mut Cpu, tid: u64, restart: bool) -> Option<u64> {
        let t = self.list.iter().position(|t| t.tid == tid)?;
        let State::Waiting { address, .. } = self.list[t].state else {
            return None;
        };
        self.list[t].state = State::Runnable;
        let regs = if t == self.current {
            &mut *cpu
        } else {
            &mut self.list[t].cpu
        };
        // Linux never restarts the waits for readiness (epoll_pwait,
        // pselect6, ppoll, epoll_pwait2), whatever the handler's flags.
        let never_restarted = matches!(regs.x[17], 22 | 72 | 73 | 441);
        if address == POLL && restart && !never_restarted {
            return None;
        }
        regs.x[10] = (-4i64) as u64; // EINTR
        if address != POLL {
            return None;
        }
        // Past the ecall it was to make again.
        regs.pc += 4;
        Some(regs.x[17])
    }

    /// The running thread exits (`exit`): its `clear_tid` is zeroed and
    /// woken. `Some(status)` when it was the last thread.
    pub(super) fn exit_thread(&mut self, m: &mut Parts<'_>, status: i32) -> Option<i32> {
        let me = self.current;
        self.list[me].state = State::Exited;
        let clear = self.list[me].clear_tid;
        if clear != 0 && m.memory.store(clear, 4, 0).is_ok() {
            self.wake(m.cpu, clear, 1, u32::MAX);
        }
        let alive = self.list.iter().any(|t| t.state != State::Exited);
        (!alive).then_some(status)
    }

    /// A scheduling point of the running thread: picks the thread that
    /// runs next and its preemption slice (see the module docs), and
    /// switches to it. `Err` when no thread can run (a deadlock).
    pub(super) fn schedule(&mut self, m: &mut Parts<'_>, why: Why) -> Result<(), Stall> {
        let me = self.current;
        self.time_out_waits(m, false);
        let gives_way = why.gives_way();
        let me_runnable = self.list[me].state == State::Runnable;
        let n = self.list.len();
        let mut order = Vec::with_capacity(n);
        if me_runnable && !gives_way {
            order.push(me);
        }
        order.extend(
            (1..n)
                .map(|i| (me + i) % n)
                .filter(|&t| self.list[t].state == State::Runnable),
        );
        if me_runnable && gives_way {
            order.push(me);
        }
        if order.is_empty() && self.idle_exit {
            return Err(Stall::Idle);
        }
        if order.is_empty() && self.time_out_waits(m, true) {
            order.extend((0..n).filter(|&t| self.list[t].state == State::Runnable));
        }
        debug_assert!(
            order.iter().all(|&t| self.list[t].state == State::Runnable),
            "only runnable threads are offered"
        );
        debug_assert!(order.len() <= MAX_THREADS, "a choice fits one byte");
        let next = match order.len() {
            0 => return Err(Stall::Deadlock(self.deadlock(m.cpu))),
            1 => order[0],
            len => {
                let name = format!("dst emulator: thread to run at {}", why.name());
                let width = dst::decision::below_width(len as u64);
                debug_assert_eq!(width, 1, "at most MAX_THREADS threads");
                let mut bytes = [0; 8];
                let value = Value::Mod(len as u64);
                order[decide(m, Kind::Schedule, &name, &mut bytes[..width], value) as usize]
            }
        };
        self.slice_end = u64::MAX;
        if order.len() > 1 {
            let v = decide(
                m,
                Kind::Change,
                "dst emulator: preemption slice",
                &mut [0; 2],
                Value::Be,
            );
            // Nominally the kernel's timer: a fair time slice.
            let slice = dst::decision::slice_of(v).unwrap_or(QUANTUM);
            debug_assert!(slice >= 1, "a preemption lets the thread run");
            self.slice_end = m.cpu.retired + slice;
        }
        if let Some(deadline) = self.next_deadline() {
            // A timer interrupt: the running thread stops when virtual
            // time (a nanosecond per instruction) reaches a waiter's
            // deadline, so a thread that spins lets a sleeper wake.
            let until = deadline.saturating_sub(*m.now).max(1);
            self.slice_end = self.slice_end.min(m.cpu.retired.saturating_add(until));
        }
        if next != me {
            self.switch_to(m, next, why, me_runnable);
        }
        Ok(())
    }

    fn switch_to(&mut self, m: &mut Parts<'_>, next: usize, why: Why, preempted: bool) {
        let me = self.current;
        debug_assert_ne!(next, me);
        debug_assert_eq!(self.list[next].state, State::Runnable);
        let retired = m.cpu.retired;
        let from_pc = m.cpu.pc;
        m.cpu.reservation = None;
        std::mem::swap(m.cpu, &mut self.list[me].cpu);
        std::mem::swap(m.cpu, &mut self.list[next].cpu);
        m.cpu.retired = retired;
        m.cpu.reservation = None;
        self.current = next;
        if preempted {
            m.recorder.count_interleaving(from_pc, m.cpu.pc ^ 0x5555);
        }
        if self.switches.len() < 100_000 {
            self.switches.push(Switch {
                at: retired,
                why,
                from: me as u32,
                to: next as u32,
                pc: m.cpu.pc,
                from_pc,
                preempted,
            });
        }
    }

    /// Wakes, timed out, the waits whose deadline passed; with `forced`
    /// (nothing can run), time first jumps to the earliest deadline.
    /// Returns whether a wait timed out.
    fn time_out_waits(&mut self, m: &mut Parts<'_>, forced: bool) -> bool {
        if forced {
            match self.next_deadline() {
                Some(deadline) => *m.now = (*m.now).max(deadline),
                None => return false,
            }
        }
        let mut any = false;
        for t in 0..self.list.len() {
            if let State::Waiting {
                deadline: Some(d),
                address,
                ..
            } = self.list[t].state
                && d <= *m.now
            {
                self.list[t].state = State::Runnable;
                if address != POLL && address != SLEEP {
                    self.set_result(m.cpu, t, -110); // ETIMEDOUT
                }
                any = true;
            }
        }
        any
    }

    /// Sets thread `t`'s system call result (a0), in the machine's `cpu`
    /// when it is the running thread.
    fn set_result(&mut self, cpu: &mut Cpu, t: usize, result: i64) {
        if t == self.current {
            cpu.x[10] = result as u64;
        } else {
            self.list[t].cpu.x[10] = result as u64;
        }
    }

    fn deadlock(&self, cpu: &Cpu) -> Waiting {
        self.list
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.state {
                State::Waiting { address, .. } => {
                    let pc = if i == self.current { cpu.pc } else { t.cpu.pc };
                    Some((t.tid, address, pc))
                }
                _ => None,
            })
            .collect()
    }
}

/// A decision of the schedule, at a site named by text.
fn decide(m: &mut Parts<'_>, kind: Kind, name: &str, bytes: &mut [u8], value: Value) -> u64 {
    m.recorder
        .decide_at(kind, SiteText::named(name), bytes, value)
}
