//! Lifecycle events: milestones the target reports to the explorer.

use crate::runtime::{__details, event};

/// Declares that setup is done and the test proper begins. Under a process
/// executor with `DST_DEFER=1`, the fork server starts here (see
/// [`crate::forkserver`]): the setup before this call runs once.
pub fn setup_complete<T: serde::Serialize + ?Sized>(details: &T) {
    crate::forkserver::on_setup_complete();
    if crate::runtime::events_wanted() {
        event("setup_complete", __details(details));
    }
}

/// Records a named event with details in the run's event log.
pub fn send_event<T: serde::Serialize + ?Sized>(name: &str, details: &T) {
    if crate::runtime::events_wanted() {
        event(name, __details(details));
    }
}
