//! The wasm executor: an unmodified WebAssembly module (`wasm32-wasip1`),
//! run by an embedded interpreter, wasmi, whose every import dst owns.
//!
//! Why wasmi: fuel metering (a run is bounded by instructions executed, so
//! running out is a timeout that every replay repeats), a small build, and
//! an API to every instance's memory and globals. The module is rewritten
//! first ([`rewrite`]: its mutable globals and memory exported, the size of
//! its memory made virtual) and instantiated once per campaign; a snapshot
//! of its memory and mutable globals is taken right after instantiation,
//! and every run starts by restoring it instead of instantiating again. A
//! run that grew the memory (which wasm cannot shrink) leaves the real
//! memory larger, but the module sees its virtual size, which the snapshot
//! restores, and the pages past the snapshot are zeroed. WASI preview 1 is
//! dst's ([`wasi`]): clock, randomness and sleeps are decisions, output is
//! captured. Decisions are written by the executor's own recorder of the
//! run protocol (`dst::protocol`), over the executor's region, as the SDK
//! writes a native target's.
//!
//! A module built with the `dst` crate exports its hooks (`dst::wasm`);
//! the rewrite turns them into calls of the host functions of [`hooks`],
//! so its assertions and decisions reach the executor's recorder as a
//! native program's reach the SDK's, and its catalog is read from its `dst_catalog` custom
//! section. Traps are located by [`locate`]: the function (name section)
//! and line (DWARF) of the last block entered, or a Rust panic's own
//! location.
//!
//! Edge coverage: the rewrite also counts edges in a memory of the
//! module's own that its code cannot address ([`edges`]); after each run
//! the counters are copied into a map the executor owns.
//!
//! Not yet: comparison feedback; tables restored between runs (a module
//! that writes its table with `table.set` keeps the change); a trap's exact
//! instruction (wasmi reports none; the block it is in is known).

pub mod edges;
pub mod hooks;
pub mod locate;
pub mod rewrite;
pub mod wasi;

use std::cell::UnsafeCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{FLAG_EVENTS, Layout, Region, RegionRef};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor, Map};
use wasmi::TrapCode;
use wasmi::{
    Config, Engine, Extern, ExternType, Global, Instance, Linker, Memory, Module, Store, TypedFunc,
    Val,
};

use wasi::Host;

/// Lifecycle events a run recorded with `FLAG_EVENTS` leaves: its WASI
/// calls, and what it wrote to standard output and error.
pub use crate::guest::{CALLS_EVENT, STDERR_EVENT, STDOUT_EVENT};

/// Instructions (wasmi fuel units) a run may execute unless told.
pub const DEFAULT_FUEL: u64 = 20_000_000;
/// Instructions the module's start function may execute at instantiation.
const START_FUEL: u64 = 1 << 30;
/// Output captured per stream and run.
const CAPTURE_LIMIT: usize = 64 << 10;

/// What to do with an import dst does not provide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Missing {
    /// Refuse the module, naming every missing import.
    #[default]
    Refuse,
    /// Functions return WASI's ENOSYS (other kinds are still refused).
    Enosys,
}

/// How a module is run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Command-line arguments after the program's name.
    pub args: Vec<String>,
    /// Environment, as `KEY=VALUE`.
    pub env: Vec<String>,
    /// Instructions per run.
    pub fuel: u64,
    pub missing: Missing,
    /// The exported function a run calls.
    pub entry: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            args: Vec::new(),
            env: Vec::new(),
            fuel: DEFAULT_FUEL,
            missing: Missing::Refuse,
            entry: "_start".to_string(),
        }
    }
}

/// Why a module cannot be explored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Unreadable, malformed, unsupported, or with imports dst does not
    /// provide (exit status 4).
    BadModule(String),
    /// Its start function trapped while instantiating (exit status 6).
    StartFailed(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // One line: wasmparser's and wasmi's messages can hold a
            // pretty-printed value over several.
            LoadError::BadModule(m) | LoadError::StartFailed(m) => {
                let mut words = m.split_whitespace();
                if let Some(first) = words.next() {
                    f.write_str(first)?;
                }
                words.try_for_each(|w| write!(f, " {w}"))
            }
        }
    }
}

