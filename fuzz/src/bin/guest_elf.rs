//! Feeds scribbled ELF files to what reads a guest program before running
//! it: the emulator's loader (`riscv::machine::check` and `Machine::load`,
//! stack and auxv included), the KVM executor's check, and the catalog
//! readers (`elf::guest_catalog`, `catalog::c::parse`). Each must accept or
//! refuse with an error, never panic.

use dst_executors::riscv::machine::Machine;

/// A small valid static ELF for `machine`: one loadable segment with a few
/// bytes of code, and a `dst_catalog` section holding one record.
fn elf(machine: u16) -> Vec<u8> {
    let mut file = vec![0u8; 0x200];
    let put = |file: &mut Vec<u8>, at: usize, bytes: &[u8]| {
        file[at..at + bytes.len()].copy_from_slice(bytes);
    };
    put(&mut file, 0, b"\x7fELF\x02\x01\x01");
    put(&mut file, 16, &2u16.to_le_bytes()); // ET_EXEC
    put(&mut file, 18, &machine.to_le_bytes());
    put(&mut file, 20, &1u32.to_le_bytes());
    put(&mut file, 24, &0x20_0100u64.to_le_bytes()); // entry
    put(&mut file, 32, &64u64.to_le_bytes()); // phoff
    put(&mut file, 40, &0x140u64.to_le_bytes()); // shoff
    put(&mut file, 52, &64u16.to_le_bytes()); // ehsize
    put(&mut file, 54, &56u16.to_le_bytes()); // phentsize
    put(&mut file, 56, &1u16.to_le_bytes()); // phnum
    put(&mut file, 58, &64u16.to_le_bytes()); // shentsize
    put(&mut file, 60, &3u16.to_le_bytes()); // shnum: null, dst_catalog, shstrtab
    put(&mut file, 62, &2u16.to_le_bytes()); // shstrndx
    // PT_LOAD, R+X, the whole file at 0x200000.
    put(&mut file, 64, &1u32.to_le_bytes());
    put(&mut file, 68, &5u32.to_le_bytes());
    put(&mut file, 80, &0x20_0000u64.to_le_bytes());
    put(&mut file, 88, &0x20_0000u64.to_le_bytes());
    put(&mut file, 96, &0x200u64.to_le_bytes());
    put(&mut file, 104, &0x2000u64.to_le_bytes());
    put(&mut file, 112, &0x1000u64.to_le_bytes());
    // A catalog record at 0x100: magic, kind 1, header 24, size 32, line 7,
    // message "m", condition "", file "f".
    let record: [u8; 30] = [
        0x44, 0x53, 0x54, 0x43, 1, 0, 24, 0, 32, 0, 0, 0, 7, 0, 0, 0, 2, 0, 1, 0, 2, 0, 0, 0, b'm',
        0, 0, b'f', 0, 0,
    ];
    put(&mut file, 0x100, &record);
    put(&mut file, 0x120, b"\0dst_catalog\0.shstrtab\0");
    // Section headers at 0x140: [1] dst_catalog, [2] .shstrtab.
    let section = |file: &mut Vec<u8>, at: usize, name: u32, offset: u64, size: u64| {
        put(file, at, &name.to_le_bytes());
        put(file, at + 4, &1u32.to_le_bytes()); // SHT_PROGBITS
        put(file, at + 16, &(0x20_0000 + offset).to_le_bytes());
        put(file, at + 24, &offset.to_le_bytes());
        put(file, at + 32, &size.to_le_bytes());
    };
    file.resize(0x140 + 3 * 64, 0);
    section(&mut file, 0x180, 1, 0x100, 32);
    section(&mut file, 0x1C0, 13, 0x120, 23);
    file
}

dst_fuzz::target!(|| {
    let machine = if dst::random::bool() { 243 } else { 62 }; // riscv, x86-64
    let valid = elf(machine);
    let mut bytes = valid.clone();
    for _ in 0..dst::random::below(6) {
        let at = dst::random::below(bytes.len() as u64) as usize;
        let end = (at + 1 + dst::random::below(8) as usize).min(bytes.len());
        dst::random::fill(&mut bytes[at..end]);
    }
    if dst::random::below(8) == 0 {
        let keep = dst::random::below(bytes.len() as u64 + 1) as usize;
        bytes.truncate(keep);
    }
    let loaded = Machine::load(&bytes, &["prog".to_string()], &[]);
    let _ = dst_executors::kvm::executor::check(&bytes);
    if let Ok(file) = dst_executors::elf::parse(&bytes) {
        let _ = dst_executors::elf::guest_catalog(&file);
    }
    let _ = dst::catalog::c::parse(&bytes);
    dst::assert_sometimes!(loaded.is_ok(), "a scribbled riscv ELF still loads");
    dst::assert_sometimes!(
        loaded.is_err(),
        "a scribbled ELF is refused by the emulator"
    );
    if bytes == valid && machine == 243 {
        dst::assert_always!(loaded.is_ok(), "the intact riscv ELF loads");
    }
});
