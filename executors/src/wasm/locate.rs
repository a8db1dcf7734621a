//! Where a trap happened: the last block the module entered (the rewrite's
//! counter sites record it, [`super::edges`]), named by its function (the
//! name section) and placed at a source line by the module's DWARF, read
//! with `addr2line` as the process executor reads an ELF's. The place is
//! the start of that block (or the return from its last call), not the
//! trapping instruction: wasmi reports no code offset. A Rust panic,
//! which ends in the `unreachable` of std's abort, is placed where it
//! panicked instead (its message on the captured stderr says where).

use std::sync::Arc;

use super::rewrite::Debug;

type Reader = gimli::EndianArcSlice<gimli::LittleEndian>;

/// Locates blocks of one module.
pub struct Locator {
    debug: Debug,
    lines: Option<addr2line::Context<Reader>>,
}

impl std::fmt::Debug for Locator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locator")
            .field("blocks", &self.debug.blocks.len())
            .field("dwarf", &self.lines.is_some())
            .finish()
    }
}

impl Locator {
    pub fn new(mut debug: Debug) -> Locator {
        let lines = (!debug.dwarf.is_empty())
            .then(|| {
                let sections = std::mem::take(&mut debug.dwarf);
                let dwarf = gimli::Dwarf::load(|id| -> Result<Reader, gimli::Error> {
                    let bytes: Arc<[u8]> = sections
                        .get(id.name())
                        .map_or_else(|| Arc::from(&[][..]), |b| Arc::from(&b[..]));
                    Ok(gimli::EndianArcSlice::new(bytes, gimli::LittleEndian))
                })
                .ok()?;
                addr2line::Context::from_dwarf(dwarf).ok()
            })
            .flatten();
        Locator { debug, lines }
    }

    /// The location of block `id`: `function (file:line)`, or
    /// `function+0xOFFSET` (the code offset in the original module) without
    /// line information; `None` for no block (a trap before any code ran).
    pub fn block(&self, id: u32) -> Option<String> {
        let &(function, offset) = self.debug.blocks.get(id as usize)?;
        let name = self.debug.names.get(&function).map_or_else(
            || format!("function {function}"),
            |n| addr2line::demangle_auto(n.into(), None).into_owned(),
        );
        // The outermost frame at the address: the line in the function
        // itself, where code inlined into it came from.
        let line = self.lines.as_ref().and_then(|lines| {
            let address = offset.checked_sub(self.debug.code_start)?;
            let mut frames = lines.find_frames(address).skip_all_loads().ok()?;
            let mut outermost = None;
            while let Ok(Some(frame)) = frames.next() {
                if let Some(location) = frame.location {
                    outermost = Some(format!("{}:{}", location.file?, location.line?));
                }
            }
            outermost
        });
        Some(match line {
            Some(line) => crate::symbolize::place(Some(&name), Some(&line), 0),
            None => format!("{name}+{offset:#x}"),
        })
    }
}

/// Where a Rust program panicked, from its stderr (`panicked at
/// FILE:LINE:COLUMN:`), if it did.
pub fn panic_location(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let rest = &text[text.find("panicked at ")? + "panicked at ".len()..];
    let location = rest.lines().next()?.trim_end_matches(':');
    (!location.is_empty()).then(|| location.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_locations_come_from_the_message() {
        let stderr = b"\nthread 'main' panicked at src/main.rs:27:13:\nwrote under a lease\n";
        assert_eq!(panic_location(stderr).as_deref(), Some("src/main.rs:27:13"));
        assert_eq!(panic_location(b"no panic here"), None);
    }
}
