//! A bank with a transfer bug that needs two faults and an emptied account.
//!
//! Transfers debit one account, then credit another. A crash between the two
//! (`fault!("crash between debit and credit")`) is recovered from a journal,
//! which applies the pending credit. If the client's request also timed out
//! (`fault!("client retries after timeout")`) and the client then sees the
//! source account at zero, it concludes the transfer failed and retries the
//! credit: money is created and conservation breaks.

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

/// Runs one simulated day of `transfers` transfers; every choice is a decision.
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
        dst::assert_sometimes_less_than_or_equal_to!(
            available - t.amount,
            0,
            "a transfer empties an account"
        );
        *balances.get_mut(&t.from).unwrap() -= t.amount;
        if dst::fault!("crash between debit and credit") {
            dst::assert_reachable!("recovery from a crash mid-transfer", &t);
            dst::assert_sometimes!(
                balances[&t.from] == 0,
                "a crash interrupts a transfer that emptied its source"
            );
            let timed_out = dst::fault!("client retries after timeout");
            // Recovery applies the journal's pending credit.
            *balances.get_mut(&t.to).unwrap() += t.amount;
            // Bug: the client retries the credit when it sees the source
            // empty, without asking the journal whether it was applied.
            if timed_out && balances[&t.from] == 0 {
                *balances.get_mut(&t.to).unwrap() += t.amount;
            }
        } else {
            *balances.get_mut(&t.to).unwrap() += t.amount;
        }
        let total: u64 = balances.values().sum();
        dst::assert_always!(
            total == ACCOUNTS * OPENING,
            "money is conserved",
            &serde_json::json!({ "total": total, "balances": &balances, "transfer": t })
        );
    }
    balances
}
