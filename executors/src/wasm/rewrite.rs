//! Rewriting a module before it runs ([`prepare`]), with wasmparser and
//! wasm-encoder: every section is copied as it is, except
//! - the export section, which also exports each mutable global the module
//!   defines (`__dst_global_N`) and its memory (`__dst_memory`), so that a
//!   snapshot can restore all of them (the stack pointer of a Rust or C
//!   module is such a global, rarely exported), and the edge counters;
//! - the memory section, which gains the edge counters' memory;
//! - the code section, instrumented with the counters ([`super::edges`]).

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{ExportKind, ExportSection, MemorySection, Module, RawSection};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

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
}

/// A malformed module: which section, at which byte offset, and why.
pub fn malformed(section: &str, offset: u64, why: impl std::fmt::Display) -> String {
    format!("malformed module: {why} (in the {section} section, at byte offset {offset})")
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
    Memory,
    Export,
    Code(std::ops::Range<usize>),
}

/// Rewrites `wasm` as the module doc says; errors are one line naming the
/// section and byte offset.
pub fn prepare(wasm: &[u8]) -> Result<Rewritten, String> {
    let mut imported_globals = 0u32;
    let mut imported_memories = 0u32;
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
                        _ => {}
                    }
                }
            }
            Payload::GlobalSection(reader) => {
                section = "global";
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
    // Sections the rewrite needs and the module lacks, in canonical order.
    for (missing, id) in [(Out::Memory, 5u8), (Out::Export, 7u8)] {
        let present = plan
            .iter()
            .any(|o| std::mem::discriminant(o) == std::mem::discriminant(&missing));
        if !present {
            let at = plan
                .iter()
                .position(|o| match o {
                    Out::Raw(other, _) => *other != 0 && rank(*other) > rank(id),
                    Out::Memory => rank(5) > rank(id),
                    Out::Export => rank(7) > rank(id),
                    Out::Code(_) => true,
                })
                .unwrap_or(plan.len());
            plan.insert(at, missing);
        }
    }
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
    for out in &plan {
        match out {
            Out::Raw(id, range) => {
                module.section(&RawSection {
                    id: *id,
                    data: &wasm[range.clone()],
                });
            }
            Out::Memory => {
                module.section(&memory_section);
            }
            Out::Export => {
                module.section(&encoded);
            }
            Out::Code(range) => {
                let (code, count) = super::edges::instrument(
                    &wasm[range.clone()],
                    range.start as u64,
                    edges_memory,
                )?;
                edges = count;
                module.section(&code);
            }
        }
    }
    Ok(Rewritten {
        wasm: module.finish(),
        mutable_globals,
        edges,
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
            [1, 3],
            "imports count; constants are left"
        );
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
                MEMORY_EXPORT,
                EDGES_EXPORT
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
        assert_eq!(out.mutable_globals, [0]);
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
