//! Lifecycle events: milestones the target reports to the explorer.

use crate::runtime::{__details, event};

/// Declares that setup is done and the test proper begins (a later fork
/// server forks here under `DST_DEFER=1`).
pub fn setup_complete<T: serde::Serialize + ?Sized>(details: &T) {
    event("setup_complete", __details(details));
}

/// Records a named event with details in the run's event log.
pub fn send_event<T: serde::Serialize + ?Sized>(name: &str, details: &T) {
    event(name, __details(details));
}
