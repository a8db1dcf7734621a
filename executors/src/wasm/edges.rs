//! Edge coverage inside a module, added by rewriting its code (wasmparser
//! and wasm-encoder's `reencode`): at each function's entry and at the start
//! of every block, loop, `if` arm, `else` arm and after every `br_if`, one
//! counter byte is incremented. The counters live in a memory of their own
//! that the rewrite appends (`multi-memory`): the module's own code only
//! ever addresses its original memories, so no store of the guest can reach
//! them (unlike AFL-style instrumentation with the map in guest memory).
//! The executor copies the counters out after each run into a map of its
//! own, at a fixed address, and clears them.
//!
//! Each counter site also stores its id in a global (`last`), so that after
//! a trap the executor knows the last block entered (or returned to after
//! a call): its function and code offset locate the trap
//! ([`super::locate`]).

use std::convert::Infallible;

use wasm_encoder::reencode::{Error, Reencode, RoundtripReencoder};
use wasm_encoder::{CodeSection, Function, Instruction, MemArg, MemArgTarget};
use wasmparser::{BinaryReader, CodeSectionReader, Operator};

/// Instruments a code section (its bytes, at `offset` in the module).
/// Returns the new section and how many counters it uses; `memory` is the
/// index of the counters' memory. The bodies of the functions in
/// `replaced` (by index among the defined functions) are replaced whole,
/// without counters. With `virtual_memory` (the size global, the grow
/// function and its body), `memory.size` and `memory.grow` on memory 0
/// become a read of the global and a call of the function, whose body is
/// appended.
pub fn instrument(
    data: &[u8],
    offset: u64,
    memory: u32,
    last: u32,
    replaced: &[(u32, Function)],
    virtual_memory: Option<&(u32, u32, Function)>,
) -> Result<Instrumented, String> {
    let mut section = CodeSection::new();
    let mut next = 0u32;
    let mut blocks = Vec::new();
    let reader = CodeSectionReader::new(BinaryReader::new(data, offset))
        .map_err(|e| super::malformed("code", e.offset(), e.message()))?;
    let mut re = RoundtripReencoder;
    for (index, body) in reader.into_iter().enumerate() {
        let body = body.map_err(|e| super::malformed("code", e.offset(), e.message()))?;
        if let Some((_, function)) = replaced.iter().find(|(i, _)| *i as usize == index) {
            section.function(function);
            continue;
        }
        let fail = |e: Error<Infallible>| super::malformed("code", offset, e);
        let mut function = re.new_function_with_parsed_locals(&body).map_err(fail)?;
        let mut ops = body
            .get_operators_reader()
            .map_err(|e| super::malformed("code", e.offset(), e.message()))?;
        let mut site = Site {
            next: &mut next,
            blocks: &mut blocks,
            memory,
            last,
            index: index as u32,
        };
        site.count(&mut function, ops.original_position());
        while !ops.eof() {
            let at = ops.original_position();
            let op = ops
                .read()
                .map_err(|e| super::malformed("code", e.offset(), e.message()))?;
            let calls = matches!(
                op,
                Operator::Call { .. } | Operator::CallIndirect { .. } | Operator::CallRef { .. }
            );
            let starts_block = matches!(
                op,
                Operator::Block { .. }
                    | Operator::Loop { .. }
                    | Operator::If { .. }
                    | Operator::Else
                    | Operator::BrIf { .. }
            );
            let instruction = match (op, virtual_memory) {
                (Operator::MemorySize { mem: 0 }, Some((size, _, _))) => {
                    Instruction::GlobalGet(*size)
                }
                (Operator::MemoryGrow { mem: 0 }, Some((_, grow, _))) => Instruction::Call(*grow),
                (op, _) => re.instruction(op).map_err(fail)?,
            };
            function.instruction(&instruction);
            if calls {
                // Back from a callee, which recorded its own blocks.
                let current = *site.next - 1;
                function.instruction(&Instruction::I32Const(current as i32));
                function.instruction(&Instruction::GlobalSet(last));
            }
            if starts_block {
                site.count(&mut function, at);
            }
        }
        section.function(&function);
    }
    if let Some((_, _, grow)) = virtual_memory {
        section.function(grow);
    }
    Ok(Instrumented {
        code: section,
        counters: next,
        blocks,
    })
}

/// An instrumented code section.
pub struct Instrumented {
    pub code: CodeSection,
    /// Counter sites (ids `0..counters`).
    pub counters: u32,
    /// Per counter site id: the defined function's index and the code
    /// offset (in the original module) of the block it counts.
    pub blocks: Vec<(u32, u64)>,
}

/// Where the counters of one function go, and what they record.
struct Site<'a> {
    next: &'a mut u32,
    blocks: &'a mut Vec<(u32, u64)>,
    memory: u32,
    last: u32,
    /// The defined function's index.
    index: u32,
}

impl Site<'_> {
    /// `counters[id] += 1`, in the counters' memory, and `last = id`, for
    /// the block at code offset `at`.
    fn count(&mut self, function: &mut Function, at: u64) {
        let full = *self.next;
        self.blocks.push((self.index, at));
        debug_assert_eq!(self.blocks.len() as u32, full + 1, "one block per id");
        count(function, self.next, self.memory);
        function.instruction(&Instruction::I32Const(full as i32));
        function.instruction(&Instruction::GlobalSet(self.last));
    }
}

/// `counters[id] += 1`, in the counters' memory.
fn count(function: &mut Function, next: &mut u32, memory: u32) {
    // One page of counters: ids past it share slots.
    let id = (*next & 0xFFFF) as i32;
    *next += 1;
    let arg = MemArg {
        offset: 0,
        align: 0,
        target: MemArgTarget::Memory(memory),
        ordering: None,
    };
    function.instruction(&Instruction::I32Const(id));
    function.instruction(&Instruction::I32Const(id));
    function.instruction(&Instruction::I32Load8U(arg));
    function.instruction(&Instruction::I32Const(1));
    function.instruction(&Instruction::I32Add);
    function.instruction(&Instruction::I32Store8(arg));
}
