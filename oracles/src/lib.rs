//! `dst-oracles`: will hold the oracles that judge runs beyond single
//! assertions: linearizability checking of histories, differential testing,
//! invariants. Nothing is implemented yet.
