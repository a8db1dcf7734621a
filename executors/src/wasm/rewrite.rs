//! Rewriting a module before it runs ([`prepare`]), with wasmparser and
//! wasm-encoder: every section is copied as it is, except
//! - the export section, which also exports each mutable global the module
//!   defines (`__dst_global_N`) and its memory (`__dst_memory`), so that a
//!   snapshot can restore all of them (the stack pointer of a Rust or C
//!   module is such a global, rarely exported), and the edge counters;
//! - the memory section, which gains the edge counters' memory;
//! - the code section, instrumented with the counters ([`super::edges`]);
//! - in a module built with the SDK, which exports its hooks
//!   (`dst::wasm::HOOKS`), each hook's body, which becomes a
//!   `call_indirect` through a table the rewrite appends (and exports,
//!   [`HOOKS_EXPORT`]) and the executor fills with its host functions.
//!
//! - the start section, dropped: its function is exported instead
//!   ([`START_EXPORT`]), for the executor to call once the hooks are in
//!   place.
//!
//! It also reads the module's catalog from its `dst_catalog` custom section.

use dst::catalog::SiteInfo;
use dst::wasm::{HOOKS, Hook, Ty};
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{
    ConstExpr, ExportKind, ExportSection, Function, FunctionSection, GlobalSection, GlobalType,
    Instruction, MemorySection, Module, RawSection, RefType, TableSection, TableType, TypeSection,
};
use wasmparser::{CompositeInnerType, ExternalKind, Parser, Payload, TypeRef, ValType};

use super::malformed;

/// The export name of the module's mutable global `index`.
pub fn global_export(index: u32) -> String {
    format!("__dst_global_{index}")
}

/// The export name of the module's memory.
pub const MEMORY_EXPORT: &str = "__dst_memory";

fn kind(kind: ExternalKind) -> Result<ExportKind, String> {
    RoundtripReencoder
        .export_kind(kind)
        .map_err(|e| format!("unsupported export: {e}"))
}

/// What the rewrite did.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewritten {
    pub wasm: Vec<u8>,
    /// Global indices (imports counted) of the module's mutable globals, as
    /// exported under [`global_export`].
    pub mutable_globals: Vec<u32>,
    /// Edge counters the code uses (the first bytes of the counters'
    /// memory).
    pub edges: u32,
    /// Whether the module has the SDK's hooks, so that the executor fills
    /// the table exported as [`HOOKS_EXPORT`] (slot `i`: `HOOKS[i]`).
    pub hooked: bool,
    /// The sites of its `dst_catalog` section, in order.
    pub catalog: Vec<SiteInfo>,
    /// The global (exported, and among `mutable_globals`) holding the
    /// virtual size of memory 0 in pages, when the rewrite virtualized it.
    pub virtual_memory: Option<u32>,
    /// What locates a trap.
    pub debug: Debug,
}

/// The export name of the global holding the id of the last block entered.
pub const LAST_BLOCK_EXPORT: &str = "__dst_last_block";

/// What the rewrite learned for locating traps ([`super::locate`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Debug {
    /// Per block id: the function's index (imports counted) and the block's
    /// code offset in the original module.
    pub blocks: Vec<(u32, u64)>,
    /// Where the code section's contents start (DWARF addresses count from
    /// there).
    pub code_start: u64,
    /// Function names from the name section, by function index.
    pub names: std::collections::HashMap<u32, String>,
    /// The module's `.debug_*` sections, by name.
    pub dwarf: std::collections::HashMap<String, Vec<u8>>,
}

