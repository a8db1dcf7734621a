//! The virtual machine: one vCPU in 64-bit long mode on `kvm-ioctls`, no
//! firmware, no interrupt controller, no timer. Guest memory is one
//! anonymous mapping, identity-mapped by page tables built here:
//!
//! | guest address | what |
//! |---|---|
//! | 0x0000 | not mapped (a null dereference is a page fault) |
//! | 0x1000-0x4fff | page tables (PML4, PDPT, PD, the first 2 MiB's PT), supervisor only |
//! | 0x5000 | GDT (kernel and user code and data, the TSS) |
//! | 0x6000 | TSS (RSP0: the kernel stack) |
//! | 0x7000 | IDT: 32 interrupt gates to the stubs |
//! | 0x8000 | exception stubs (16 bytes each) |
//! | 0x9000-0xafff | kernel stack |
//! | 0x200000- | the program (its ELF segments where they are linked), then its stack at the top |
//!
//! The program runs at CPL 3 with IOPL 3, so its port I/O (the hypercalls
//! of [`HYPERCALL_PORT`], the end of a run) exits to the host without
//! passing through CPL 0: on kvm-pvm, guest kernel code runs about 1000x
//! slower than user code (`../shared/notes/kvm.md`). CPL 0 runs only an
//! exception's stub: it pushes the vector and reports it on
//! [`EXCEPTION_PORT`], and the run ends there (or the executor answers it
//! and resumes the program: CPUID, RDTSC). CPUID faulting is on, so CPUID
//! at CPL 3 faults and is answered from a table without RDRAND or RDSEED.
//! CR4.TSD is set so that RDTSC faults too; kvm-pvm does not apply it to
//! the guest's user mode (it runs on the host CPU), so there RDTSC reads
//! the host's TSC.

use kvm_bindings::{CpuId, kvm_fpu, kvm_regs, kvm_segment, kvm_sregs, kvm_userspace_memory_region};
use kvm_ioctls::{Kvm, VcpuExit, VcpuFd, VmFd};

/// Port a guest writes to for a hypercall (rax the call, rdi, rsi, rdx,
/// rcx, r8, r9 its arguments, rax the result).
pub const HYPERCALL_PORT: u16 = 0xE1;
/// Port an exception stub writes to (its vector on the kernel stack).
pub const EXCEPTION_PORT: u16 = 0xE0;
/// Where the program may be linked: past the VMM's pages, 2 MiB-aligned.
pub const PROGRAM_BASE: u64 = 0x20_0000;

const PML4: u64 = 0x1000;
const PDPT: u64 = 0x2000;
const PD: u64 = 0x3000;
const PT: u64 = 0x4000;
const GDT: u64 = 0x5000;
const TSS: u64 = 0x6000;
const IDT: u64 = 0x7000;
const STUBS: u64 = 0x8000;
const KERNEL_STACK_TOP: u64 = 0xB000;

/// RFLAGS of the program: IOPL 3 (its port I/O exits without CPL 0),
/// interrupts off (there are none).
pub const USER_FLAGS: u64 = 0x2 | 0x3000;

/// Bit 0: CPUID faulting (CPUID at CPL > 0 raises #GP).
const MSR_MISC_FEATURES_ENABLES: u32 = 0x140;

const KERNEL_CODE: u16 = 0x08;
const USER_DATA: u16 = 0x18 | 3;
const USER_CODE: u16 = 0x20 | 3;
const TSS_SELECTOR: u16 = 0x28;

/// Exceptions that push an error code.
const WITH_ERROR: [u8; 10] = [8, 10, 11, 12, 13, 14, 17, 21, 29, 30];

/// Why [`Vm::new`] failed: no `/dev/kvm`, or KVM refused a step.
#[derive(Debug)]
pub struct Unavailable(pub String);

