//! Crash symbolization: turns the stack a target's crash handler left in the
//! region into frames (function, file:line) from the DWARF of the binary and
//! its libraries, and into a stack hash for deduplication.
//!
//! Addresses are mapped to files with the target's `/proc/PID/maps` (read
//! from the fork server, whose children share its layout), then to each
//! file's virtual addresses through its program headers, then looked up
//! with `addr2line`.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use std::sync::atomic::Ordering;

use dst::hash::Fnv32;
use dst::region::Header;
use dst_kernel::Outcome;
use object::{Object, ObjectSegment};

/// One executable file mapping of a process.
#[derive(Debug, Clone)]
pub struct Module {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    pub path: PathBuf,
}

/// The file-backed mappings of process `pid`.
pub fn read_maps(pid: u32) -> Vec<Module> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let _perms = fields.next()?;
            let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
            let _dev = fields.next()?;
            let _inode = fields.next()?;
            let path = fields.next()?;
            if !path.starts_with('/') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some(Module {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset,
                path: PathBuf::from(path),
            })
        })
        .collect()
}

/// One symbolized frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    pub pc: u64,
    /// The file's name (no directory), when the pc is in a mapped file.
    pub module: Option<String>,
    /// The pc as a virtual address of that file.
    pub address: Option<u64>,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl Frame {
    /// `file:line`, when the debug information has it.
    pub fn location(&self) -> Option<String> {
        Some(format!("{}:{}", self.file.as_ref()?, self.line?))
    }

    /// Its place, as [`place`] writes places.
    pub fn place(&self) -> String {
        place(
            self.function.as_deref(),
            self.location().as_deref(),
            self.pc,
        )
    }
}

/// The one text of a place in code (a crash's, a scheduling step's), at
/// every level: `function (file:line)`, or what of it is known, `pc 0x...`
/// when nothing is. A crash's place is part of its signature, so every
/// level writes it here.
pub fn place(function: Option<&str>, location: Option<&str>, pc: u64) -> String {
    match (function, location) {
        (Some(function), Some(location)) => format!("{function} ({location})"),
        (Some(function), None) => function.to_string(),
        (None, Some(location)) => location.to_string(),
        (None, None) => format!("pc {pc:#x}"),
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.pc)?;
        if let Some(function) = &self.function {
            write!(f, " in {function}")?;
        }
        if let Some(location) = self.location() {
            write!(f, " at {location}")?;
        } else if let (Some(module), Some(address)) = (&self.module, self.address) {
            write!(f, " ({module}+{address:#x})")?;
        }
        Ok(())
    }
}

struct File {
    loader: addr2line::Loader,
    /// (file offset, size in the file, virtual address) of each segment.
    segments: Vec<(u64, u64, u64)>,
}

/// Symbolizes pcs of one process layout; caches each file's debug info.
pub struct Symbolizer {
    modules: Vec<Module>,
    files: HashMap<PathBuf, Option<File>>,
}

fn open(path: &Path) -> Option<File> {
    let bytes = std::fs::read(path).ok()?;
    let object = crate::elf::parse(&bytes).ok()?;
    let segments = object
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            (offset, size, s.address())
        })
        .collect();
    let loader = addr2line::Loader::new(path).ok()?;
    Some(File { loader, segments })
}

impl Symbolizer {
    /// For a static program that runs at its link addresses (a guest of
    /// the emulator or of the KVM executor): its segments are its modules.
    pub fn for_static(path: &Path, file: &object::File<'_>) -> Symbolizer {
        let modules = file
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                Module {
                    start: s.address(),
                    end: s.address() + size,
                    offset,
                    path: path.to_path_buf(),
                }
            })
            .collect();
        Symbolizer::new(modules)
    }

    pub fn new(modules: Vec<Module>) -> Symbolizer {
        Symbolizer {
            modules,
            files: HashMap::new(),
        }
    }

    /// Symbolizes `pc`; `is_return` for return addresses (all frames but the
    /// faulting one), which are looked up one byte back, inside the call.
    pub fn frame(&mut self, pc: u64, is_return: bool) -> Frame {
        let mut frame = Frame {
            pc,
            ..Frame::default()
        };
        let probe_pc = if is_return { pc.saturating_sub(1) } else { pc };
        let Some(module) = self
            .modules
            .iter()
            .find(|m| (m.start..m.end).contains(&probe_pc))
        else {
            return frame;
        };
        frame.module = module
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let file_offset = probe_pc - module.start + module.offset;
        let path = module.path.clone();
        let Some(file) = self
            .files
            .entry(path.clone())
            .or_insert_with(|| open(&path))
        else {
            return frame;
        };
        let Some(address) = file
            .segments
            .iter()
            .find(|(offset, size, _)| (*offset..offset + size).contains(&file_offset))
            .map(|(offset, _, vaddr)| vaddr + (file_offset - offset))
        else {
            return frame;
        };
        frame.address = Some(address);
        if let Ok(mut frames) = file.loader.find_frames(address) {
            // The innermost (possibly inlined) frame.
            if let Ok(Some(inner)) = frames.next() {
                frame.function = inner
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|f| f.into_owned());
                if let Some(location) = inner.location {
                    frame.file = location.file.map(str::to_string);
                    frame.line = location.line;
                }
            }
        }
        if frame.function.is_none() {
            frame.function = file.loader.find_symbol(address).map(|s| {
                addr2line::demangle_auto(std::borrow::Cow::Borrowed(s), None).into_owned()
            });
        }
        frame
    }

    /// Symbolizes a crash stack (the faulting pc first).
    pub fn stack(&mut self, pcs: &[u64]) -> Vec<Frame> {
        pcs.iter()
            .enumerate()
            .map(|(i, &pc)| self.frame(pc, i > 0))
            .collect()
    }
}