/// Memory and mutable globals right after instantiation.
struct Snapshot {
    memory: Option<(Memory, Vec<u8>)>,
    globals: Vec<(Global, Val)>,
}

/// One instance of the module and what restoring it needs.
struct Live {
    store: Store<Host>,
    entry: TypedFunc<(), ()>,
    snapshot: Snapshot,
    /// The edge counters' memory.
    edges: Option<Memory>,
    /// The id of the last block entered (see [`locate`]).
    last_block: Option<Global>,
}

/// Runs a WebAssembly module; see the module docs.
pub struct Wasm {
    engine: Engine,
    linker: Linker<Host>,
    module: Module,
    mutable_globals: Vec<u32>,
    /// The rewrite virtualized the memory's size.
    virtual_memory: bool,
    locator: locate::Locator,
    options: Options,
    live: Live,
    /// The region the host's recorder writes runs to.
    region: Arc<Region>,
    flags: u64,
    catalog: Vec<SiteInfo>,
    /// The last run's edge counters, at a fixed address (cells: the
    /// explorer's observer reads and resets them through a pointer).
    edges: Box<[UnsafeCell<u8>]>,
    /// Instantiations after the first (runs that grew the memory).
    reinstantiated: u64,
    /// The wall-clock backstop the explorer sizes its own limit from (runs
    /// are bounded by fuel, deterministically; this only guards against a
    /// host that hangs).
    backstop: Duration,
}

fn trap_name(trap: TrapCode) -> &'static str {
    match trap {
        TrapCode::UnreachableCodeReached => "trap: unreachable",
        TrapCode::MemoryOutOfBounds => "trap: memory out of bounds",
        TrapCode::TableOutOfBounds => "trap: table out of bounds",
        TrapCode::IndirectCallToNull => "trap: indirect call to null",
        TrapCode::IntegerDivisionByZero => "trap: integer division by zero",
        TrapCode::IntegerOverflow => "trap: integer overflow",
        TrapCode::BadConversionToInteger => "trap: bad conversion to integer",
        TrapCode::StackOverflow => "trap: stack overflow",
        TrapCode::BadSignature => "trap: indirect call type mismatch",
        TrapCode::OutOfFuel => "trap: out of fuel",
        _ => "trap",
    }
}