/// The function that replaces `memory.grow` on memory 0 (delta in pages ->
/// the old virtual size, or -1): it grows the virtual size held in global
/// `size`, up to `maximum` pages, and the real memory only when the new
/// virtual size is past it. So a run that grows memory leaves the real
/// memory larger but the module sees exactly what a fresh instance shows,
/// and the executor restores such a run without instantiating again.
fn grow_body(size: u32, maximum: u64) -> Function {
    use Instruction as I;
    use wasm_encoder::BlockType;
    let (delta, old, new) = (0, 1, 2);
    let mut f = Function::new([
        (1, wasm_encoder::ValType::I32),
        (1, wasm_encoder::ValType::I64),
    ]);
    let memory = 0;
    for i in [
        I::GlobalGet(size),
        I::LocalSet(old),
        I::LocalGet(old),
        I::I64ExtendI32U,
        I::LocalGet(delta),
        I::I64ExtendI32U,
        I::I64Add,
        I::LocalSet(new),
        // Past the maximum: fail, as memory.grow does.
        I::LocalGet(new),
        I::I64Const(maximum as i64),
        I::I64GtU,
        I::If(BlockType::Empty),
        I::I32Const(-1),
        I::Return,
        I::End,
        // Past the real size: grow the real memory to the new size.
        I::LocalGet(new),
        I::MemorySize(memory),
        I::I64ExtendI32U,
        I::I64GtU,
        I::If(BlockType::Empty),
        I::LocalGet(new),
        I::I32WrapI64,
        I::MemorySize(memory),
        I::I32Sub,
        I::MemoryGrow(memory),
        I::I32Const(-1),
        I::I32Eq,
        I::If(BlockType::Empty),
        I::I32Const(-1),
        I::Return,
        I::End,
        I::End,
        I::LocalGet(new),
        I::I32WrapI64,
        I::GlobalSet(size),
        I::LocalGet(old),
        I::End,
    ] {
        f.instruction(&i);
    }
    f
}

/// The export name of the module's start function, which the executor
/// calls after instantiating.
pub const START_EXPORT: &str = "__dst_start";

/// The export name of the table of host hooks.
pub const HOOKS_EXPORT: &str = "__dst_hooks";

/// The name of the custom section holding a module's catalog.
pub const CATALOG_SECTION: &str = "dst_catalog";

fn ty(ty: Ty) -> ValType {
    match ty {
        Ty::I32 => ValType::I32,
        Ty::I64 => ValType::I64,
        Ty::F64 => ValType::F64,
    }
}

fn signature(types: &[ValType]) -> String {
    let names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    format!("({})", names.join(", "))
}

/// Checks a hook's type in the module against the one dst expects.
fn check_hook(hook: &Hook, params: &[ValType], results: &[ValType]) -> Result<(), String> {
    let want: (Vec<ValType>, Vec<ValType>) = (
        hook.params.iter().copied().map(ty).collect(),
        hook.results.iter().copied().map(ty).collect(),
    );
    if (params, results) == (&want.0[..], &want.1[..]) {
        return Ok(());
    }
    Err(format!(
        "the module's {} has type {} -> {}, not the {} -> {} this dst expects (a module built with another version of the dst crate?)",
        hook.name,
        signature(params),
        signature(results),
        signature(&want.0),
        signature(&want.1)
    ))
}

/// The body that replaces hook `slot`'s: its arguments, on to the host
/// function in slot `slot` of the hooks table.
fn hook_body(slot: usize, type_index: u32, params: usize, table: u32) -> Function {
    let mut body = Function::new([]);
    for local in 0..params as u32 {
        body.instruction(&Instruction::LocalGet(local));
    }
    body.instruction(&Instruction::I32Const(slot as i32));
    body.instruction(&Instruction::CallIndirect {
        type_index,
        table_index: table,
    });
    body.instruction(&Instruction::End);
    body
}

/// The export name of the edge counters' memory.
pub const EDGES_EXPORT: &str = "__dst_edges";

/// Where a section sits in a module's canonical order (custom sections: 0).
fn rank(id: u8) -> u8 {
    match id {
        13 => 6, // tag, between memory and global
        6 => 7,
        7 => 8,
        8 => 9,
        9 => 10,
        12 => 11, // data count, before code
        10 => 12,
        11 => 13,
        other => other,
    }
}

