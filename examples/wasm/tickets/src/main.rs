//! Ticket sales with a payment gateway that loses replies, written with
//! dst's assertions and decisions and built both natively and for
//! `wasm32-wasip1`: the program the wasm level and the process level must
//! run identically (the same decisions, the same outcome, for the same
//! input).
//!
//! Six customers each pick a seat and pay. A payment's reply can be lost
//! (`fault!`), and the client then retries; the primary gateway
//! deduplicates retries, but when the retry is routed to the backup (one
//! time in ten, a decision) the customer is charged twice. Nominal runs
//! never lose a reply; it takes a fault and one routing value to break
//! "a customer is charged at most once".

const SEATS: u64 = 4;
const CUSTOMERS: usize = 6;

/// Charges for one payment attempt: how many times the card was charged.
fn pay(charges: &mut u32, retried: bool) {
    let backup = retried && dst::random::below(10) == 0;
    dst::assert_sometimes!(backup, "a retry goes to the backup gateway");
    if !retried || backup {
        *charges += 1;
    }
}

fn main() {
    let mut seats = [None; SEATS as usize];
    let mut sold = 0;
    for customer in 0..CUSTOMERS {
        let seat = dst::random::below(SEATS) as usize;
        dst::assert_sometimes!(seats[seat].is_some(), "a customer asks for a taken seat");
        if seats[seat].is_some() {
            continue;
        }
        let mut charges = 0;
        pay(&mut charges, false);
        if dst::fault!("payment reply lost") {
            pay(&mut charges, true);
        }
        dst::assert_always_less_than_or_equal_to!(
            charges,
            1,
            "a customer is charged at most once",
            &charge_details(customer, charges)
        );
        seats[seat] = Some(customer);
        sold += 1;
    }
    dst::assert_reachable!("the sale ends");
    dst::assert_always!(sold <= SEATS, "no more tickets than seats");
    if sold > SEATS {
        dst::assert_unreachable!("a seat is sold twice");
    }
    println!("sold {sold} tickets");
}

/// The details of a double charge, as a map the SDK serializes.
fn charge_details(customer: usize, charges: u32) -> std::collections::BTreeMap<&'static str, u64> {
    std::collections::BTreeMap::from([
        ("customer", customer as u64),
        ("charges", u64::from(charges)),
    ])
}
