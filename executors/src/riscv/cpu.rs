//! The CPU: registers, a paged memory, and [`Cpu::step`], which executes
//! one decoded instruction. System calls (`ecall`) and faults stop the step
//! and are handled by the caller (the machine).

use std::collections::HashMap;
use std::sync::Arc;

use super::decode::{Inst, Op, decode};

pub const PAGE: u64 = 4096;

/// Why a step did not simply continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `ecall`: the caller handles it and resumes at `pc + 4`.
    Ecall,
    Ebreak,
    /// An access to memory that is not mapped (SIGSEGV).
    Fault {
        address: u64,
    },
    /// Not an instruction this CPU knows (SIGILL).
    Illegal {
        word: u32,
    },
    /// An atomic access (lr, sc, amo) not aligned to its width: Linux
    /// sends SIGBUS (plain loads and stores may be misaligned: the kernel
    /// emulates them where the hardware does not).
    Misaligned {
        address: u64,
    },
}

/// Sparse guest memory in 4 KiB pages, shared until written: a copy of
/// the memory (a snapshot) shares every page, and a write copies only the
/// page it touches, so restoring a snapshot costs the pages, not their
/// bytes.
///
/// A mapping's pages exist only once written: until then they are in
/// `lazy` ranges and read as zeroes, so an 8 MiB thread stack costs one
/// range, not 2048 pages, in every run that creates the thread.
///
/// Writes into the executable segments' range (`exec`) are noted in
/// `code_written`, so that decoded instructions ([`Icache`]) are dropped.
#[derive(Debug, Default, Clone)]
pub struct Memory {
    /// By page number; hashed with ahash (fixed keys), not SipHash: a
    /// lookup is on the path of every instruction fetch, load and store.
    pages: HashMap<u64, Page, FixedState>,
    /// Mapped page ranges not (all) materialized yet: a page here that is
    /// not in `pages` is zero with the range's protection; one in `pages`
    /// is that page.
    lazy: Vec<Lazy>,
    /// The program's executable segments: `start..end`.
    pub exec: (u64, u64),
    /// Something was written into `exec` since the flag was cleared.
    pub code_written: bool,
}

/// ahash with fixed keys: page lookups hash the same in every process.
#[derive(Debug, Default, Clone, Copy)]
pub struct FixedState;

impl std::hash::BuildHasher for FixedState {
    type Hasher = ahash::AHasher;

    fn build_hasher(&self) -> ahash::AHasher {
        ahash::RandomState::with_seeds(0x243F_6A88, 0x85A3_08D3, 0x1319_8A2E, 0x0370_7344)
            .build_hasher()
    }
}

/// Decoded instructions by pc (direct-mapped), so that a loop decodes its
/// instructions once. Only pcs in the executable segments are cached; a
/// write there (`Memory::code_written`) empties the cache, and marks it
/// `tainted` (it may hold decodes of changed code), which the machine
/// clears at the start of each run by emptying it again.
#[derive(Debug, Clone)]
pub struct Icache {
    entries: Vec<(u64, Inst)>,
    pub tainted: bool,
}

const ICACHE_SLOTS: usize = 1 << 15;

impl Default for Icache {
    fn default() -> Icache {
        let nop = decode(0x13).expect("addi x0, x0, 0 decodes");
        Icache {
            // u64::MAX is odd: no instruction is there.
            entries: vec![(u64::MAX, nop); ICACHE_SLOTS],
            tainted: false,
        }
    }
}

impl Icache {
    pub fn flush(&mut self) {
        for entry in &mut self.entries {
            entry.0 = u64::MAX;
        }
    }
}

/// The zeroed page that fresh pages share until they are written.
fn zero_page() -> Arc<[u8; PAGE as usize]> {
    static ZERO: std::sync::OnceLock<Arc<[u8; PAGE as usize]>> = std::sync::OnceLock::new();
    ZERO.get_or_init(|| Arc::new([0; PAGE as usize])).clone()
}

/// What a lazy page reads as.
fn zero_bytes() -> &'static [u8; PAGE as usize] {
    static ZERO: [u8; PAGE as usize] = [0; PAGE as usize];
    &ZERO
}