/// A guest exit as the executor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// A hypercall: rax (the call), then rdi, rsi, rdx, rcx, r8, r9.
    Hypercall([u64; 7]),
    /// An exception: vector, error code, the faulting rip, and cr2 (the
    /// address of a page fault).
    Exception {
        vector: u8,
        error: u64,
        rip: u64,
        cr2: u64,
    },
    /// KVM_RUN was interrupted (the run's timer kicked the vCPU out).
    Interrupted,
    /// The guest stopped in a way the VMM does not expect (a triple
    /// fault shuts it down; an unexpected exit reason).
    Stopped(String),
}

/// One virtual machine with one vCPU.
pub struct Vm {
    _kvm: Kvm,
    vm: VmFd,
    pub vcpu: VcpuFd,
    memory: *mut u8,
    size: usize,
    /// CPUID as the guest sees it.
    cpuid: CpuId,
    cpuid_faulting: bool,
}

// SAFETY: the memory mapping is owned by the Vm and only touched through
// `&mut self` or `&self` methods; KVM file descriptors may move between
// threads.
unsafe impl Send for Vm {}

impl Drop for Vm {
    fn drop(&mut self) {
        // SAFETY: `memory` is the mapping of `size` bytes made in `new`,
        // unmapped once (the VM using it is dropped with `self`).
        unsafe { libc::munmap(self.memory.cast(), self.size) };
    }
}

fn segment(selector: u16, code: bool, dpl: u8) -> kvm_segment {
    kvm_segment {
        base: 0,
        limit: 0xFFFF_FFFF,
        selector,
        type_: if code { 0xB } else { 0x3 },
        present: 1,
        dpl,
        db: u8::from(!code),
        s: 1,
        l: u8::from(code),
        g: 1,
        avl: 0,
        unusable: 0,
        padding: 0,
    }
}

impl Vm {
    /// A VM with `size` bytes of guest memory (a multiple of 2 MiB, at
    /// least 4 MiB), its page tables, descriptor tables and exception
    /// stubs written; the vCPU in long mode at CPL 3.
    pub fn new(size: usize) -> Result<Vm, Unavailable> {
        Vm::with_dirty_log(size, false)
    }

    /// [`Vm::new`], with KVM logging the pages the guest writes
    /// (`KVM_MEM_LOG_DIRTY_PAGES`) when `dirty_log`: see [`Vm::dirty_pages`].
    pub fn with_dirty_log(size: usize, dirty_log: bool) -> Result<Vm, Unavailable> {
        debug_assert!(size.is_multiple_of(2 << 20) && size >= 4 << 20);
        let fail = |what: &str, e: kvm_ioctls::Error| Unavailable(format!("{what}: {e}"));
        let kvm = Kvm::new().map_err(|e| fail("cannot open /dev/kvm", e))?;
        let vm = kvm.create_vm().map_err(|e| fail("cannot create a VM", e))?;
        // SAFETY: a fresh anonymous private mapping; checked below.
        let memory = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if memory == libc::MAP_FAILED {
            return Err(Unavailable(format!(
                "cannot map {size} bytes of guest memory: {}",
                std::io::Error::last_os_error()
            )));
        }
        let region = kvm_userspace_memory_region {
            slot: 0,
            flags: if dirty_log {
                kvm_bindings::KVM_MEM_LOG_DIRTY_PAGES
            } else {
                0
            },
            guest_phys_addr: 0,
            memory_size: size as u64,
            userspace_addr: memory as u64,
        };
        // SAFETY: the mapping is valid for `size` bytes and lives as long
        // as the VM (both are dropped with the returned `Vm`).
        unsafe { vm.set_user_memory_region(region) }
            .map_err(|e| fail("cannot give the VM its memory", e))?;
        let vcpu = vm
            .create_vcpu(0)
            .map_err(|e| fail("cannot create a vCPU", e))?;
        let mut this = Vm {
            _kvm: kvm,
            vm,
            vcpu,
            memory: memory.cast(),
            size,
            cpuid: CpuId::new(0).map_err(|e| Unavailable(format!("CPUID: {e:?}")))?,
            cpuid_faulting: false,
        };
        this.build_tables();
        this.set_cpuid()?;
        this.reset_cpu(0, 0)?;
        Ok(this)
    }