impl Wasm {
    /// Loads the module in file `path`, binary or WAT text (its name, for
    /// `argv[0]` and messages: the file's stem).
    pub fn load(path: &Path, options: Options) -> Result<Wasm, LoadError> {
        let mut bytes = std::fs::read(path)
            .map_err(|e| LoadError::BadModule(format!("cannot read {}: {e}", path.display())))?;
        if !bytes.starts_with(b"\0asm") {
            bytes = wat::parse_bytes(&bytes)
                .map_err(|e| {
                    let first = e.to_string().lines().next().unwrap_or_default().to_string();
                    LoadError::BadModule(format!("neither a wasm binary nor valid WAT: {first}"))
                })?
                .into_owned();
        }
        let program = path.file_stem().map_or_else(
            || "module".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        Wasm::new(&bytes, &program, options)
    }

    /// Loads a module from its bytes; `program` is its name (`argv[0]`).
    pub fn new(bytes: &[u8], program: &str, options: Options) -> Result<Wasm, LoadError> {
        let rewritten = rewrite::prepare(bytes).map_err(LoadError::BadModule)?;
        let mut config = Config::default();
        config.consume_fuel(true);
        let engine = Engine::new(&config);
        let module = Module::new(&engine, &rewritten.wasm[..])
            .map_err(|e| LoadError::BadModule(format!("unsupported module: {e}")))?;
        let mut linker = Linker::new(&engine);
        wasi::define(&mut linker).expect("each WASI function is defined once");
        let mut missing = Vec::new();
        for import in module.imports() {
            let provided =
                import.module() == wasi::MODULE && wasi::PROVIDED.contains(&import.name());
            if provided {
                continue;
            }
            match (import.ty(), options.missing) {
                (ExternType::Func(ty), Missing::Enosys) => {
                    let results: Vec<Val> = ty
                        .results()
                        .iter()
                        .map(|t| Val::default_for_ty(*t))
                        .collect();
                    linker
                        .func_new(
                            import.module(),
                            import.name(),
                            ty.clone(),
                            move |_, _, out| {
                                for (slot, value) in out.iter_mut().zip(&results) {
                                    *slot = value.clone();
                                }
                                if let Some(Val::I32(errno)) = out.first_mut() {
                                    *errno = wasi::ENOSYS;
                                }
                                Ok(())
                            },
                        )
                        .map_err(|e| LoadError::BadModule(e.to_string()))?;
                }
                _ => missing.push(format!("{}.{}", import.module(), import.name())),
            }
        }
        if !missing.is_empty() {
            return Err(LoadError::BadModule(format!(
                "the module imports what dst does not provide: {} (--wasi-missing enosys makes missing functions return ENOSYS)",
                missing.join(", ")
            )));
        }
        if module.get_export(&options.entry).is_none() {
            return Err(LoadError::BadModule(format!(
                "the module exports no function {:?} to run",
                options.entry
            )));
        }
        let mut args = vec![program.to_string()];
        args.extend(options.args.iter().cloned());
        let region = Arc::new(Region::new(Layout {
            sites_capacity: rewritten.catalog.len().max(1),
            coverage_size: crate::inprocess::DECISION_COVERAGE,
            ..Layout::default()
        }));
        let host = Host {
            args,
            env: options.env.clone(),
            capture_limit: CAPTURE_LIMIT,
            sites: Arc::new(Sites::new(&rewritten.catalog)),
            recorder: Some(crate::guest::Recorder::new(Arc::clone(&region))),
            ..Host::default()
        };
        let live = instantiate(
            &engine,
            &linker,
            &module,
            &rewritten.mutable_globals,
            &options.entry,
            host,
        )?;
        Ok(Wasm {
            engine,
            linker,
            module,
            mutable_globals: rewritten.mutable_globals,
            virtual_memory: rewritten.virtual_memory.is_some(),
            locator: locate::Locator::new(rewritten.debug),
            options,
            live,
            region,
            flags: 0,
            catalog: rewritten.catalog,
            edges: (0..rewritten.edges.clamp(1, 1 << 16))
                .map(|_| UnsafeCell::new(0))
                .collect(),
            reinstantiated: 0,
            backstop: Duration::from_secs(1),
        })
    }

    /// How many runs grew the memory, so that the module was instantiated
    /// again after them.
    pub fn reinstantiated(&self) -> u64 {
        self.reinstantiated
    }

    /// The last run's edge counters (one per instrumented block).
    pub fn edges(&self) -> Vec<u8> {
        // SAFETY: read between runs; nothing writes the cells meanwhile.
        self.edges.iter().map(|c| unsafe { *c.get() }).collect()
    }

    /// What the last run wrote to its standard output and error.
    pub fn output(&self) -> (&[u8], &[u8]) {
        let host = self.live.store.data();
        (&host.stdout, &host.stderr)
    }

    /// Restores the snapshot; instantiates again if the memory grew and
    /// its size is not virtual (see [`rewrite::Rewritten::virtual_memory`]):
    /// with a virtual size, the pages past the snapshot are zeroed and the
    /// size global is restored with the others.
    fn restore(&mut self) -> Result<(), LoadError> {
        let grown = self
            .live
            .snapshot
            .memory
            .as_ref()
            .is_some_and(|(m, bytes)| m.data_size(&self.live.store) != bytes.len());
        if grown && !self.virtual_memory {
            let host = std::mem::take(self.live.store.data_mut());
            self.live = instantiate(
                &self.engine,
                &self.linker,
                &self.module,
                &self.mutable_globals,
                &self.options.entry,
                host,
            )?;
            self.reinstantiated += 1;
            return Ok(());
        }
        let live = &mut self.live;
        if let Some((memory, bytes)) = &live.snapshot.memory {
            let data = memory.data_mut(&mut live.store);
            debug_assert!(data.len() >= bytes.len(), "memory never shrinks");
            data[..bytes.len()].copy_from_slice(bytes);
            data[bytes.len()..].fill(0);
        }
        for (global, value) in &live.snapshot.globals {
            global
                .set(&mut live.store, value.clone())
                .expect("a snapshot value has its global's type");
        }
        Ok(())
    }

    /// Moves the run's edge counters into the executor's map and clears
    /// them for the next run.
    fn collect_edges(&mut self) {
        let Some(memory) = self.live.edges else {
            return;
        };
        let counters = memory.data_mut(&mut self.live.store);
        let n = self.edges.len().min(counters.len());
        // SAFETY: `n` is within both; the map's cells are written only here,
        // between runs, and read by an observer only between runs.
        unsafe {
            let map = UnsafeCell::raw_get(self.edges.as_ptr());
            std::ptr::copy_nonoverlapping(counters.as_ptr(), map, n);
        }
        counters[..n].fill(0);
    }

    /// Where the run's trap happened (see [`locate`]).
    fn trap_location(&self, trap: TrapCode) -> Option<String> {
        let stderr = &self.live.store.data().stderr;
        if trap == TrapCode::UnreachableCodeReached
            && let Some(at) = locate::panic_location(stderr)
        {
            return Some(at);
        }
        let id = self.live.last_block?.get(&self.live.store).i32()?;
        self.locator.block(id as u32)
    }

    /// After a run with events recorded: its WASI calls and output.
    fn record_events(&mut self) {
        let host = self.live.store.data_mut();
        let calls: Option<Vec<(String, i64)>> = host.calls.as_ref().map(|calls| {
            calls
                .iter()
                .map(|(n, r)| (n.clone(), i64::from(*r)))
                .collect()
        });
        let wasi::Host {
            recorder,
            stdout,
            stderr,
            ..
        } = host;
        let recorder = recorder
            .as_mut()
            .expect("a host in its store has its recorder");
        crate::guest::record_output(recorder, calls.as_deref(), stdout, stderr);
    }
}

/// Instantiates `module` (running its start function) and snapshots it.
fn instantiate(
    engine: &Engine,
    linker: &Linker<Host>,
    module: &Module,
    mutable_globals: &[u32],
    entry: &str,
    host: Host,
) -> Result<Live, LoadError> {
    let mut store = Store::new(engine, host);
    store.set_fuel(START_FUEL).expect("fuel is enabled");
    let start_failed = |e: wasmi::Error| {
        LoadError::StartFailed(format!("the module's start function failed: {e}"))
    };
    // The rewrite moved any start function to an export, called here once
    // the SDK's hooks are in place.
    let instance: Instance = linker
        .instantiate_and_start(&mut store, module)
        .map_err(start_failed)?;
    if let Some(table) = instance
        .get_export(&store, rewrite::HOOKS_EXPORT)
        .and_then(Extern::into_table)
    {
        hooks::install(&mut store, table);
    }
    if let Ok(start) = instance.get_typed_func::<(), ()>(&store, rewrite::START_EXPORT) {
        start.call(&mut store, ()).map_err(start_failed)?;
    }
    let entry = instance
        .get_typed_func::<(), ()>(&store, entry)
        .map_err(|e| LoadError::BadModule(format!("cannot run {entry:?}: {e}")))?;
    let memory = instance
        .get_export(&store, rewrite::MEMORY_EXPORT)
        .and_then(Extern::into_memory)
        .map(|m| (m, m.data(&store).to_vec()));
    let mut globals = Vec::new();
    for &index in mutable_globals {
        let global = instance
            .get_global(&store, &rewrite::global_export(index))
            .expect("the rewrite exported every mutable global");
        globals.push((global, global.get(&store)));
    }
    let edges = instance
        .get_export(&store, rewrite::EDGES_EXPORT)
        .and_then(Extern::into_memory);
    let last_block = instance.get_global(&store, rewrite::LAST_BLOCK_EXPORT);
    Ok(Live {
        store,
        entry,
        snapshot: Snapshot { memory, globals },
        edges,
        last_block,
    })
}

impl Executor for Wasm {
    fn execute(&mut self, input: &[u8]) -> End {
        self.region.view().reset(input, self.flags);
        if let Err(e) = self.restore() {
            return End::crash("instantiate", e.to_string(), None);
        }
        let record = self.flags & FLAG_EVENTS != 0;
        self.live.store.data_mut().reset(record);
        self.live
            .store
            .set_fuel(self.options.fuel)
            .expect("fuel is enabled");
        let result = self.live.entry.call(&mut self.live.store, ());
        let end = match result {
            Ok(()) => End::Ok,
            Err(e) => match (e.i32_exit_status(), e.as_trap_code()) {
                (Some(0), _) => End::Ok,
                (Some(code), _) => End::crash(
                    "exit",
                    format!("the module exited with status {code}"),
                    None,
                ),
                (None, Some(TrapCode::OutOfFuel)) => End::Timeout,
                (None, Some(trap)) => {
                    End::crash(trap_name(trap), e.to_string(), self.trap_location(trap))
                }
                (None, None) => End::crash("host", e.to_string(), None),
            },
        };
        self.collect_edges();
        if record {
            self.record_events();
        }
        end
    }