/// Page protection bits, as Linux's `PROT_*`.
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
pub const EXEC: u8 = 4;

/// Pages `first..last` mapped with protection `prot`, not materialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lazy {
    first: u64,
    last: u64,
    prot: u8,
}

/// Ranges up to this many pages are walked page by page; longer ones
/// through the materialized pages.
const WALK: u64 = 64;

/// One mapped page: its bytes (shared until written) and protection.
#[derive(Debug, Clone)]
pub struct Page {
    data: Arc<[u8; PAGE as usize]>,
    prot: u8,
}

impl Memory {
    /// Maps zeroed pages covering `start..start + len` with protection
    /// `prot` (already mapped pages keep their bytes and get `prot`).
    pub fn map(&mut self, start: u64, len: u64, prot: u8) {
        let (first, last) = (start / PAGE, (start + len).div_ceil(PAGE));
        self.carve(first, last);
        self.materialized(first, last, |page| page.prot = prot);
        match self.lazy.last_mut() {
            // brk grows the heap a little at a time: one range.
            Some(r) if r.last == first && r.prot == prot => r.last = last,
            _ => self.lazy.push(Lazy { first, last, prot }),
        }
        self.code_changed(start, len);
    }

    /// Removes `first..last` from the lazy ranges (splitting them).
    fn carve(&mut self, first: u64, last: u64) {
        if !self.lazy.iter().any(|r| r.first < last && first < r.last) {
            return;
        }
        let mut kept = Vec::with_capacity(self.lazy.len() + 1);
        for r in self.lazy.drain(..) {
            if r.last <= first || last <= r.first {
                kept.push(r);
                continue;
            }
            if r.first < first {
                kept.push(Lazy { last: first, ..r });
            }
            if last < r.last {
                kept.push(Lazy { first: last, ..r });
            }
        }
        self.lazy = kept;
    }

    /// Calls `f` on each materialized page of `first..last`.
    fn materialized(&mut self, first: u64, last: u64, mut f: impl FnMut(&mut Page)) {
        if last - first <= WALK {
            for number in first..last {
                if let Some(page) = self.pages.get_mut(&number) {
                    f(page);
                }
            }
        } else {
            for (_, page) in self
                .pages
                .iter_mut()
                .filter(|(n, _)| (first..last).contains(*n))
            {
                f(page);
            }
        }
    }

    /// The lazy range holding page `number`.
    fn lazy_at(&self, number: u64) -> Option<&Lazy> {
        self.lazy
            .iter()
            .find(|r| (r.first..r.last).contains(&number))
    }

    /// Sets the protection of `start..start + len`; `false` when a page
    /// of it is not mapped (`mprotect`'s ENOMEM; the mapped ones change).
    /// Ranges longer than `WALK` pages are checked at their ends only.
    pub fn protect(&mut self, start: u64, len: u64, prot: u8) -> bool {
        let (first, last) = (start / PAGE, (start + len).div_ceil(PAGE));
        let mapped = |m: &Memory, n: u64| m.pages.contains_key(&n) || m.lazy_at(n).is_some();
        let all = if last - first <= WALK {
            (first..last).all(|n| mapped(self, n))
        } else {
            mapped(self, first) && mapped(self, last - 1)
        };
        self.materialized(first, last, |page| page.prot = prot);
        let parts: Vec<Lazy> = self
            .lazy
            .iter()
            .filter(|r| r.first < last && first < r.last)
            .map(|r| Lazy {
                first: r.first.max(first),
                last: r.last.min(last),
                prot,
            })
            .collect();
        if !parts.is_empty() {
            self.carve(first, last);
            self.lazy.extend(parts);
        }
        self.code_changed(start, len);
        all
    }

    /// Zeroes the mapped pages of `start..start + len` (`MADV_DONTNEED`).
    pub fn zero(&mut self, start: u64, len: u64) {
        let (first, last) = (start / PAGE, (start + len).div_ceil(PAGE));
        self.materialized(first, last, |page| page.data = zero_page());
        self.code_changed(start, len);
    }

