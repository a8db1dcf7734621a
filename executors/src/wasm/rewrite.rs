//! Rewriting a module before it runs, with wasmparser and wasm-encoder:
//! every section is copied as it is, except the export section, which also
//! exports each mutable global the module defines (`__dst_global_N`) and
//! its memory (`__dst_memory`), so that a snapshot can restore all of them
//! (the stack pointer of a Rust or C module is such a global, rarely
//! exported).

use wasm_encoder::{ExportKind, ExportSection, Module, RawSection};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

/// The export name of the module's mutable global `index`.
pub fn global_export(index: u32) -> String {
    format!("__dst_global_{index}")
}

/// The export name of the module's memory.
pub const MEMORY_EXPORT: &str = "__dst_memory";

/// Section ids after which the export section may not come.
fn after_exports(id: u8) -> bool {
    // start, element, code, data, data count
    matches!(id, 8..=12)
}

fn kind(kind: ExternalKind) -> ExportKind {
    match kind {
        ExternalKind::Func => ExportKind::Func,
        ExternalKind::Table => ExportKind::Table,
        ExternalKind::Memory => ExportKind::Memory,
        ExternalKind::Global => ExportKind::Global,
        ExternalKind::Tag => ExportKind::Tag,
    }
}

/// What the rewrite did.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewritten {
    pub wasm: Vec<u8>,
    /// Global indices (imports counted) of the module's mutable globals, as
    /// exported under [`global_export`].
    pub mutable_globals: Vec<u32>,
}

/// A malformed module: which section, at which byte offset, and why.
pub fn malformed(section: &str, offset: usize, why: impl std::fmt::Display) -> String {
    format!("malformed module: {why} (in the {section} section, at byte offset {offset})")
}

/// Rewrites `wasm` as the module doc says; errors are one line naming the
/// section and byte offset.
pub fn export_mutable_globals(wasm: &[u8]) -> Result<Rewritten, String> {
    let mut imported_globals = 0u32;
    let mut mutable_globals = Vec::new();
    let mut exports: Option<Vec<(String, ExportKind, u32)>> = None;
    let mut sections: Vec<(u8, std::ops::Range<usize>)> = Vec::new();
    let mut export_at = None;
    let mut memory = false;
    let mut section = "header";
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| malformed(section, e.offset(), e.message()))?;
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
                for import in reader.clone() {
                    let import = import.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    match import.ty {
                        TypeRef::Global(_) => imported_globals += 1,
                        TypeRef::Memory(_) => memory = true,
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
            Payload::ExportSection(reader) => {
                section = "export";
                let mut list = Vec::new();
                for export in reader.clone() {
                    let export = export.map_err(|e| malformed(section, e.offset(), e.message()))?;
                    list.push((export.name.to_string(), kind(export.kind), export.index));
                }
                exports = Some(list);
                export_at = Some(sections.len());
                continue;
            }
            Payload::MemorySection(reader) => {
                section = "memory";
                memory |= reader.count() > 0;
            }
            Payload::CodeSectionStart { .. } => section = "code",
            Payload::DataSection(_) => section = "data",
            _ => {}
        }
        if let Some((id, range)) = payload.as_section() {
            if export_at.is_none() && id != 0 && after_exports(id) {
                export_at = Some(sections.len());
            }
            sections.push((id, range));
        }
    }
    let export_at = export_at.unwrap_or(sections.len());
    let mut encoded = ExportSection::new();
    for (name, kind, index) in exports.unwrap_or_default() {
        encoded.export(&name, kind, index);
    }
    for &index in &mutable_globals {
        encoded.export(&global_export(index), ExportKind::Global, index);
    }
    if memory {
        encoded.export(MEMORY_EXPORT, ExportKind::Memory, 0);
    }
    let mut module = Module::new();
    for (i, (id, range)) in sections.iter().enumerate() {
        if i == export_at {
            module.section(&encoded);
        }
        module.section(&RawSection {
            id: *id,
            data: &wasm[range.clone()],
        });
    }
    if export_at == sections.len() {
        module.section(&encoded);
    }
    Ok(Rewritten {
        wasm: module.finish(),
        mutable_globals,
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
        let out = export_mutable_globals(&wasm).unwrap();
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
                MEMORY_EXPORT
            ]
        );
        wasmparser::Validator::new()
            .validate_all(&out.wasm)
            .unwrap();
    }

    #[test]
    fn a_module_without_exports_gets_an_export_section_in_order() {
        let wasm = wat::parse_str("(module (global (mut i32) (i32.const 0)) (func))").unwrap();
        let out = export_mutable_globals(&wasm).unwrap();
        wasmparser::Validator::new()
            .validate_all(&out.wasm)
            .unwrap();
        assert_eq!(out.mutable_globals, [0]);
    }

    #[test]
    fn malformed_modules_name_the_section_and_offset() {
        let err = export_mutable_globals(b"\0asm\x01\0\0\0\x06\x05\x01").unwrap_err();
        assert!(err.starts_with("malformed module: "), "{err}");
        assert!(err.contains("byte offset"), "{err}");
        let err = export_mutable_globals(b"not wasm at all").unwrap_err();
        assert!(err.contains("header"), "{err}");
    }
}
