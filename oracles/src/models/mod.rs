//! The models that come with the checker: a register, a key-value map, a
//! FIFO queue and a set. Each also says how to read its operations from a
//! log ([`crate::format::Decode`]).

mod kv;
mod queue;
mod register;
mod set;

pub use kv::{Kv, KvInput, KvMap, KvOutput, KvState, Text};
pub use queue::{Queue, QueueInput, QueueOutput};
pub use register::{Register, RegisterInput, RegisterOutput};
pub use set::{Set, SetInput, SetOutput};