    /// Guest memory, all of it.
    pub fn memory(&self) -> &[u8] {
        // SAFETY: the mapping is `size` bytes, owned by `self`; the vCPU
        // writes it only inside `run`, which takes `&mut self`.
        unsafe { std::slice::from_raw_parts(self.memory, self.size) }
    }

    pub fn memory_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `memory`, and `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.memory, self.size) }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    fn put_u64(&mut self, at: u64, value: u64) {
        self.memory_mut()[at as usize..at as usize + 8].copy_from_slice(&value.to_le_bytes());
    }

    pub fn read_u64(&self, at: u64) -> Option<u64> {
        let bytes = self.memory().get(at as usize..at as usize + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    fn build_tables(&mut self) {
        const PRESENT: u64 = 1;
        const WRITABLE: u64 = 2;
        const USER: u64 = 4;
        const HUGE: u64 = 0x80;
        let flags = PRESENT | WRITABLE | USER;
        self.put_u64(PML4, PDPT | flags);
        self.put_u64(PDPT, PD | flags);
        // The first 2 MiB in 4 KiB pages: page 0 absent, the VMM's pages
        // supervisor only, the rest user.
        self.put_u64(PD, PT | flags);
        for page in 1..512u64 {
            let user = if page * 0x1000 >= KERNEL_STACK_TOP {
                USER
            } else {
                0
            };
            self.put_u64(PT + 8 * page, (page * 0x1000) | PRESENT | WRITABLE | user);
        }
        for big in 1..(self.size as u64 >> 21) {
            self.put_u64(PD + 8 * big, big << 21 | flags | HUGE);
        }
        // GDT: null, kernel code, kernel data, user data, user code, TSS.
        let gdt: [u64; 5] = [
            0,
            0x00AF_9A00_0000_FFFF, // kernel code: L, present, DPL 0
            0x00CF_9200_0000_FFFF, // kernel data
            0x00CF_F200_0000_FFFF, // user data: DPL 3
            0x00AF_FA00_0000_FFFF, // user code: L, DPL 3
        ];
        for (i, entry) in gdt.iter().enumerate() {
            self.put_u64(GDT + 8 * i as u64, *entry);
        }
        // The TSS with an I/O permission bitmap that allows ports 0-255
        // (32 zero bytes, then the 0xFF that ends a bitmap).
        let limit = 0x68 + 32 + 1 - 1u64;
        let tss_low = limit | (TSS & 0xFF_FFFF) << 16 | 0x89 << 40 | (TSS >> 24 & 0xFF) << 56;
        self.put_u64(GDT + 40, tss_low);
        self.put_u64(GDT + 48, TSS >> 32);
        // TSS: RSP0 at offset 4; the I/O map base past the limit.
        self.memory_mut()[TSS as usize..TSS as usize + 0x68 + 32].fill(0);
        self.memory_mut()[TSS as usize + 0x68 + 32] = 0xFF;
        self.memory_mut()[TSS as usize + 4..TSS as usize + 12]
            .copy_from_slice(&KERNEL_STACK_TOP.to_le_bytes());
        self.memory_mut()[TSS as usize + 0x66..TSS as usize + 0x68]
            .copy_from_slice(&0x68u16.to_le_bytes());
        // IDT and stubs: push 0 (when the CPU pushes no error code), push
        // the vector, out to EXCEPTION_PORT, hlt.
        for vector in 0..32u8 {
            let stub = STUBS + 16 * u64::from(vector);
            let mut code = Vec::new();
            if !WITH_ERROR.contains(&vector) {
                code.extend([0x6A, 0x00]);
            }
            code.extend([0x6A, vector, 0xE6, EXCEPTION_PORT as u8, 0xF4, 0xEB, 0xFD]);
            self.memory_mut()[stub as usize..stub as usize + code.len()].copy_from_slice(&code);
            let low = stub & 0xFFFF
                | u64::from(KERNEL_CODE) << 16
                | 0x8E << 40
                | (stub >> 16 & 0xFFFF) << 48;
            self.put_u64(IDT + 16 * u64::from(vector), low);
            self.put_u64(IDT + 16 * u64::from(vector) + 8, stub >> 32);
        }
    }

    /// CPUID as KVM supports it, without RDRAND and RDSEED (randomness
    /// comes from decisions).
    fn set_cpuid(&mut self) -> Result<(), Unavailable> {
        let mut cpuid: CpuId = self
            ._kvm
            .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
            .map_err(|e| Unavailable(format!("cannot read CPUID: {e}")))?;
        for entry in cpuid.as_mut_slice() {
            match (entry.function, entry.index) {
                (1, _) => entry.ecx &= !(1 << 30), // RDRAND
                (7, 0) => entry.ebx &= !(1 << 18), // RDSEED
                _ => {}
            }
        }
        self.vcpu
            .set_cpuid2(&cpuid)
            .map_err(|e| Unavailable(format!("cannot set CPUID: {e}")))?;
        // On kvm-pvm the guest's user mode runs on the host CPU, where
        // CPUID is not intercepted: turn on CPUID faulting, so that CPUID at
        // CPL 3 raises #GP and the executor answers it from this table.
        let faulting = kvm_bindings::Msrs::from_entries(&[kvm_bindings::kvm_msr_entry {
            index: MSR_MISC_FEATURES_ENABLES,
            data: 1,
            ..Default::default()
        }])
        .map_err(|e| Unavailable(format!("cannot make the MSR list: {e:?}")))?;
        self.cpuid_faulting = self.vcpu.set_msrs(&faulting).is_ok_and(|n| n == 1);
        self.cpuid = cpuid;
        Ok(())
    }

    /// The CPUID leaf `function`/`index` as the guest sees it: (eax, ebx,
    /// ecx, edx), zero for a leaf KVM does not report.
    pub fn cpuid(&self, function: u32, index: u32) -> (u32, u32, u32, u32) {
        self.cpuid
            .as_slice()
            .iter()
            .find(|e| e.function == function && (e.index == index || e.flags & 1 == 0))
            .map_or((0, 0, 0, 0), |e| (e.eax, e.ebx, e.ecx, e.edx))
    }

    /// Whether CPUID at CPL 3 faults (and the executor answers it).
    pub fn cpuid_faulting(&self) -> bool {
        self.cpuid_faulting
    }

    /// Puts the vCPU at `rip` with stack `rsp`, at CPL 3 in long mode.
    pub fn reset_cpu(&mut self, rip: u64, rsp: u64) -> Result<(), Unavailable> {
        let fail = |what: &str, e: kvm_ioctls::Error| Unavailable(format!("{what}: {e}"));
        self.user_mode()?;
        let fpu = kvm_fpu {
            fcw: 0x37F,
            mxcsr: 0x1F80,
            ..Default::default()
        };
        self.vcpu.set_fpu(&fpu).map_err(|e| fail("set_fpu", e))?;
        let regs = kvm_regs {
            rip,
            rsp,
            rflags: USER_FLAGS,
            ..Default::default()
        };
        self.vcpu.set_regs(&regs).map_err(|e| fail("set_regs", e))
    }

    /// Returns from an exception's stub to the program: the stub's frame
    /// popped (`regs` are the program's, `rflags` its own), CPL 3 again.
    pub fn resume_user(&mut self, regs: &kvm_regs) -> Result<(), Unavailable> {
        self.user_mode()?;
        self.vcpu
            .set_regs(regs)
            .map_err(|e| Unavailable(format!("set_regs: {e}")))
    }

    /// The program's frame an exception's stub left on the kernel stack:
    /// (rip, rflags, rsp).
    pub fn exception_frame(&self) -> Option<(u64, u64, u64)> {
        let regs = self.vcpu.get_regs().ok()?;
        let at = |k: u64| self.read_u64(regs.rsp + 8 * k);
        Some((at(2)?, at(4)?, at(5)?))
    }

    /// Long mode at CPL 3: the segments, tables and control registers.
    fn user_mode(&mut self) -> Result<(), Unavailable> {
        let fail = |what: &str, e: kvm_ioctls::Error| Unavailable(format!("{what}: {e}"));
        let mut sregs: kvm_sregs = self.vcpu.get_sregs().map_err(|e| fail("get_sregs", e))?;
        sregs.cr3 = PML4;
        sregs.cr4 = 0x20 | 0x200 | 0x400 | 0x4; // PAE, OSFXSR, OSXMMEXCPT, TSD
        sregs.cr0 = 0x8005_0033; // PG, AM, WP, NE, ET, MP, PE
        sregs.efer = 0x500; // LME, LMA
        sregs.cs = segment(USER_CODE, true, 3);
        let data = segment(USER_DATA, false, 3);
        (sregs.ds, sregs.es, sregs.fs, sregs.gs, sregs.ss) = (data, data, data, data, data);
        sregs.gdt.base = GDT;
        sregs.gdt.limit = 7 * 8 - 1;
        sregs.idt.base = IDT;
        sregs.idt.limit = 32 * 16 - 1;
        sregs.tr = kvm_segment {
            base: TSS,
            limit: 0x68 + 32,
            selector: TSS_SELECTOR,
            type_: 0xB,
            present: 1,
            dpl: 0,
            db: 0,
            s: 0,
            l: 0,
            g: 0,
            avl: 0,
            unusable: 0,
            padding: 0,
        };
        self.vcpu
            .set_sregs(&sregs)
            .map_err(|e| fail("set_sregs", e))
    }

    /// Runs the vCPU until the guest exits to the VMM.
    pub fn run(&mut self) -> Exit {
        let exit = match self.vcpu.run() {
            Ok(VcpuExit::IoOut(HYPERCALL_PORT, _)) => None,
            Ok(VcpuExit::IoOut(EXCEPTION_PORT, _)) => Some(self.exception()),
            Ok(other) => Some(Exit::Stopped(format!("{other:?}"))),
            Err(e) if e.errno() == libc::EINTR => Some(Exit::Interrupted),
            Err(e) => Some(Exit::Stopped(format!("KVM_RUN failed: {e}"))),
        };
        match exit {
            Some(exit) => exit,
            None => match self.vcpu.get_regs() {
                Ok(r) => Exit::Hypercall([r.rax, r.rdi, r.rsi, r.rdx, r.rcx, r.r8, r.r9]),
                Err(e) => Exit::Stopped(format!("get_regs: {e}")),
            },
        }
    }

    /// The exception a stub reported: its frame on the kernel stack.
    fn exception(&mut self) -> Exit {
        let (Ok(regs), Ok(sregs)) = (self.vcpu.get_regs(), self.vcpu.get_sregs()) else {
            return Exit::Stopped("cannot read the vCPU after an exception".into());
        };
        let at = |k: u64| self.read_u64(regs.rsp + 8 * k).unwrap_or(0);
        Exit::Exception {
            vector: at(0) as u8,
            error: at(1),
            rip: at(2),
            cr2: sregs.cr2,
        }
    }

    /// The page numbers the guest wrote since the last call (the log is
    /// read and reset in one ioctl; needs [`Vm::with_dirty_log`]).
    pub fn dirty_pages(&self) -> Result<Vec<u64>, Unavailable> {
        let bitmap = self
            .vm
            .get_dirty_log(0, self.size)
            .map_err(|e| Unavailable(format!("KVM_GET_DIRTY_LOG: {e}")))?;
        let mut pages = Vec::new();
        for (i, &word) in bitmap.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                pages.push(i as u64 * 64 + u64::from(bits.trailing_zeros()));
                bits &= bits - 1;
            }
        }
        Ok(pages)
    }
}
