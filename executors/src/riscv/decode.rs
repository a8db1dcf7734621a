//! Decoding RV64GC: I, M, A, F, D, Zicsr, Zifencei, and C (each compressed
//! instruction expanded to the 32-bit instruction it stands for, then
//! decoded as that). A decoded instruction is an [`Op`] and its operands,
//! flat, so the interpreter's dispatch is one `match`.
//!
//! Encodings follow "The RISC-V Instruction Set Manual, Volume I:
//! Unprivileged ISA" (20191213): base opcodes (chapter 24), compressed
//! quadrants (chapter 16).

/// What an instruction does (operands in [`Inst`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lui,
    Auipc,
    Jal,
    Jalr,
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
    Lb,
    Lh,
    Lw,
    Ld,
    Lbu,
    Lhu,
    Lwu,
    Sb,
    Sh,
    Sw,
    Sd,
    Addi,
    Slti,
    Sltiu,
    Xori,
    Ori,
    Andi,
    Slli,
    Srli,
    Srai,
    Add,
    Sub,
    Sll,
    Slt,
    Sltu,
    Xor,
    Srl,
    Sra,
    Or,
    And,
    Addiw,
    Slliw,
    Srliw,
    Sraiw,
    Addw,
    Subw,
    Sllw,
    Srlw,
    Sraw,
    Mul,
    Mulh,
    Mulhsu,
    Mulhu,
    Div,
    Divu,
    Rem,
    Remu,
    Mulw,
    Divw,
    Divuw,
    Remw,
    Remuw,
    Fence,
    FenceI,
    Ecall,
    Ebreak,
    Csrrw,
    Csrrs,
    Csrrc,
    Csrrwi,
    Csrrsi,
    Csrrci,
    /// Atomics: `width` in [`Inst::imm`] is 4 or 8.
    Lr,
    Sc,
    AmoSwap,
    AmoAdd,
    AmoXor,
    AmoAnd,
    AmoOr,
    AmoMin,
    AmoMax,
    AmoMinu,
    AmoMaxu,
    /// Floating point: [`Inst::double`] says D rather than F.
    Fl,
    Fs,
    Fmadd,
    Fmsub,
    Fnmsub,
    Fnmadd,
    Fadd,
    Fsub,
    Fmul,
    Fdiv,
    Fsqrt,
    Fsgnj,
    Fsgnjn,
    Fsgnjx,
    Fmin,
    Fmax,
    /// Between single and double (`fcvt.s.d`, `fcvt.d.s`).
    FcvtFF,
    /// To an integer: `rs2` is 0 (w), 1 (wu), 2 (l), 3 (lu).
    FcvtIF,
    /// From an integer, as above.
    FcvtFI,
    /// `fmv.x.w` / `fmv.x.d`.
    FmvXF,
    /// `fmv.w.x` / `fmv.d.x`.
    FmvFX,
    Feq,
    Flt,
    Fle,
    Fclass,
}

/// One decoded instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inst {
    pub op: Op,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    pub rs3: u8,
    /// Sign-extended immediate (for atomics: the access width; for CSR
    /// instructions: the CSR number).
    pub imm: i64,
    /// Rounding mode field of floating-point instructions.
    pub rm: u8,
    /// Double rather than single precision.
    pub double: bool,
    /// Bytes the instruction occupies: 2 (compressed) or 4.
    pub len: u8,
}

fn bits(word: u32, hi: u32, lo: u32) -> u32 {
    (word >> lo) & ((1 << (hi - lo + 1)) - 1)
}

fn sext(value: u32, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((value as i64) << shift) >> shift
}

fn inst(op: Op, word: u32, imm: i64) -> Inst {
    Inst {
        op,
        rd: bits(word, 11, 7) as u8,
        rs1: bits(word, 19, 15) as u8,
        rs2: bits(word, 24, 20) as u8,
        rs3: bits(word, 31, 27) as u8,
        imm,
        rm: bits(word, 14, 12) as u8,
        double: false,
        len: 4,
    }
}

/// Decodes the instruction whose first (little-endian) bytes are `word`:
/// a compressed one if its two low bits are not `11`. `None`: illegal.
pub fn decode(word: u32) -> Option<Inst> {
    if word & 3 != 3 {
        let mut inst = decode32(expand(word as u16)?)?;
        inst.len = 2;
        return Some(inst);
    }
    decode32(word)
}