    pub fn unmap(&mut self, start: u64, len: u64) {
        let (first, last) = (start / PAGE, (start + len).div_ceil(PAGE));
        self.carve(first, last);
        if last - first <= WALK {
            for number in first..last {
                self.pages.remove(&number);
            }
        } else {
            self.pages.retain(|n, _| !(first..last).contains(n));
        }
        self.code_changed(start, len);
    }

    /// What may run at `start..start + len` changed: decodes of the
    /// executable segments (the only ones cached) are dropped if it
    /// touches them.
    fn code_changed(&mut self, start: u64, len: u64) {
        if self.touches_code(start, len as usize) {
            self.code_written = true;
        }
    }

    pub fn is_mapped(&self, address: u64) -> bool {
        let number = address / PAGE;
        self.pages.contains_key(&number) || self.lazy_at(number).is_some()
    }

    /// The page holding `address` when it allows `access`.
    #[inline]
    fn page(&self, address: u64, access: u8) -> Result<&[u8; PAGE as usize], u64> {
        let number = address / PAGE;
        match self.pages.get(&number) {
            Some(page) if page.prot & access == access => Ok(&page.data),
            Some(_) => Err(address),
            None => match self.lazy_at(number) {
                Some(r) if r.prot & access == access => Ok(zero_bytes()),
                _ => Err(address),
            },
        }
    }

    /// The page holding `address`, writable and this memory's own.
    #[inline]
    fn page_mut(&mut self, address: u64) -> Result<&mut [u8; PAGE as usize], u64> {
        let number = address / PAGE;
        if !self.pages.contains_key(&number) {
            // First write to a lazy page: it becomes a page of its own.
            let prot = self.lazy_at(number).ok_or(address)?.prot;
            self.pages.insert(
                number,
                Page {
                    data: zero_page(),
                    prot,
                },
            );
        }
        match self.pages.get_mut(&number) {
            Some(page) if page.prot & WRITE != 0 => Ok(Arc::make_mut(&mut page.data)),
            _ => Err(address),
        }
    }

    fn byte(&self, address: u64) -> Option<u8> {
        let page = self.page(address, READ).ok()?;
        Some(page[(address % PAGE) as usize])
    }

    /// Reads `out.len()` bytes at `address` (readable pages only).
    pub fn read(&self, address: u64, out: &mut [u8]) -> Result<(), u64> {
        let mut at = address;
        let mut done = 0;
        while done < out.len() {
            let page = self.page(at, READ)?;
            let offset = (at % PAGE) as usize;
            let n = (PAGE as usize - offset).min(out.len() - done);
            out[done..done + n].copy_from_slice(&page[offset..offset + n]);
            done += n;
            at += n as u64;
        }
        Ok(())
    }

