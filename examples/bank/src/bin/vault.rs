//! Fuzz target for the tests of campaigns across machines
//! (`tests/nodes.rs`): a vault that opens for one 64-bit code and rings its
//! alarm for one more. No search guesses either (2^64 tries each), so a
//! node that has an input opening the vault, or the alarm's finding, got
//! it from another node.

/// The code that opens the vault (the run's first decision).
pub const CODE: u64 = 0x5EC2_E7C0_DE00_0001;
/// The code that rings the alarm (the second, once the vault is open).
pub const ALARM: u64 = 0xA1A2_3000_0000_0002;

dst_fuzz::target!(|| {
    let opened = dst::random::u64() == CODE;
    dst::assert_sometimes!(opened, "the vault opens");
    if opened {
        let code = dst::random::u64();
        dst::assert_always!(code != ALARM, "the vault's alarm stays silent");
    }
});
