//! A cargo-fuzz target over a structured input (`arbitrary`): transfers
//! between three accounts. Its bug: both balances are read before either
//! is written, so a transfer from an account to itself loses the amount.
#![no_main]

use dst_fuzz::arbitrary::{self, Arbitrary};
use dst_fuzz::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Transfer {
    from: u8,
    to: u8,
    amount: u16,
}

fuzz_target!(|transfers: Vec<Transfer>| {
    let mut balances = [1000u32; 3];
    for t in &transfers {
        let (from, to) = (usize::from(t.from % 3), usize::from(t.to % 3));
        let amount = u32::from(t.amount);
        let (had_from, had_to) = (balances[from], balances[to]);
        if amount > had_from {
            continue;
        }
        balances[to] = had_to + amount;
        balances[from] = had_from - amount;
    }
    assert_eq!(balances.iter().sum::<u32>(), 3000, "money is conserved");
});