    /// Writes `bytes` at `address` (writable pages only).
    pub fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), u64> {
        if self.touches_code(address, bytes.len()) {
            self.code_written = true;
        }
        let mut at = address;
        let mut done = 0;
        while done < bytes.len() {
            let page = self.page_mut(at)?;
            let offset = (at % PAGE) as usize;
            let n = (PAGE as usize - offset).min(bytes.len() - done);
            page[offset..offset + n].copy_from_slice(&bytes[done..done + n]);
            done += n;
            at += n as u64;
        }
        Ok(())
    }

    /// Loads `width` bytes at `address` from pages that allow `access`.
    #[inline]
    fn load_as(&self, address: u64, width: usize, access: u8) -> Result<u64, u64> {
        debug_assert!(width <= 8);
        let mut bytes = [0u8; 8];
        let offset = (address % PAGE) as usize;
        if offset + width <= PAGE as usize {
            // Within one page (nearly every access): one lookup.
            let page = self.page(address, access)?;
            bytes[..width].copy_from_slice(&page[offset..offset + width]);
        } else {
            let split = PAGE as usize - offset;
            let (low, high) = bytes[..width].split_at_mut(split);
            low.copy_from_slice(&self.page(address, access)?[offset..]);
            let next = address + split as u64;
            high.copy_from_slice(&self.page(next, access)?[..width - split]);
        }
        Ok(u64::from_le_bytes(bytes))
    }

    #[inline]
    pub fn load(&self, address: u64, width: usize) -> Result<u64, u64> {
        self.load_as(address, width, READ)
    }

    #[inline]
    pub fn store(&mut self, address: u64, width: usize, value: u64) -> Result<(), u64> {
        debug_assert!(width <= 8);
        let offset = (address % PAGE) as usize;
        if offset + width > PAGE as usize || self.touches_code(address, width) {
            return self.write(address, &value.to_le_bytes()[..width]);
        }
        let page = self.page_mut(address)?;
        page[offset..offset + width].copy_from_slice(&value.to_le_bytes()[..width]);
        Ok(())
    }

    fn touches_code(&self, address: u64, len: usize) -> bool {
        address < self.exec.1 && address.saturating_add(len as u64) > self.exec.0
    }

    /// A NUL-terminated string at `address` (at most `max` bytes).
    pub fn c_string(&self, address: u64, max: usize) -> Result<Vec<u8>, u64> {
        let mut out = Vec::new();
        for i in 0..max as u64 {
            match self.byte(address + i).ok_or(address + i)? {
                0 => return Ok(out),
                b => out.push(b),
            }
        }
        Ok(out)
    }
}

/// A hart's state.
#[derive(Debug, Clone, Default)]
pub struct Cpu {
    pub x: [u64; 32],
    /// Floating-point registers, singles NaN-boxed.
    pub f: [u64; 32],
    pub pc: u64,
    /// fflags (bits 0-4) and frm (bits 5-7).
    pub fcsr: u32,
    /// The address an `lr` reserved.
    pub reservation: Option<u64>,
    /// Instructions retired.
    pub retired: u64,
}

const NAN_BOX: u64 = 0xFFFF_FFFF_0000_0000;

fn f32_of(bits: u64) -> f32 {
    if bits & NAN_BOX == NAN_BOX {
        f32::from_bits(bits as u32)
    } else {
        f32::NAN
    }
}

fn boxed(value: f32) -> u64 {
    NAN_BOX | u64::from(value.to_bits())
}

/// Rounds `value` per RISC-V rounding mode `rm` (7: dynamic, `frm`).
fn round(value: f64, rm: u8, frm: u8) -> f64 {
    match if rm == 7 { frm } else { rm } {
        1 => value.trunc(),
        2 => value.floor(),
        3 => value.ceil(),
        4 => value.round(),
        _ => value.round_ties_even(),
    }
}

/// Converts to an integer as `fcvt` does (saturating; NaN is the maximum).
fn to_int(value: f64, kind: u8, rm: u8, frm: u8) -> u64 {
    let r = round(value, rm, frm);
    match kind {
        0 => (if r.is_nan() { i32::MAX } else { r as i32 }) as i64 as u64,
        1 => (if r.is_nan() { u32::MAX } else { r as u32 }) as i32 as i64 as u64,
        2 => (if r.is_nan() { i64::MAX } else { r as i64 }) as u64,
        _ => {
            if r.is_nan() {
                u64::MAX
            } else {
                r as u64
            }
        }
    }
}

fn classify(value: f64, sign: bool) -> u64 {
    use std::num::FpCategory::*;
    let bit = match (value.classify(), sign) {
        (Infinite, true) => 0,
        (Normal, true) => 1,
        (Subnormal, true) => 2,
        (Zero, true) => 3,
        (Zero, false) => 4,
        (Subnormal, false) => 5,
        (Normal, false) => 6,
        (Infinite, false) => 7,
        (Nan, _) => 9,
    };
    1 << bit
}

impl Cpu {
    fn set(&mut self, rd: u8, value: u64) {
        if rd != 0 {
            self.x[rd as usize] = value;
        }
    }

