//! A software prefetch: the crate's only `unsafe` code.
//!
//! The packet engine's hot path waits on cache misses whose addresses are
//! known well before the data is needed (the slab slots of the calendar's
//! next buckets; see `net::calendar`). A demand load issued early does not
//! help there: it blocks retirement until the line arrives, so it only hides
//! a reorder buffer's worth of work (measured in issue 7's third speed
//! session: 0.975x, noise). A prefetch instruction does not block anything.
//! `core::arch::x86_64::_mm_prefetch` is an `unsafe fn` (like every
//! intrinsic), so the crate denies unsafe code rather than forbidding it,
//! and [`prefetch_read`] is the one function allowed it.
//!
//! On targets other than x86_64 it is a no-op. It never changes a result:
//! a prefetch is a hint, not a read.

/// Hints the CPU to bring the cache line holding `*r` into all cache levels
/// (`_MM_HINT_T0`). No effect on results; a no-op off x86_64.
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch_read<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (r as *const T).cast::<i8>();
        // SAFETY: `_mm_prefetch` needs only SSE, which every x86_64 CPU has
        // (it is in the x86_64 baseline, so no runtime detection is needed).
        // A prefetch is a hint: it never faults, even on an invalid address,
        // and reads nothing architecturally (no value is returned and no
        // memory is modified); here the address comes from a live shared
        // reference, so it is valid anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = r;
    }
}

#[cfg(test)]
mod tests {
    use super::prefetch_read;

    #[test]
    fn prefetch_leaves_the_value_alone() {
        let v: Vec<u64> = (0..1000).collect();
        for x in &v {
            prefetch_read(x);
        }
        prefetch_read(&v);
        assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
    }
}
