//! Runs one simulated day of the bank under the SDK's local mode: decisions
//! come from `DST_SEED` (or a fresh seed, printed), or from `DST_INPUT`.

fn main() {
    let balances = dst_example_bank::simulate(20);
    let total: u64 = balances.values().sum();
    println!("final balances {balances:?}, total {total}");
}