    /// Fetches and decodes the instruction at `pc`.
    pub fn fetch(&self, memory: &Memory) -> Result<Inst, Stop> {
        let low = memory
            .load_as(self.pc, 2, EXEC)
            .map_err(|address| Stop::Fault { address })? as u32;
        let word = if low & 3 == 3 {
            memory
                .load_as(self.pc, 4, EXEC)
                .map_err(|address| Stop::Fault { address })? as u32
        } else {
            low
        };
        decode(word).ok_or(Stop::Illegal { word })
    }

    /// The instruction at `pc`, from `icache` when it is there.
    #[inline]
    fn fetch_cached(&self, memory: &mut Memory, icache: &mut Icache) -> Result<Inst, Stop> {
        if memory.code_written {
            memory.code_written = false;
            icache.flush();
            icache.tainted = true;
        }
        let slot = &mut icache.entries[(self.pc >> 1) as usize % ICACHE_SLOTS];
        if slot.0 == self.pc {
            return Ok(slot.1);
        }
        let i = self.fetch(memory)?;
        if (memory.exec.0..memory.exec.1).contains(&self.pc) {
            *slot = (self.pc, i);
        }
        Ok(i)
    }

    /// Executes one instruction. On `Err` the pc is unchanged (for
    /// `Ecall`, the caller advances it).
    #[inline(always)]
    pub fn step(&mut self, memory: &mut Memory, icache: &mut Icache) -> Result<(), Stop> {
        let i = self.fetch_cached(memory, icache)?;
        let next = self.pc.wrapping_add(u64::from(i.len));
        let (a, b) = (self.x[i.rs1 as usize], self.x[i.rs2 as usize]);
        let imm = i.imm as u64;
        let fault = |address| Stop::Fault { address };
        let mut pc = next;
        use Op::*;
        match i.op {
            Lui => self.set(i.rd, imm),
            Auipc => self.set(i.rd, self.pc.wrapping_add(imm)),
            Jal => {
                self.set(i.rd, next);
                pc = self.pc.wrapping_add(imm);
            }
            Jalr => {
                pc = a.wrapping_add(imm) & !1;
                self.set(i.rd, next);
            }
            Beq | Bne | Blt | Bge | Bltu | Bgeu => {
                let taken = match i.op {
                    Beq => a == b,
                    Bne => a != b,
                    Blt => (a as i64) < (b as i64),
                    Bge => (a as i64) >= (b as i64),
                    Bltu => a < b,
                    _ => a >= b,
                };
                if taken {
                    pc = self.pc.wrapping_add(imm);
                }
            }
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => {
                let address = a.wrapping_add(imm);
                let (width, signed) = match i.op {
                    Lb => (1, true),
                    Lh => (2, true),
                    Lw => (4, true),
                    Ld => (8, false),
                    Lbu => (1, false),
                    Lhu => (2, false),
                    _ => (4, false),
                };
                let raw = memory.load(address, width).map_err(fault)?;
                let value = if signed {
                    let shift = 64 - 8 * width as u32;
                    (((raw << shift) as i64) >> shift) as u64
                } else {
                    raw
                };
                self.set(i.rd, value);
            }
            Sb | Sh | Sw | Sd => {
                let width = match i.op {
                    Sb => 1,
                    Sh => 2,
                    Sw => 4,
                    _ => 8,
                };
                memory.store(a.wrapping_add(imm), width, b).map_err(fault)?;
            }
            Addi => self.set(i.rd, a.wrapping_add(imm)),
            Slti => self.set(i.rd, u64::from((a as i64) < i.imm)),
            Sltiu => self.set(i.rd, u64::from(a < imm)),
            Xori => self.set(i.rd, a ^ imm),
            Ori => self.set(i.rd, a | imm),
            Andi => self.set(i.rd, a & imm),
            Slli => self.set(i.rd, a << (imm & 63)),
            Srli => self.set(i.rd, a >> (imm & 63)),
            Srai => self.set(i.rd, ((a as i64) >> (imm & 63)) as u64),
            Add => self.set(i.rd, a.wrapping_add(b)),
            Sub => self.set(i.rd, a.wrapping_sub(b)),
            Sll => self.set(i.rd, a << (b & 63)),
            Slt => self.set(i.rd, u64::from((a as i64) < (b as i64))),
            Sltu => self.set(i.rd, u64::from(a < b)),
            Xor => self.set(i.rd, a ^ b),
            Srl => self.set(i.rd, a >> (b & 63)),
            Sra => self.set(i.rd, ((a as i64) >> (b & 63)) as u64),
            Or => self.set(i.rd, a | b),
            And => self.set(i.rd, a & b),
            Addiw => self.set(i.rd, a.wrapping_add(imm) as i32 as i64 as u64),
            Slliw => self.set(i.rd, ((a as u32) << (imm & 31)) as i32 as i64 as u64),
            Srliw => self.set(i.rd, ((a as u32) >> (imm & 31)) as i32 as i64 as u64),
            Sraiw => self.set(i.rd, ((a as i32) >> (imm & 31)) as i64 as u64),
            Addw => self.set(i.rd, a.wrapping_add(b) as i32 as i64 as u64),
            Subw => self.set(i.rd, a.wrapping_sub(b) as i32 as i64 as u64),
            Sllw => self.set(i.rd, ((a as u32) << (b & 31)) as i32 as i64 as u64),
            Srlw => self.set(i.rd, ((a as u32) >> (b & 31)) as i32 as i64 as u64),
            Sraw => self.set(i.rd, ((a as i32) >> (b & 31)) as i64 as u64),
            Mul => self.set(i.rd, a.wrapping_mul(b)),
            Mulh => self.set(
                i.rd,
                ((i128::from(a as i64) * i128::from(b as i64)) >> 64) as u64,
            ),
            Mulhsu => self.set(i.rd, ((i128::from(a as i64) * i128::from(b)) >> 64) as u64),
            Mulhu => self.set(i.rd, ((u128::from(a) * u128::from(b)) >> 64) as u64),
            Div => self.set(
                i.rd,
                match (a as i64, b as i64) {
                    (_, 0) => u64::MAX,
                    (x, y) => x.wrapping_div(y) as u64,
                },
            ),
            Divu => self.set(i.rd, a.checked_div(b).unwrap_or(u64::MAX)),
            Rem => self.set(
                i.rd,
                match (a as i64, b as i64) {
                    (x, 0) => x as u64,
                    (x, y) => x.wrapping_rem(y) as u64,
                },
            ),
            Remu => self.set(i.rd, if b == 0 { a } else { a % b }),
            Mulw => self.set(i.rd, (a as i32).wrapping_mul(b as i32) as i64 as u64),
            Divw => self.set(
                i.rd,
                match (a as i32, b as i32) {
                    (_, 0) => u64::MAX,
                    (x, y) => x.wrapping_div(y) as i64 as u64,
                },
            ),
            Divuw => self.set(
                i.rd,
                match (a as u32, b as u32) {
                    (_, 0) => u64::MAX,
                    (x, y) => (x / y) as i32 as i64 as u64,
                },
            ),
            Remw => self.set(
                i.rd,
                match (a as i32, b as i32) {
                    (x, 0) => x as i64 as u64,
                    (x, y) => x.wrapping_rem(y) as i64 as u64,
                },
            ),
            Remuw => self.set(
                i.rd,
                match (a as u32, b as u32) {
                    (x, 0) => x as i32 as i64 as u64,
                    (x, y) => (x % y) as i32 as i64 as u64,
                },
            ),
            Fence | FenceI => {}
            Ecall => return Err(Stop::Ecall),
            Ebreak => return Err(Stop::Ebreak),
            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => {
                let source = if matches!(i.op, Csrrwi | Csrrsi | Csrrci) {
                    u64::from(i.rs1)
                } else {
                    a
                };
                let old = self.csr(i.imm as u32).ok_or(Stop::Illegal { word: 0 })?;
                let new = match i.op {
                    Csrrw | Csrrwi => Some(source),
                    Csrrs | Csrrsi if i.rs1 != 0 => Some(old | source),
                    Csrrc | Csrrci if i.rs1 != 0 => Some(old & !source),
                    _ => None,
                };
                if let Some(new) = new {
                    self.set_csr(i.imm as u32, new);
                }
                self.set(i.rd, old);
            }
            Lr | Sc | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu
            | AmoMaxu
                if a % i.imm as u64 != 0 =>
            {
                return Err(Stop::Misaligned { address: a });
            }
            Lr => {
                let width = i.imm as usize;
                let value = memory.load(a, width).map_err(fault)?;
                self.reservation = Some(a);
                self.set(i.rd, sign_width(value, width));
            }
            Sc => {
                let width = i.imm as usize;
                if self.reservation.take() == Some(a) {
                    memory.store(a, width, b).map_err(fault)?;
                    self.set(i.rd, 0);
                } else {
                    self.set(i.rd, 1);
                }
            }
            AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu | AmoMaxu => {
                let width = i.imm as usize;
                let old = sign_width(memory.load(a, width).map_err(fault)?, width);
                let (so, sb) = if width == 4 {
                    (old as i32 as i64, b as i32 as i64)
                } else {
                    (old as i64, b as i64)
                };
                let (uo, ub) = if width == 4 {
                    (old as u32 as u64, b as u32 as u64)
                } else {
                    (old, b)
                };
                let new = match i.op {
                    AmoSwap => b,
                    AmoAdd => old.wrapping_add(b),
                    AmoXor => old ^ b,
                    AmoAnd => old & b,
                    AmoOr => old | b,
                    AmoMin => so.min(sb) as u64,
                    AmoMax => so.max(sb) as u64,
                    AmoMinu => uo.min(ub),
                    _ => uo.max(ub),
                };
                memory.store(a, width, new).map_err(fault)?;
                self.set(i.rd, old);
            }
            Fl => {
                let address = a.wrapping_add(imm);
                self.f[i.rd as usize] = if i.double {
                    memory.load(address, 8).map_err(fault)?
                } else {
                    NAN_BOX | memory.load(address, 4).map_err(fault)?
                };
            }
            Fs => {
                let address = a.wrapping_add(imm);
                let width = if i.double { 8 } else { 4 };
                memory
                    .store(address, width, self.f[i.rs2 as usize])
                    .map_err(fault)?;
            }
            _ => self.float(&i)?,
        }
        self.pc = pc;
        self.retired += 1;
        Ok(())
    }

