//! A bank with a transfer bug that needs two faults in a row.
//!
//! Transfers debit one account, then credit another. A crash between the two
//! (`fault!("crash between debit and credit")`) is recovered from a journal,
//! which re-applies the pending credit. If the client also retries the transfer
//! (`fault!("client retries after timeout")`) while the journal entry is still
//! pending, the credit is applied twice and money is created: conservation of
//! the total balance breaks. Both faults must fire on the same transfer, after
//! an overdraft check passed for a large amount.

use std::collections::BTreeMap;

/// Number of accounts and their opening balance.
pub const ACCOUNTS: u64 = 4;
pub const OPENING: u64 = 100;

#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Transfer {
    from: u64,
    to: u64,
    amount: u64,
}

/// Runs one simulated day of transfers; every choice is a decision.
pub fn simulate(transfers: usize) -> BTreeMap<u64, u64> {
    let mut balances: BTreeMap<u64, u64> = (0..ACCOUNTS).map(|a| (a, OPENING)).collect();
    dst::lifecycle::setup_complete(&serde_json::json!({ "accounts": ACCOUNTS }));
    for _ in 0..transfers {
        let t = Transfer {
            from: dst::random::below(ACCOUNTS),
            to: dst::random::below(ACCOUNTS),
            amount: 1 + dst::random::below(OPENING),
        };
        if t.from == t.to {
            continue;
        }
        let available = balances[&t.from];
        if t.amount > available {
            dst::assert_sometimes!(true, "an overdraft is refused");
            continue;
        }
        *balances.get_mut(&t.from).unwrap() -= t.amount;
        if dst::fault!("crash between debit and credit") {
            dst::assert_reachable!("recovery from a crash mid-transfer", &t);
            // The journal keeps the pending credit; recovery applies it.
            let mut pending = Some(t);
            if dst::fault!("client retries after timeout") {
                // Bug: the retry re-applies the credit without checking the
                // journal, and recovery then applies it again.
                if let Some(p) = &pending {
                    *balances.get_mut(&p.to).unwrap() += p.amount;
                }
            }
            if let Some(p) = pending.take() {
                *balances.get_mut(&p.to).unwrap() += p.amount;
            }
        } else {
            *balances.get_mut(&t.to).unwrap() += t.amount;
        }
        let total: u64 = balances.values().sum();
        dst::assert_always!(
            total == ACCOUNTS * OPENING,
            "money is conserved",
            &serde_json::json!({ "total": total, "balances": &balances })
        );
        dst::assert_always_less_than_or_equal_to!(
            balances[&t.to],
            ACCOUNTS * OPENING,
            "no account holds more than all the money"
        );
    }
    balances
}