/// `range` of `wasm` as indices, checked.
fn bytes(
    wasm: &[u8],
    range: &std::ops::Range<u64>,
    section: &str,
) -> Result<std::ops::Range<usize>, String> {
    let (start, end) = (range.start as usize, range.end as usize);
    if start > end || end > wasm.len() {
        return Err(malformed(section, range.start, "section runs past the end"));
    }
    Ok(start..end)
}

/// One section of the rewritten module.
enum Out {
    Raw(u8, std::ops::Range<usize>),
    Types,
    Functions,
    Globals,
    Table,
    Memory,
    Export,
    Code(std::ops::Range<usize>),
}

impl Out {
    /// The section id of what this writes (custom sections: 0).
    fn id(&self) -> u8 {
        match self {
            Out::Raw(id, _) => *id,
            Out::Types => 1,
            Out::Functions => 3,
            Out::Globals => 6,
            Out::Table => 4,
            Out::Memory => 5,
            Out::Export => 7,
            Out::Code(_) => 10,
        }
    }
}

/// Rewrites `wasm` as the module doc says; errors are one line naming the
/// section and byte offset.
pub fn prepare(wasm: &[u8]) -> Result<Rewritten, String> {
    let mut imported_globals = 0u32;
    let mut imported_memories = 0u32;
    let mut imported_functions = 0u32;
    let mut imported_tables = 0u32;
    // Function types by type index (None: not a function type), and the
    // type index of each function the module defines.
    let mut types: Vec<Option<(Vec<ValType>, Vec<ValType>)>> = Vec::new();
    let mut functions: Vec<u32> = Vec::new();
    let mut tables = TableSection::new();
    let mut type_section = TypeSection::new();
    let mut function_section = FunctionSection::new();
    let mut global_section = GlobalSection::new();
    let mut defined_globals = 0u32;
    let mut catalog = Vec::new();
    let mut start = None;
    let mut names = std::collections::HashMap::new();
    let mut dwarf = std::collections::HashMap::new();
    let mut mutable_globals = Vec::new();
    let mut exports: Vec<(String, ExportKind, u32)> = Vec::new();
    let mut memories: Vec<wasm_encoder::MemoryType> = Vec::new();
    let mut plan: Vec<Out> = Vec::new();
    let mut section = "header";
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| malformed(section, e.offset(), e.message()))?;
        let mut keep = true;
        match &payload {
            Payload::Version {
                encoding, range, ..
            } if *encoding != wasmparser::Encoding::Module => {
                return Err(malformed(
                    "header",
                    range.start,
                    "a component, not a core module",
                ));
            }
            Payload::ImportSection(reader) => {
                section = "import";
                for import in reader.clone().into_imports() {
                    let import = import.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    match import.ty {
                        TypeRef::Global(_) => imported_globals += 1,
                        TypeRef::Memory(_) => imported_memories += 1,
                        TypeRef::Func(_) | TypeRef::FuncExact(_) => imported_functions += 1,
                        TypeRef::Table(_) => imported_tables += 1,
                        _ => {}
                    }
                }
            }
            Payload::TypeSection(reader) => {
                section = "type";
                RoundtripReencoder
                    .parse_type_section(&mut type_section, reader.clone())
                    .map_err(|e| malformed(section, reader.range().start, e))?;
                plan.push(Out::Types);
                keep = false;
                for group in reader.clone() {
                    let group = group.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    for sub in group.into_types() {
                        types.push(match &sub.composite_type.inner {
                            CompositeInnerType::Func(f) => {
                                Some((f.params().to_vec(), f.results().to_vec()))
                            }
                            _ => None,
                        });
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                section = "function";
                RoundtripReencoder
                    .parse_function_section(&mut function_section, reader.clone())
                    .map_err(|e| malformed(section, reader.range().start, e))?;
                plan.push(Out::Functions);
                keep = false;
                for index in reader.clone() {
                    functions.push(index.map_err(|e| malformed(section, e.offset(), e.message()))?);
                }
            }
            Payload::TableSection(reader) => {
                section = "table";
                RoundtripReencoder
                    .parse_table_section(&mut tables, reader.clone())
                    .map_err(|e| malformed(section, reader.range().start, e))?;
                plan.push(Out::Table);
                keep = false;
            }
            Payload::StartSection { func, .. } => {
                start = Some(*func);
                keep = false;
            }
            Payload::CustomSection(reader) if reader.name().starts_with(".debug_") => {
                dwarf.insert(reader.name().to_string(), reader.data().to_vec());
            }
            Payload::CustomSection(reader) if reader.name() == "name" => {
                // Names only help locate traps: a malformed name section is
                // ignored, as engines do.
                let section = wasmparser::NameSectionReader::new(wasmparser::BinaryReader::new(
                    reader.data(),
                    reader.data_offset(),
                ));
                for name in section.into_iter().flatten() {
                    if let wasmparser::Name::Function(map) = name {
                        for naming in map.into_iter().flatten() {
                            names.insert(naming.index, naming.name.to_string());
                        }
                    }
                }
            }
            Payload::CustomSection(reader) if reader.name() == CATALOG_SECTION => {
                let records = dst::catalog::c::parse(reader.data());
                catalog = records
                    .iter()
                    .enumerate()
                    .map(|(i, r)| r.info(i as u32))
                    .collect();
            }
            Payload::GlobalSection(reader) => {
                section = "global";
                RoundtripReencoder
                    .parse_global_section(&mut global_section, reader.clone())
                    .map_err(|e| malformed(section, reader.range().start, e))?;
                defined_globals = reader.count();
                plan.push(Out::Globals);
                keep = false;
                for (i, global) in reader.clone().into_iter().enumerate() {
                    let global = global.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    if global.ty.mutable {
                        mutable_globals.push(imported_globals + i as u32);
                    }
                }
            }
            Payload::MemorySection(reader) => {
                section = "memory";
                for memory in reader.clone() {
                    let memory = memory.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    memories.push(
                        RoundtripReencoder
                            .memory_type(memory)
                            .map_err(|e| malformed(section, reader.range().start, e))?,
                    );
                }
                plan.push(Out::Memory);
                keep = false;
            }
            Payload::ExportSection(reader) => {
                section = "export";
                for export in reader.clone() {
                    let export = export.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    exports.push((export.name.to_string(), kind(export.kind)?, export.index));
                }
                plan.push(Out::Export);
                keep = false;
            }
            Payload::CodeSectionStart {
                unchecked_range, ..
            } => {
                section = "code";
                let range = bytes(wasm, unchecked_range, section)?;
                plan.push(Out::Code(range));
                keep = false;
            }
            Payload::DataSection(_) => section = "data",
            _ => {}
        }
        if keep && let Some((id, range)) = payload.as_section() {
            plan.push(Out::Raw(id, bytes(wasm, &range, section)?));
        }
    }
    // A function without a name in the name section goes by its export's.
    for (name, kind, index) in &exports {
        if *kind == ExportKind::Func {
            names.entry(*index).or_insert_with(|| name.clone());
        }
    }
    // The hooks: (slot, defined function index, type index, parameters).
    let mut hooks = Vec::new();
    for (name, kind, index) in &exports {
        let Some(slot) = HOOKS.iter().position(|h| h.name == name) else {
            continue;
        };
        let defined = index.checked_sub(imported_functions);
        let type_index = defined.and_then(|d| functions.get(d as usize).copied());
        let (Some(defined), Some(type_index), ExportKind::Func) = (defined, type_index, kind)
        else {
            return Err(format!(
                "the module exports {name}, but not as a function it defines"
            ));
        };
        let Some(Some((params, results))) = types.get(type_index as usize) else {
            return Err(malformed("type", 0, format!("{name} has no function type")));
        };
        check_hook(&HOOKS[slot], params, results)?;
        hooks.push((slot, defined, type_index, params.len()));
    }
    let hooks_table = imported_tables + tables.len();
    if !hooks.is_empty() {
        tables.table(TableType {
            element_type: RefType::FUNCREF,
            table64: false,
            minimum: HOOKS.len() as u64,
            maximum: Some(HOOKS.len() as u64),
            shared: false,
        });
    }
    // The virtual memory size: a global the module's `memory.size` reads
    // and a function its `memory.grow` calls (see [`grow_body`]).
    let has_code = plan.iter().any(|o| matches!(o, Out::Code(_)));
    // The last block entered: a global every counter site sets.
    let last_block = imported_globals + defined_globals;
    global_section.global(
        GlobalType {
            val_type: wasm_encoder::ValType::I32,
            mutable: true,
            shared: false,
        },
        &ConstExpr::i32_const(-1),
    );
    defined_globals += 1;
    let virtualize = has_code
        && imported_memories == 0
        && memories
            .first()
            .is_some_and(|m| !m.memory64 && !m.shared && m.page_size_log2.is_none());
    let mut virtual_memory = None;
    if virtualize {
        let grow_type = match types.iter().position(|t| {
            t.as_ref()
                .is_some_and(|(p, r)| *p == [ValType::I32] && *r == [ValType::I32])
        }) {
            Some(index) => index as u32,
            None => {
                type_section
                    .ty()
                    .function([wasm_encoder::ValType::I32], [wasm_encoder::ValType::I32]);
                types.push(Some((vec![ValType::I32], vec![ValType::I32])));
                types.len() as u32 - 1
            }
        };
        let size = imported_globals + defined_globals;
        global_section.global(
            GlobalType {
                val_type: wasm_encoder::ValType::I32,
                mutable: true,
                shared: false,
            },
            &ConstExpr::i32_const(memories[0].minimum as i32),
        );
        mutable_globals.push(size);
        let grow = imported_functions + functions.len() as u32;
        function_section.function(grow_type);
        let maximum = memories[0].maximum.unwrap_or(1 << 16);
        virtual_memory = Some((size, grow, grow_body(size, maximum)));
    }
    // Sections the rewrite needs and the module lacks, in canonical order.
    let mut needed = vec![Out::Memory, Out::Export];
    if !hooks.is_empty() {
        needed.insert(0, Out::Table);
    }
    needed.push(Out::Globals);
    if virtualize {
        needed.extend([Out::Types, Out::Functions]);
    }
    for missing in needed {
        let present = plan
            .iter()
            .any(|o| std::mem::discriminant(o) == std::mem::discriminant(&missing));
        if !present {
            let id = missing.id();
            let at = plan
                .iter()
                .position(|o| o.id() != 0 && rank(o.id()) > rank(id))
                .unwrap_or(plan.len());
            plan.insert(at, missing);
        }
    }
    // The virtual memory size is the last global, after `defined_globals`.
    let globals = imported_globals + defined_globals + u32::from(virtual_memory.is_some());
    debug_assert!(
        mutable_globals.windows(2).all(|w| w[0] < w[1])
            && mutable_globals.iter().all(|&g| g < globals),
        "each mutable global exported once, and defined"
    );
    let own_memory = imported_memories > 0 || !memories.is_empty();
    let edges_memory = imported_memories + memories.len() as u32;
    let mut encoded = ExportSection::new();
    for (name, kind, index) in &exports {
        encoded.export(name, *kind, *index);
    }
    for &index in &mutable_globals {
        encoded.export(&global_export(index), ExportKind::Global, index);
    }
    if own_memory {
        encoded.export(MEMORY_EXPORT, ExportKind::Memory, 0);
    }
    encoded.export(EDGES_EXPORT, ExportKind::Memory, edges_memory);
    if !hooks.is_empty() {
        encoded.export(HOOKS_EXPORT, ExportKind::Table, hooks_table);
    }
    if let Some(start) = start {
        encoded.export(START_EXPORT, ExportKind::Func, start);
    }
    encoded.export(LAST_BLOCK_EXPORT, ExportKind::Global, last_block);
    let replaced: Vec<(u32, Function)> = hooks
        .iter()
        .map(|&(slot, defined, type_index, params)| {
            (defined, hook_body(slot, type_index, params, hooks_table))
        })
        .collect();
    let mut memory_section = MemorySection::new();
    for memory in &memories {
        memory_section.memory(*memory);
    }
    memory_section.memory(wasm_encoder::MemoryType {
        minimum: 1,
        maximum: Some(1),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut module = Module::new();
    let mut edges = 0;
    let mut code_start = 0;
    let mut blocks = Vec::new();
    for out in &plan {
        match out {
            Out::Raw(id, range) => {
                module.section(&RawSection {
                    id: *id,
                    data: &wasm[range.clone()],
                });
            }
            Out::Types => {
                module.section(&type_section);
            }
            Out::Functions => {
                module.section(&function_section);
            }
            Out::Globals => {
                module.section(&global_section);
            }
            Out::Table => {
                module.section(&tables);
            }
            Out::Memory => {
                module.section(&memory_section);
            }
            Out::Export => {
                module.section(&encoded);
            }
            Out::Code(range) => {
                let out = super::edges::instrument(
                    &wasm[range.clone()],
                    range.start as u64,
                    edges_memory,
                    last_block,
                    &replaced,
                    virtual_memory.as_ref(),
                )?;
                edges = out.counters;
                module.section(&out.code);
                code_start = range.start as u64;
                blocks = out
                    .blocks
                    .into_iter()
                    .map(|(f, at)| (imported_functions + f, at))
                    .collect();
            }
        }
    }
    Ok(Rewritten {
        wasm: module.finish(),
        mutable_globals,
        edges,
        hooked: !hooks.is_empty(),
        virtual_memory: virtual_memory.map(|(global, _, _)| global),
        debug: Debug {
            blocks,
            code_start,
            names,
            dwarf,
        },
        catalog,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutable_globals_are_exported_and_nothing_else_changes() {
        let wasm = wat::parse_str(
            r#"(module
                 (import "env" "g" (global (mut i32)))
                 (global $sp (mut i32) (i32.const 1024))
                 (global $k i32 (i32.const 7))
                 (global $n (mut i64) (i64.const 0))
                 (memory (export "memory") 1)
                 (func (export "_start") (global.set $sp (i32.const 8)))
                 (data (i32.const 0) "hi"))"#,
        )
        .unwrap();
        let out = prepare(&wasm).unwrap();
        assert_eq!(
            out.mutable_globals,
            [1, 3, 5],
            "imports count; constants are left; then the virtual memory size (after the last-block global, 4)"
        );
        assert_eq!(out.virtual_memory, Some(5));
        let mut names = Vec::new();
        for payload in Parser::new(0).parse_all(&out.wasm) {
            if let Payload::ExportSection(r) = payload.unwrap() {
                names.extend(r.into_iter().map(|e| e.unwrap().name.to_string()));
            }
        }
        assert_eq!(
            names,
            [
                "memory",
                "_start",
                "__dst_global_1",
                "__dst_global_3",
                "__dst_global_5",
                MEMORY_EXPORT,
                EDGES_EXPORT,
                LAST_BLOCK_EXPORT,
            ]
        );
        assert_eq!(out.edges, 1, "one function, no blocks");
        wasmparser::Validator::new()
            .validate_all(&out.wasm)
            .unwrap();
    }

    #[test]
    fn a_module_without_exports_gets_an_export_section_in_order() {
        let wasm = wat::parse_str("(module (global (mut i32) (i32.const 0)) (func))").unwrap();
        let out = prepare(&wasm).unwrap();
        wasmparser::Validator::new()
            .validate_all(&out.wasm)
            .unwrap();
        assert_eq!(out.mutable_globals, [0], "no memory to virtualize");
    }

    #[test]
    fn malformed_modules_name_the_section_and_offset() {
        let err = prepare(b"\0asm\x01\0\0\0\x06\x05\x01").unwrap_err();
        assert!(err.starts_with("malformed module: "), "{err}");
        assert!(err.contains("byte offset"), "{err}");
        let err = prepare(b"not wasm at all").unwrap_err();
        assert!(err.contains("header"), "{err}");
    }
}