    /// The floating-point computations (not loads and stores).
    fn float(&mut self, i: &Inst) -> Result<(), Stop> {
        use Op::*;
        let frm = (self.fcsr >> 5 & 7) as u8;
        let (fa, fb, fc) = (
            self.f[i.rs1 as usize],
            self.f[i.rs2 as usize],
            self.f[i.rs3 as usize],
        );
        let d = i.double;
        let val = |bits: u64| {
            if d {
                f64::from_bits(bits)
            } else {
                f64::from(f32_of(bits))
            }
        };
        let put = |v: f64| if d { v.to_bits() } else { boxed(v as f32) };
        let (x, y, z) = (val(fa), val(fb), val(fc));
        let sign_bit = if d { 63 } else { 31 };
        let frd = |me: &mut Cpu, bits: u64| me.f[i.rd as usize] = bits;
        match i.op {
            Fmadd => frd(
                self,
                put(if d {
                    x.mul_add(y, z)
                } else {
                    f64::from((x as f32).mul_add(y as f32, z as f32))
                }),
            ),
            Fmsub => frd(
                self,
                put(if d {
                    x.mul_add(y, -z)
                } else {
                    f64::from((x as f32).mul_add(y as f32, -z as f32))
                }),
            ),
            Fnmsub => frd(
                self,
                put(if d {
                    (-x).mul_add(y, z)
                } else {
                    f64::from((-x as f32).mul_add(y as f32, z as f32))
                }),
            ),
            Fnmadd => frd(
                self,
                put(if d {
                    (-x).mul_add(y, -z)
                } else {
                    f64::from((-x as f32).mul_add(y as f32, -z as f32))
                }),
            ),
            Fadd => frd(
                self,
                put(if d {
                    x + y
                } else {
                    f64::from(x as f32 + y as f32)
                }),
            ),
            Fsub => frd(
                self,
                put(if d {
                    x - y
                } else {
                    f64::from(x as f32 - y as f32)
                }),
            ),
            Fmul => frd(
                self,
                put(if d {
                    x * y
                } else {
                    f64::from(x as f32 * y as f32)
                }),
            ),
            Fdiv => frd(
                self,
                put(if d {
                    x / y
                } else {
                    f64::from(x as f32 / y as f32)
                }),
            ),
            Fsqrt => frd(
                self,
                put(if d {
                    x.sqrt()
                } else {
                    f64::from((x as f32).sqrt())
                }),
            ),
            Fsgnj | Fsgnjn | Fsgnjx => {
                let (ra, rb) = if d {
                    (fa, fb)
                } else {
                    (fa as u32 as u64, fb as u32 as u64)
                };
                let mask = 1u64 << sign_bit;
                let sign = match i.op {
                    Fsgnj => rb & mask,
                    Fsgnjn => !rb & mask,
                    _ => (ra ^ rb) & mask,
                };
                let bits = (ra & !mask) | sign;
                frd(self, if d { bits } else { NAN_BOX | bits });
            }
            Fmin | Fmax => {
                let v = if x.is_nan() {
                    y
                } else if y.is_nan() {
                    x
                } else if i.op == Fmin {
                    x.min(y)
                } else {
                    x.max(y)
                };
                frd(self, put(v));
            }
            FcvtFF => frd(
                self,
                if d {
                    f64::from(f32_of(fa)).to_bits()
                } else {
                    boxed(f64::from_bits(fa) as f32)
                },
            ),
            FcvtIF => self.set(i.rd, to_int(x, i.rs2, i.rm, frm)),
            FcvtFI => {
                let a = self.x[i.rs1 as usize];
                let v = match i.rs2 {
                    0 => f64::from(a as i32),
                    1 => f64::from(a as u32),
                    2 => a as i64 as f64,
                    _ => a as f64,
                };
                let bits = if d {
                    v.to_bits()
                } else {
                    boxed(match i.rs2 {
                        2 => a as i64 as f32,
                        3 => a as f32,
                        _ => v as f32,
                    })
                };
                frd(self, bits);
            }
            FmvXF => self.set(
                i.rd,
                if d {
                    fa
                } else {
                    fa as u32 as i32 as i64 as u64
                },
            ),
            FmvFX => {
                let a = self.x[i.rs1 as usize];
                frd(self, if d { a } else { NAN_BOX | (a as u32 as u64) });
            }
            Feq => self.set(i.rd, u64::from(x == y)),
            Flt => self.set(i.rd, u64::from(x < y)),
            Fle => self.set(i.rd, u64::from(x <= y)),
            Fclass => self.set(
                i.rd,
                classify(
                    x,
                    (if d { fa } else { fa as u32 as u64 }) >> sign_bit & 1 == 1,
                ),
            ),
            _ => return Err(Stop::Illegal { word: 0 }),
        }
        Ok(())
    }

    /// Reads a CSR: the floating-point ones, and the counters (the
    /// instruction count for all three: time is virtual).
    fn csr(&self, number: u32) -> Option<u64> {
        Some(match number {
            0x001 => u64::from(self.fcsr & 0x1F),
            0x002 => u64::from(self.fcsr >> 5 & 7),
            0x003 => u64::from(self.fcsr & 0xFF),
            0xC00..=0xC02 => self.retired,
            _ => return None,
        })
    }

    fn set_csr(&mut self, number: u32, value: u64) {
        let value = value as u32;
        match number {
            0x001 => self.fcsr = (self.fcsr & !0x1F) | (value & 0x1F),
            0x002 => self.fcsr = (self.fcsr & 0x1F) | (value & 7) << 5,
            0x003 => self.fcsr = value & 0xFF,
            _ => {}
        }
    }
}

fn sign_width(value: u64, width: usize) -> u64 {
    if width == 4 {
        value as u32 as i32 as i64 as u64
    } else {
        value
    }
}
