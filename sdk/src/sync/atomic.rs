//! Atomics whose accesses are scheduling points, as `std::sync::atomic`.
//!
//! Under control every access is a scheduling point, and each read counts
//! which write it observed (reads-from interleaving coverage). Accesses run
//! as sequentially consistent whatever the `Ordering`: weak-memory
//! behaviours are not explored.

pub use std::sync::atomic::{Ordering, compiler_fence, fence};

use crate::sched::{self, Op};

macro_rules! atomic_common {
    ($name:ident, $std:ident, $t:ty) => {
        #[doc = concat!("As `std::sync::atomic::", stringify!($std), "`.")]
        #[derive(Debug, Default)]
        #[repr(transparent)]
        pub struct $name {
            inner: std::sync::atomic::$std,
        }

        impl $name {
            pub const fn new(value: $t) -> $name {
                $name {
                    inner: std::sync::atomic::$std::new(value),
                }
            }

            #[inline]
            #[track_caller]
            fn at(&self, op: Op) {
                sched::access(self as *const $name as usize, op, sched::here());
            }

            #[track_caller]
            pub fn load(&self, order: Ordering) -> $t {
                self.at(Op::Load);
                self.inner.load(order)
            }

            #[track_caller]
            pub fn store(&self, value: $t, order: Ordering) {
                self.at(Op::Store);
                self.inner.store(value, order)
            }

            #[track_caller]
            pub fn swap(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.swap(value, order)
            }

            #[track_caller]
            pub fn compare_exchange(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                self.at(Op::Rmw);
                self.inner.compare_exchange(current, new, success, failure)
            }

            /// As `compare_exchange` (no spurious failures under control).
            #[track_caller]
            pub fn compare_exchange_weak(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                self.at(Op::Rmw);
                self.inner.compare_exchange(current, new, success, failure)
            }

            #[track_caller]
            pub fn fetch_update<F: FnMut($t) -> Option<$t>>(
                &self,
                set_order: Ordering,
                fetch_order: Ordering,
                f: F,
            ) -> Result<$t, $t> {
                self.at(Op::Rmw);
                self.inner.fetch_update(set_order, fetch_order, f)
            }

            #[track_caller]
            pub fn fetch_and(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_and(value, order)
            }

            #[track_caller]
            pub fn fetch_nand(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_nand(value, order)
            }

            #[track_caller]
            pub fn fetch_or(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_or(value, order)
            }

            #[track_caller]
            pub fn fetch_xor(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_xor(value, order)
            }

            pub fn get_mut(&mut self) -> &mut $t {
                self.inner.get_mut()
            }

            pub fn into_inner(self) -> $t {
                self.inner.into_inner()
            }
        }

        impl From<$t> for $name {
            fn from(value: $t) -> Self {
                $name::new(value)
            }
        }
    };
}

macro_rules! atomic_int {
    ($($name:ident $t:ty),*) => { $(
        atomic_common!($name, $name, $t);

        impl $name {
            #[track_caller]
            pub fn fetch_add(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_add(value, order)
            }

            #[track_caller]
            pub fn fetch_sub(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_sub(value, order)
            }

            #[track_caller]
            pub fn fetch_max(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_max(value, order)
            }

            #[track_caller]
            pub fn fetch_min(&self, value: $t, order: Ordering) -> $t {
                self.at(Op::Rmw);
                self.inner.fetch_min(value, order)
            }
        }
    )* };
}

atomic_common!(AtomicBool, AtomicBool, bool);
atomic_int!(
    AtomicU8 u8, AtomicU16 u16, AtomicU32 u32, AtomicU64 u64, AtomicUsize usize,
    AtomicI8 i8, AtomicI16 i16, AtomicI32 i32, AtomicI64 i64, AtomicIsize isize
);
