//! Edge coverage inside a module, added by rewriting its code (wasmparser
//! and wasm-encoder's `reencode`): at each function's entry and at the start
//! of every block, loop, `if` arm, `else` arm and after every `br_if`, one
//! counter byte is incremented. The counters live in a memory of their own
//! that the rewrite appends (`multi-memory`): the module's own code only
//! ever addresses its original memories, so no store of the guest can reach
//! them (unlike AFL-style instrumentation with the map in guest memory).
//! The executor copies the counters out after each run into a map of its
//! own, at a fixed address, and clears them.

use std::convert::Infallible;

use wasm_encoder::reencode::{Error, Reencode, RoundtripReencoder};
use wasm_encoder::{CodeSection, Function, Instruction, MemArg, MemArgTarget};
use wasmparser::{BinaryReader, CodeSectionReader, Operator};

/// Instruments a code section (its bytes, at `offset` in the module).
/// Returns the new section and how many counters it uses; `memory` is the
/// index of the counters' memory.
pub fn instrument(data: &[u8], offset: u64, memory: u32) -> Result<(CodeSection, u32), String> {
    let mut section = CodeSection::new();
    let mut next = 0u32;
    let reader = CodeSectionReader::new(BinaryReader::new(data, offset))
        .map_err(|e| super::rewrite::malformed("code", e.offset(), e.message()))?;
    let mut re = RoundtripReencoder;
    for body in reader {
        let body = body.map_err(|e| super::rewrite::malformed("code", e.offset(), e.message()))?;
        let fail = |e: Error<Infallible>| super::rewrite::malformed("code", offset, e);
        let mut function = re.new_function_with_parsed_locals(&body).map_err(fail)?;
        let mut ops = body
            .get_operators_reader()
            .map_err(|e| super::rewrite::malformed("code", e.offset(), e.message()))?;
        count(&mut function, &mut next, memory);
        while !ops.eof() {
            let op = ops
                .read()
                .map_err(|e| super::rewrite::malformed("code", e.offset(), e.message()))?;
            let starts_block = matches!(
                op,
                Operator::Block { .. }
                    | Operator::Loop { .. }
                    | Operator::If { .. }
                    | Operator::Else
                    | Operator::BrIf { .. }
            );
            let instruction = re.instruction(op).map_err(fail)?;
            function.instruction(&instruction);
            if starts_block {
                count(&mut function, &mut next, memory);
            }
        }
        section.function(&function);
    }
    Ok((section, next))
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