    fn region(&self) -> RegionRef<'_> {
        self.region.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    fn coverage(&mut self) -> Coverage<'_> {
        // SAFETY: the map is boxed cells owned by `self`, never resized, so
        // at a fixed address for `self`'s life; written only between runs.
        let edges = unsafe {
            Map::from_raw_parts(UnsafeCell::raw_get(self.edges.as_ptr()), self.edges.len())
        };
        Coverage {
            edges,
            decisions: region_map(&self.region),
        }
    }

    fn flags(&self) -> u64 {
        self.flags
    }

    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }

    /// Not a limit the executor enforces (fuel is), but reporting one tells
    /// the explorer that a run ends by itself, so its own wall-clock limit
    /// is a generous backstop and a slow machine cannot turn a run that
    /// would end in its fuel into a kill.
    fn timeout(&self) -> Option<Duration> {
        Some(self.backstop)
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.backstop = timeout;
    }
}

/// A malformed module: which section, at which byte offset, and why.
pub fn malformed(section: &str, offset: u64, why: impl std::fmt::Display) -> String {
    format!("malformed module: {why} (in the {section} section, at byte offset {offset})")
}

/// The module's catalog by site id: (catalog index, kind, message) for
/// each site with that id (more than one when a macro expands several
/// sites at one location; the message tells them apart).
#[derive(Debug, Default)]
pub struct Sites {
    by_id: std::collections::HashMap<u32, Vec<(usize, dst::catalog::Kind, String)>>,
}

impl Sites {
    pub fn new(catalog: &[SiteInfo]) -> Sites {
        let mut by_id: std::collections::HashMap<u32, Vec<_>> = Default::default();
        for site in catalog {
            by_id.entry(site.id).or_default().push((
                site.index as usize,
                site.kind,
                site.message.clone(),
            ));
        }
        Sites { by_id }
    }

    /// The catalog index and kind of the site with `id`; `message` is read
    /// only when several sites share the id.
    pub(crate) fn find<'m>(
        &self,
        id: u32,
        message: impl FnOnce() -> Option<&'m str>,
    ) -> Option<(usize, dst::catalog::Kind)> {
        match self.by_id.get(&id)?.as_slice() {
            [] => None,
            [(index, kind, _)] => Some((*index, *kind)),
            several => {
                let message = message()?;
                several
                    .iter()
                    .find(|(_, _, m)| *m == message)
                    .map(|(index, kind, _)| (*index, *kind))
            }
        }
    }
}
