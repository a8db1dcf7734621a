//! The RISC-V decoder against binutils: every instruction of a static glibc
//! program (built with Debian's riscv64-linux-gnu-gcc, which .ci/run
//! installs) decodes, to the instruction `objdump -M no-aliases` names.

use std::process::Command;

use dst_executors::riscv::decode::decode;

/// The mnemonic a compressed instruction expands to.
fn expanded(mnemonic: &str) -> &str {
    match mnemonic {
        "c.li" | "c.nop" | "c.addi4spn" | "c.addi16sp" => "addi",
        "c.mv" => "add",
        "c.j" => "jal",
        "c.jr" | "c.jalr" => "jalr",
        "c.beqz" => "beq",
        "c.bnez" => "bne",
        "c.lwsp" => "lw",
        "c.ldsp" => "ld",
        "c.fldsp" => "fld",
        "c.swsp" => "sw",
        "c.sdsp" => "sd",
        "c.fsdsp" => "fsd",
        other => other.strip_prefix("c.").unwrap_or(other),
    }
}

#[test]
fn every_instruction_of_a_glibc_program_decodes_as_binutils_says() {
    let dir = std::env::temp_dir().join(format!("dst-rv-decode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("prog.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n#include <math.h>\n#include <pthread.h>\n\
         static void *run(void *p) { return p; }\n\
         int main(int argc, char **argv) { pthread_t t; pthread_create(&t, 0, run, 0);\n\
         pthread_join(t, 0); printf(\"%f %s\\n\", sqrt((double)argc), argv[0]); return 0; }\n",
    )
    .unwrap();
    let program = dir.join("prog");
    let built = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O1", "-g", "-static", "-pthread"])
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .arg("-lm")
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!(
            "skipped: riscv64-linux-gnu-gcc is not installed (apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)"
        );
        return;
    }
    let listing = Command::new("riscv64-linux-gnu-objdump")
        .args(["-d", "-M", "no-aliases,numeric"])
        .arg(&program)
        .output()
        .expect("objdump comes with the compiler");
    let text = String::from_utf8_lossy(&listing.stdout);
    let (mut checked, mut mismatches) = (0, Vec::new());
    for line in text.lines() {
        // "   11aca:\ted043483          \tld\tx9,-304(x8)"
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 3 || !fields[0].trim_end().ends_with(':') {
            continue;
        }
        let hex = fields[1].trim();
        let mnemonic = fields[2].trim();
        if mnemonic.starts_with('.') || mnemonic == "c.unimp" || mnemonic.is_empty() {
            continue; // data in the text, or what binutils does not know
        }
        let Ok(word) = u32::from_str_radix(hex, 16) else {
            continue;
        };
        let want = expanded(mnemonic)
            .trim_end_matches(".aqrl")
            .trim_end_matches(".aq")
            .trim_end_matches(".rl");
        checked += 1;
        match decode(word) {
            Some(inst) if inst.name() == want => {}
            got => mismatches.push(format!("{hex} {mnemonic}: {:?}", got.map(|i| i.name()))),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked > 50_000, "a glibc program is big: {checked}");
    assert!(
        mismatches.is_empty(),
        "{} of {checked} differ, e.g. {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(20)]
    );
}