/// Decodes a 32-bit instruction.
pub fn decode32(w: u32) -> Option<Inst> {
    use Op::*;
    let funct3 = bits(w, 14, 12);
    let funct7 = bits(w, 31, 25);
    let i_imm = sext(bits(w, 31, 20), 12);
    let s_imm = sext(bits(w, 31, 25) << 5 | bits(w, 11, 7), 12);
    let b_imm = sext(
        bits(w, 31, 31) << 12 | bits(w, 7, 7) << 11 | bits(w, 30, 25) << 5 | bits(w, 11, 8) << 1,
        13,
    );
    let u_imm = sext(w & 0xFFFF_F000, 32);
    let j_imm = sext(
        bits(w, 31, 31) << 20
            | bits(w, 19, 12) << 12
            | bits(w, 20, 20) << 11
            | bits(w, 30, 21) << 1,
        21,
    );
    let op = match bits(w, 6, 0) {
        0x37 => return Some(inst(Lui, w, u_imm)),
        0x17 => return Some(inst(Auipc, w, u_imm)),
        0x6F => return Some(inst(Jal, w, j_imm)),
        0x67 if funct3 == 0 => return Some(inst(Jalr, w, i_imm)),
        0x63 => {
            let op = [
                Some(Beq),
                Some(Bne),
                None,
                None,
                Some(Blt),
                Some(Bge),
                Some(Bltu),
                Some(Bgeu),
            ][funct3 as usize]?;
            return Some(inst(op, w, b_imm));
        }
        0x03 => {
            let op = [
                Some(Lb),
                Some(Lh),
                Some(Lw),
                Some(Ld),
                Some(Lbu),
                Some(Lhu),
                Some(Lwu),
                None,
            ][funct3 as usize]?;
            return Some(inst(op, w, i_imm));
        }
        0x23 => {
            let op = [
                Some(Sb),
                Some(Sh),
                Some(Sw),
                Some(Sd),
                None,
                None,
                None,
                None,
            ][funct3 as usize]?;
            return Some(inst(op, w, s_imm));
        }
        0x13 => {
            let shamt = i64::from(bits(w, 25, 20));
            return Some(match funct3 {
                0 => inst(Addi, w, i_imm),
                2 => inst(Slti, w, i_imm),
                3 => inst(Sltiu, w, i_imm),
                4 => inst(Xori, w, i_imm),
                6 => inst(Ori, w, i_imm),
                7 => inst(Andi, w, i_imm),
                1 if bits(w, 31, 26) == 0 => inst(Slli, w, shamt),
                5 if bits(w, 31, 26) == 0 => inst(Srli, w, shamt),
                5 if bits(w, 31, 26) == 0x10 => inst(Srai, w, shamt),
                _ => return None,
            });
        }
        0x1B => {
            let shamt = i64::from(bits(w, 24, 20));
            return Some(match (funct3, funct7) {
                (0, _) => inst(Addiw, w, i_imm),
                (1, 0) => inst(Slliw, w, shamt),
                (5, 0) => inst(Srliw, w, shamt),
                (5, 0x20) => inst(Sraiw, w, shamt),
                _ => return None,
            });
        }
        0x33 => match (funct7, funct3) {
            (0, 0) => Add,
            (0x20, 0) => Sub,
            (0, 1) => Sll,
            (0, 2) => Slt,
            (0, 3) => Sltu,
            (0, 4) => Xor,
            (0, 5) => Srl,
            (0x20, 5) => Sra,
            (0, 6) => Or,
            (0, 7) => And,
            (1, f) => [Mul, Mulh, Mulhsu, Mulhu, Div, Divu, Rem, Remu][f as usize],
            _ => return None,
        },
        0x3B => match (funct7, funct3) {
            (0, 0) => Addw,
            (0x20, 0) => Subw,
            (0, 1) => Sllw,
            (0, 5) => Srlw,
            (0x20, 5) => Sraw,
            (1, 0) => Mulw,
            (1, 4) => Divw,
            (1, 5) => Divuw,
            (1, 6) => Remw,
            (1, 7) => Remuw,
            _ => return None,
        },
        0x0F => match funct3 {
            0 => Fence,
            1 => FenceI,
            _ => return None,
        },
        0x73 => {
            let csr = i64::from(bits(w, 31, 20));
            return Some(match funct3 {
                0 if w == 0x0000_0073 => inst(Ecall, w, 0),
                0 if w == 0x0010_0073 => inst(Ebreak, w, 0),
                1 => inst(Csrrw, w, csr),
                2 => inst(Csrrs, w, csr),
                3 => inst(Csrrc, w, csr),
                5 => inst(Csrrwi, w, csr),
                6 => inst(Csrrsi, w, csr),
                7 => inst(Csrrci, w, csr),
                _ => return None,
            });
        }
        0x2F => {
            let width = match funct3 {
                2 => 4,
                3 => 8,
                _ => return None,
            };
            let op = match bits(w, 31, 27) {
                0x02 if bits(w, 24, 20) == 0 => Lr,
                0x03 => Sc,
                0x01 => AmoSwap,
                0x00 => AmoAdd,
                0x04 => AmoXor,
                0x0C => AmoAnd,
                0x08 => AmoOr,
                0x10 => AmoMin,
                0x14 => AmoMax,
                0x18 => AmoMinu,
                0x1C => AmoMaxu,
                _ => return None,
            };
            return Some(inst(op, w, width));
        }
        0x07 | 0x27 => {
            let double = match funct3 {
                2 => false,
                3 => true,
                _ => return None,
            };
            let (op, imm) = if bits(w, 6, 0) == 0x07 {
                (Fl, i_imm)
            } else {
                (Fs, s_imm)
            };
            return Some(Inst {
                double,
                ..inst(op, w, imm)
            });
        }
        0x43 | 0x47 | 0x4B | 0x4F => {
            let double = match bits(w, 26, 25) {
                0 => false,
                1 => true,
                _ => return None,
            };
            let op = [Fmadd, Fmsub, Fnmsub, Fnmadd][((bits(w, 6, 0) - 0x43) / 4) as usize];
            return Some(Inst {
                double,
                ..inst(op, w, 0)
            });
        }
        0x53 => {
            let double = match bits(w, 26, 25) {
                0 => false,
                1 => true,
                _ => return None,
            };
            let rs2 = bits(w, 24, 20);
            let op = match (bits(w, 31, 27), funct3, rs2) {
                (0x00, _, _) => Fadd,
                (0x01, _, _) => Fsub,
                (0x02, _, _) => Fmul,
                (0x03, _, _) => Fdiv,
                (0x0B, _, 0) => Fsqrt,
                (0x04, 0, _) => Fsgnj,
                (0x04, 1, _) => Fsgnjn,
                (0x04, 2, _) => Fsgnjx,
                (0x05, 0, _) => Fmin,
                (0x05, 1, _) => Fmax,
                // fcvt.s.d (rs2 = 1, to single) and fcvt.d.s (rs2 = 0).
                (0x08, _, 0 | 1) if (rs2 == 1) != double => FcvtFF,
                (0x18, _, 0..=3) => FcvtIF,
                (0x1A, _, 0..=3) => FcvtFI,
                (0x1C, 0, 0) => FmvXF,
                (0x1C, 1, 0) => Fclass,
                (0x1E, 0, 0) => FmvFX,
                (0x14, 2, _) => Feq,
                (0x14, 1, _) => Flt,
                (0x14, 0, _) => Fle,
                _ => return None,
            };
            return Some(Inst {
                double,
                ..inst(op, w, 0)
            });
        }
        _ => return None,
    };
    Some(inst(op, w, 0))
}

