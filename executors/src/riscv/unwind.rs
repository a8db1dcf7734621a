//! A guest's call stack at a crash, from the ELF's `.eh_frame` (the call
//! frame information every static glibc program carries, compiled with or
//! without `-g`), read with gimli's unwinder over the guest's registers
//! and memory. The executor names a crash by its innermost frame that has
//! a source line (the program's code, not the C library's), so an abort
//! is placed where the program called it, and two aborts in different
//! places are different findings.

use gimli::{
    BaseAddresses, CfaRule, EhFrame, LittleEndian, Register, RegisterRule, UnwindContext,
    UnwindSection,
};
use object::{Object, ObjectSection};

use super::cpu::Memory;

/// Frames walked at most.
const DEPTH: usize = 32;

/// The `.eh_frame` section of a program.
#[derive(Debug, Clone, Default)]
pub struct Unwinder {
    data: Vec<u8>,
    address: u64,
    text: u64,
    /// Where each function starts, sorted (from the symbol table).
    functions: Vec<u64>,
}

impl Unwinder {
    /// `None` when the program has no `.eh_frame`.
    pub fn of(file: &object::File<'_>) -> Option<Unwinder> {
        use object::ObjectSymbol;
        let section = file.section_by_name(".eh_frame")?;
        let mut functions: Vec<u64> = file
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
            .map(|s| s.address())
            .collect();
        functions.sort_unstable();
        functions.dedup();
        Some(Unwinder {
            data: section.data().ok()?.to_vec(),
            address: section.address(),
            text: file.section_by_name(".text").map_or(0, |s| s.address()),
            functions,
        })
    }

    /// The pcs of the stack of a thread stopped at `pc` with registers `x`:
    /// `pc` first, then each caller's return address.
    pub fn stack(&self, memory: &Memory, pc: u64, x: &[u64; 32]) -> Vec<u64> {
        let section = EhFrame::new(&self.data, LittleEndian);
        let bases = BaseAddresses::default()
            .set_eh_frame(self.address)
            .set_text(self.text);
        let mut context = UnwindContext::new();
        let mut regs = *x;
        let mut pcs = vec![pc];
        let mut at = pc;
        while pcs.len() < DEPTH {
            // A return address is looked up inside its call.
            let probe = if pcs.len() == 1 { at } else { at - 1 };
            let Ok(row) = section.unwind_info_for_address(
                &bases,
                &mut context,
                probe,
                EhFrame::cie_from_offset,
            ) else {
                // No call frame information (some of glibc's functions,
                // abort among them, have none): scan the stack for the
                // return address the function saved.
                let start = self.function_start(probe);
                match scan(memory, regs[2], start) {
                    Some((slot, ra)) => {
                        // Saved at CFA - 8, as RISC-V prologues do.
                        regs[2] = slot + 8;
                        regs[1] = ra;
                        at = ra;
                        pcs.push(ra);
                        continue;
                    }
                    None => break,
                }
            };
            let cfa = match *row.cfa() {
                CfaRule::RegisterAndOffset { register, offset } => {
                    let Some(&base) = regs.get(register.0 as usize) else {
                        break;
                    };
                    base.wrapping_add(offset as u64)
                }
                CfaRule::Expression(_) => break,
            };
            let mut next = regs;
            for (register, rule) in row.registers() {
                let Some(slot) = next.get_mut(register.0 as usize) else {
                    continue;
                };
                match rule {
                    RegisterRule::Offset(offset) => {
                        match memory.load(cfa.wrapping_add(*offset as u64), 8) {
                            Ok(value) => *slot = value,
                            Err(_) => return pcs,
                        }
                    }
                    RegisterRule::ValOffset(offset) => *slot = cfa.wrapping_add(*offset as u64),
                    RegisterRule::Register(Register(from)) => {
                        *slot = regs.get(*from as usize).copied().unwrap_or(0)
                    }
                    RegisterRule::Undefined => *slot = 0,
                    _ => {}
                }
            }
            let ra = next[1];
            next[2] = cfa;
            if ra == 0 || cfa <= regs[2] && pcs.len() > 1 || ra == at {
                break;
            }
            regs = next;
            at = ra;
            pcs.push(ra);
        }
        pcs
    }
}

impl Unwinder {
    /// The start of the function holding `pc`, per the symbol table.
    fn function_start(&self, pc: u64) -> Option<u64> {
        let i = self.functions.partition_point(|&start| start <= pc);
        i.checked_sub(1).map(|i| self.functions[i])
    }
}

/// The target of `jal` instruction `word` at `at`, if it is one that
/// links `ra`.
fn jal_target(word: u32, at: u64) -> Option<u64> {
    if word & 0x7F != 0x6F || (word >> 7) & 0x1F != 1 {
        return None;
    }
    let imm = ((word >> 31) & 1) << 20
        | ((word >> 21) & 0x3FF) << 1
        | ((word >> 20) & 1) << 11
        | ((word >> 12) & 0xFF) << 12;
    let imm = ((imm << 11) as i32 >> 11) as i64;
    Some(at.wrapping_add(imm as u64))
}

/// Words scanned at most for a return address.
const SCAN: u64 = 1024;

/// The stack word from `sp` up that holds the return address of the
/// function starting at `callee`: the first that returns from a `jal` to
/// it, else the first that returns from any call (`jal` or `jalr` that
/// link `ra`, or `c.jalr`; stale words from earlier calls can fool this
/// one). Returns (its address, the return address).
fn scan(memory: &Memory, sp: u64, callee: Option<u64>) -> Option<(u64, u64)> {
    let candidates = || candidates(memory, sp);
    candidates()
        .find(|&(_, ra, word)| callee.is_some() && jal_target(word, ra - 4) == callee)
        .or_else(|| candidates().next())
        .map(|(slot, ra, _)| (slot, ra))
}

/// Stack words from `sp` up that hold a pc right after a call: (address,
/// value, the 4-byte word before the value).
fn candidates(memory: &Memory, sp: u64) -> impl Iterator<Item = (u64, u64, u32)> + '_ {
    let (lo, hi) = memory.exec;
    (0..SCAN).filter_map(move |k| {
        let slot = sp.checked_add(8 * k)?;
        let value = memory.load(slot, 8).ok()?;
        if !(lo + 4..hi).contains(&value) || value % 2 != 0 {
            return None;
        }
        let word = memory.load(value - 4, 4).ok()? as u32;
        let half = memory.load(value - 2, 2).ok()? as u32;
        let links = |w: u32| (w & 0x7F == 0x6F || w & 0x707F == 0x67) && (w >> 7) & 0x1F == 1;
        let c_jalr = half & 0xF07F == 0x9002 && (half >> 7) & 0x1F != 0;
        (links(word) || c_jalr).then_some((slot, value, word))
    })
}
