//! `dst-fuzz`: will hold the LibAFL-based explorer and the `cargo-dst-fuzz`
//! command line. Nothing is implemented yet: see the explorer issue.