impl Inst {
    /// The assembler mnemonic of the 32-bit instruction (what `objdump -M
    /// no-aliases` prints, without `.aq`/`.rl` suffixes and with the
    /// compressed form's expansion).
    pub fn name(&self) -> String {
        use Op::*;
        let fmt = if self.double { "d" } else { "s" };
        let int = ["w", "wu", "l", "lu"]
            .get(self.rs2 as usize)
            .copied()
            .unwrap_or("?");
        let width = if self.imm == 8 { "d" } else { "w" };
        match self.op {
            FenceI => "fence.i".into(),
            Lr | Sc | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu
            | AmoMaxu => format!("{}.{width}", format!("{:?}", self.op).to_lowercase()),
            Fl => format!("fl{}", if self.double { "d" } else { "w" }),
            Fs => format!("fs{}", if self.double { "d" } else { "w" }),
            FcvtFF => format!("fcvt.{fmt}.{}", if self.double { "s" } else { "d" }),
            FcvtIF => format!("fcvt.{int}.{fmt}"),
            FcvtFI => format!("fcvt.{fmt}.{int}"),
            FmvXF => format!("fmv.x.{}", if self.double { "d" } else { "w" }),
            FmvFX => format!("fmv.{}.x", if self.double { "d" } else { "w" }),
            Fmadd | Fmsub | Fnmsub | Fnmadd | Fadd | Fsub | Fmul | Fdiv | Fsqrt | Fsgnj
            | Fsgnjn | Fsgnjx | Fmin | Fmax | Feq | Flt | Fle | Fclass => {
                format!("{}.{fmt}", format!("{:?}", self.op).to_lowercase())
            }
            op => format!("{op:?}").to_lowercase(),
        }
    }
}

