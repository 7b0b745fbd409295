//! A hint to the processor to bring a value into its cache before it is read.
//!
//! ```
//! let orders = vec![3_u32, 1, 4, 1, 5];
//! tilepdb_common::prefetch::prefetch(&orders[3]);
//! assert_eq!(orders[3], 1);
//! ```

/// Asks the processor to bring `value` into the first-level cache: a hint, which never
/// faults; nothing on other targets than x86-64.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let address = std::ptr::from_ref(value);
        // SAFETY: a prefetch is a hint that never faults; the address is a reference's.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                address.cast::<i8>(),
            );
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
