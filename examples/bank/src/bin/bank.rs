//! Fuzz target: a day of bank transfers with crash and retry faults.
dst_fuzz::target!(|| {
    dst_example_bank::simulate(12);
});