/// Register x8 + the 3-bit field (the compressed register set).
fn creg(field: u16) -> u32 {
    8 + u32::from(field & 7)
}

fn cb(half: u16, hi: u32, lo: u32) -> u32 {
    bits(u32::from(half), hi, lo)
}

// 32-bit encoders, for expansion.
fn r_type(funct7: u32, rs2: u32, rs1: u32, funct3: u32, rd: u32, opcode: u32) -> u32 {
    funct7 << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | opcode
}

fn i_type(imm: i32, rs1: u32, funct3: u32, rd: u32, opcode: u32) -> u32 {
    ((imm as u32) & 0xFFF) << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | opcode
}

fn s_type(imm: i32, rs2: u32, rs1: u32, funct3: u32, opcode: u32) -> u32 {
    let imm = imm as u32;
    (imm >> 5 & 0x7F) << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12 | (imm & 0x1F) << 7 | opcode
}

fn b_type(imm: i32, rs2: u32, rs1: u32, funct3: u32) -> u32 {
    let imm = imm as u32;
    (imm >> 12 & 1) << 31
        | (imm >> 5 & 0x3F) << 25
        | rs2 << 20
        | rs1 << 15
        | funct3 << 12
        | (imm >> 1 & 0xF) << 8
        | (imm >> 11 & 1) << 7
        | 0x63
}

fn j_type(imm: i32, rd: u32) -> u32 {
    let imm = imm as u32;
    (imm >> 20 & 1) << 31
        | (imm >> 1 & 0x3FF) << 21
        | (imm >> 11 & 1) << 20
        | (imm >> 12 & 0xFF) << 12
        | rd << 7
        | 0x6F
}

fn sext32(value: u32, bits: u32) -> i32 {
    sext(value, bits) as i32
}