/// A hash of the top three frames, for deduplicating crashes: each frame's
/// function name where the binary names it, else its file's name and the
/// address within that file. So one crash hashes the same in every run,
/// wherever the files were loaded, whatever the binary is called and from
/// wherever it was built; a frame with no name at all (no symbol, no
/// module) counts by its pc.
pub fn stack_hash(frames: &[Frame]) -> u32 {
    let mut hash = Fnv32::new();
    for frame in frames.iter().take(3) {
        hash = match (&frame.function, &frame.module, frame.address) {
            (Some(function), _, _) => hash.write(function.as_bytes()),
            (None, Some(module), Some(address)) => {
                hash.write(module.as_bytes()).write(&address.to_le_bytes())
            }
            _ => hash.write(&frame.pc.to_le_bytes()),
        };
        // A separator, so that frames cannot run into each other.
        hash = hash.write(&[0]);
    }
    hash.finish()
}

/// How far below the stack pointer a fault still counts as the stack
/// running out (a frame's probe, a push or a call at the guard page).
const OVERFLOW_REACH: u64 = 64 << 10;

/// A signal's name, for crash signatures.
pub(crate) fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        other => format!("signal {other}"),
    }
}

/// The crash that killed a run by `signal`, as the SDK's handler recorded
/// it in the region: the signal, the fault address, the symbolized stack
/// and its hash, placed at the innermost frame with a source line (the
/// user's code rather than libc's abort). A fault just below the stack
/// pointer is a *stack overflow* (its cause). Without a record for this
/// signal, only the signal is known.
pub fn recorded_crash(header: &Header, signal: i32, symbolizer: &mut Symbolizer) -> Outcome {
    let recorded = header.crash_signal.load(Ordering::Acquire) as i32;
    let depth =
        (header.crash_depth.load(Ordering::Relaxed) as usize).min(dst::region::CRASH_FRAMES);
    let pcs: Vec<u64> = header.crash_frames[..depth]
        .iter()
        .map(|f| f.load(Ordering::Relaxed))
        .collect();
    let name = signal_name(signal);
    if recorded != signal || pcs.is_empty() {
        return Outcome::Crash {
            cause: name,
            message: format!("killed by signal {signal}"),
            location: None,
        };
    }
    let frames = symbolizer.stack(&pcs);
    let hash = stack_hash(&frames);
    let fault = header.crash_address.load(Ordering::Relaxed);
    let sp = header.crash_sp.load(Ordering::Relaxed);
    // Only these signals carry a fault address; for the others (abort's
    // SIGABRT) the field holds the sender's pid, which differs by run.
    let faults = matches!(
        signal,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE
    );
    let overflow = matches!(signal, libc::SIGSEGV | libc::SIGBUS)
        && sp != 0
        && fault <= sp.saturating_add(256)
        && sp - fault.min(sp) <= OVERFLOW_REACH;
    let address = if faults {
        format!(", fault address {fault:#x}")
    } else {
        String::new()
    };
    let mut message = format!(
        "killed by signal {signal} ({name}){address}, pc {:#x}, stack {hash:08x}",
        pcs[0]
    );
    for (i, frame) in frames.iter().enumerate() {
        message.push_str(&format!("\n    #{i} {frame}"));
    }
    // Rust's standard library inlined into the user's function (its files
    // are under /rustc/) is not the place.
    let placed = |f: &&Frame| f.location().is_some_and(|l| !l.starts_with("/rustc/"));
    let top = frames
        .iter()
        .find(placed)
        .or_else(|| frames.iter().find(|f| f.location().is_some()))
        .unwrap_or(&frames[0]);
    let place = top.place();
    Outcome::Crash {
        cause: if overflow {
            "stack overflow".into()
        } else {
            name
        },
        message,
        location: Some(format!("{place}, stack {hash:08x}")),
    }
}