/// The 32-bit instruction a compressed one stands for (RV64C); `None`:
/// illegal or reserved.
pub fn expand(h: u16) -> Option<u32> {
    let funct3 = cb(h, 15, 13);
    let rd = cb(h, 11, 7);
    let rs2 = cb(h, 6, 2);
    let rd_ = creg(h >> 2); // bits 4:2
    let rs1_ = creg(h >> 7); // bits 9:7
    Some(match (h & 3, funct3) {
        (0, 0) => {
            // c.addi4spn
            let imm = cb(h, 10, 7) << 6 | cb(h, 12, 11) << 4 | cb(h, 5, 5) << 3 | cb(h, 6, 6) << 2;
            if imm == 0 {
                return None;
            }
            i_type(imm as i32, 2, 0, rd_, 0x13)
        }
        (0, 1) => i_type(cld_imm(h) as i32, rs1_, 3, rd_, 0x07), // c.fld
        (0, 2) => i_type(clw_imm(h) as i32, rs1_, 2, rd_, 0x03), // c.lw
        (0, 3) => i_type(cld_imm(h) as i32, rs1_, 3, rd_, 0x03), // c.ld
        (0, 5) => s_type(cld_imm(h) as i32, rd_, rs1_, 3, 0x27), // c.fsd
        (0, 6) => s_type(clw_imm(h) as i32, rd_, rs1_, 2, 0x23), // c.sw
        (0, 7) => s_type(cld_imm(h) as i32, rd_, rs1_, 3, 0x23), // c.sd
        (1, 0) => i_type(ci_imm(h), rd, 0, rd, 0x13),            // c.addi (c.nop)
        (1, 1) => {
            // c.addiw
            if rd == 0 {
                return None;
            }
            i_type(ci_imm(h), rd, 0, rd, 0x1B)
        }
        (1, 2) => i_type(ci_imm(h), 0, 0, rd, 0x13), // c.li
        (1, 3) if rd == 2 => {
            // c.addi16sp
            let imm = cb(h, 12, 12) << 9
                | cb(h, 4, 3) << 7
                | cb(h, 5, 5) << 6
                | cb(h, 2, 2) << 5
                | cb(h, 6, 6) << 4;
            if imm == 0 {
                return None;
            }
            i_type(sext32(imm, 10), 2, 0, 2, 0x13)
        }
        (1, 3) => {
            // c.lui
            let imm = sext32(cb(h, 12, 12) << 17 | cb(h, 6, 2) << 12, 18);
            if imm == 0 {
                return None;
            }
            (imm as u32 & 0xFFFF_F000) | rd << 7 | 0x37
        }
        (1, 4) => {
            let shamt = (cb(h, 12, 12) << 5 | cb(h, 6, 2)) as i32;
            match cb(h, 11, 10) {
                0 => i_type(shamt, rs1_, 5, rs1_, 0x13),         // c.srli
                1 => i_type(shamt | 0x400, rs1_, 5, rs1_, 0x13), // c.srai
                2 => i_type(ci_imm(h), rs1_, 7, rs1_, 0x13),     // c.andi
                _ => {
                    let rs2_ = rd_;
                    match (cb(h, 12, 12), cb(h, 6, 5)) {
                        (0, 0) => r_type(0x20, rs2_, rs1_, 0, rs1_, 0x33), // c.sub
                        (0, 1) => r_type(0, rs2_, rs1_, 4, rs1_, 0x33),    // c.xor
                        (0, 2) => r_type(0, rs2_, rs1_, 6, rs1_, 0x33),    // c.or
                        (0, 3) => r_type(0, rs2_, rs1_, 7, rs1_, 0x33),    // c.and
                        (1, 0) => r_type(0x20, rs2_, rs1_, 0, rs1_, 0x3B), // c.subw
                        (1, 1) => r_type(0, rs2_, rs1_, 0, rs1_, 0x3B),    // c.addw
                        _ => return None,
                    }
                }
            }
        }
        (1, 5) => {
            // c.j
            let imm = cb(h, 12, 12) << 11
                | cb(h, 8, 8) << 10
                | cb(h, 10, 9) << 8
                | cb(h, 6, 6) << 7
                | cb(h, 7, 7) << 6
                | cb(h, 2, 2) << 5
                | cb(h, 11, 11) << 4
                | cb(h, 5, 3) << 1;
            j_type(sext32(imm, 12), 0)
        }
        (1, 6 | 7) => {
            // c.beqz, c.bnez
            let imm = cb(h, 12, 12) << 8
                | cb(h, 6, 5) << 6
                | cb(h, 2, 2) << 5
                | cb(h, 11, 10) << 3
                | cb(h, 4, 3) << 1;
            b_type(sext32(imm, 9), 0, rs1_, funct3 - 6)
        }
        (2, 0) => {
            // c.slli
            let shamt = (cb(h, 12, 12) << 5 | cb(h, 6, 2)) as i32;
            i_type(shamt, rd, 1, rd, 0x13)
        }
        (2, 1) => i_type(cldsp_imm(h) as i32, 2, 3, rd, 0x07), // c.fldsp
        (2, 2) => {
            // c.lwsp
            if rd == 0 {
                return None;
            }
            let imm = cb(h, 3, 2) << 6 | cb(h, 12, 12) << 5 | cb(h, 6, 4) << 2;
            i_type(imm as i32, 2, 2, rd, 0x03)
        }
        (2, 3) => {
            // c.ldsp
            if rd == 0 {
                return None;
            }
            i_type(cldsp_imm(h) as i32, 2, 3, rd, 0x03)
        }
        (2, 4) => match (cb(h, 12, 12), rd, rs2) {
            (0, 0, _) => return None,
            (0, _, 0) => i_type(0, rd, 0, 0, 0x67), // c.jr
            (0, _, _) => r_type(0, rs2, 0, 0, rd, 0x33), // c.mv
            (1, 0, 0) => 0x0010_0073,               // c.ebreak
            (1, _, 0) => i_type(0, rd, 0, 1, 0x67), // c.jalr
            (1, _, _) => r_type(0, rs2, rd, 0, rd, 0x33), // c.add
            _ => return None,
        },
        (2, 5) => s_type(csdsp_imm(h) as i32, rs2, 2, 3, 0x27), // c.fsdsp
        (2, 6) => {
            // c.swsp
            let imm = cb(h, 8, 7) << 6 | cb(h, 12, 9) << 2;
            s_type(imm as i32, rs2, 2, 2, 0x23)
        }
        (2, 7) => s_type(csdsp_imm(h) as i32, rs2, 2, 3, 0x23), // c.sdsp
        _ => return None,
    })
}

fn ci_imm(h: u16) -> i32 {
    sext32(cb(h, 12, 12) << 5 | cb(h, 6, 2), 6)
}

fn clw_imm(h: u16) -> u32 {
    cb(h, 5, 5) << 6 | cb(h, 12, 10) << 3 | cb(h, 6, 6) << 2
}

fn cld_imm(h: u16) -> u32 {
    cb(h, 6, 5) << 6 | cb(h, 12, 10) << 3
}

fn cldsp_imm(h: u16) -> u32 {
    cb(h, 4, 2) << 6 | cb(h, 12, 12) << 5 | cb(h, 6, 5) << 3
}

fn csdsp_imm(h: u16) -> u32 {
    cb(h, 9, 7) << 6 | cb(h, 12, 10) << 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_instructions() {
        // addi a0, a0, -1
        let i = decode(0xfff5_0513).unwrap();
        assert_eq!((i.op, i.rd, i.rs1, i.imm, i.len), (Op::Addi, 10, 10, -1, 4));
        // ecall
        assert_eq!(decode(0x0000_0073).unwrap().op, Op::Ecall);
        // jal ra, -4 (0xffdff0ef)
        let j = decode(0xffdf_f0ef).unwrap();
        assert_eq!((j.op, j.rd, j.imm), (Op::Jal, 1, -4));
        // sd ra, 8(sp) = 0x00113423
        let s = decode(0x0011_3423).unwrap();
        assert_eq!((s.op, s.rs1, s.rs2, s.imm), (Op::Sd, 2, 1, 8));
        // bne a0, zero, +16 = 0x00051863
        let b = decode(0x0005_1863).unwrap();
        assert_eq!((b.op, b.rs1, b.rs2, b.imm), (Op::Bne, 10, 0, 16));
        // fadd.d fa0, fa0, fa1 = 0x02b57553
        let f = decode(0x02b5_7553).unwrap();
        assert_eq!(
            (f.op, f.double, f.rd, f.rs1, f.rs2),
            (Op::Fadd, true, 10, 10, 11)
        );
        assert_eq!(decode(0xffff_ffff), None);
        assert_eq!(
            decode(0),
            None,
            "all zeros is the defined illegal instruction"
        );
    }

    #[test]
    fn compressed_instructions_expand() {
        // c.addi sp, -16 = 0x1141 -> addi sp, sp, -16
        let i = decode(0x1141).unwrap();
        assert_eq!((i.op, i.rd, i.rs1, i.imm, i.len), (Op::Addi, 2, 2, -16, 2));
        // c.sdsp ra, 8(sp) = 0xe406
        let s = decode(0xe406).unwrap();
        assert_eq!((s.op, s.rs1, s.rs2, s.imm), (Op::Sd, 2, 1, 8));
        // c.ret = c.jr ra = 0x8082
        let r = decode(0x8082).unwrap();
        assert_eq!((r.op, r.rd, r.rs1, r.imm), (Op::Jalr, 0, 1, 0));
        // c.li a0, 0 = 0x4501
        let l = decode(0x4501).unwrap();
        assert_eq!((l.op, l.rd, l.rs1, l.imm), (Op::Addi, 10, 0, 0));
        // c.mv a0, a1 = 0x852e
        let m = decode(0x852e).unwrap();
        assert_eq!((m.op, m.rd, m.rs1, m.rs2), (Op::Add, 10, 0, 11));
        // c.beqz a0, +8 = 0xc501
        let b = decode(0xc501).unwrap();
        assert_eq!((b.op, b.rs1, b.imm), (Op::Beq, 10, 8));
        // c.lui a0, 0x1 = 0x6505
        let u = decode(0x6505).unwrap();
        assert_eq!((u.op, u.rd, u.imm), (Op::Lui, 10, 0x1000));
        assert_eq!(decode(0x0000), None, "c.addi4spn with zero immediate");
    }
}
