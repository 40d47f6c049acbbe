//! What this CPU runs, for the builds of the hot loops compiled with
//! target features (`matmul`'s band loops, `exp`'s chunk loop): each
//! detected once, then cached by the standard library.

/// AVX.
pub(crate) fn avx() -> bool {
    std::arch::is_x86_feature_detected!("avx")
}

/// AVX and FMA.
pub(crate) fn fma() -> bool {
    avx() && std::arch::is_x86_feature_detected!("fma")
}

/// AVX-512 Foundation (which includes FMA).
pub(crate) fn avx512f() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// AVX-512 with the BF16 dot products (`vdpbf16ps`).
pub(crate) fn avx512bf16() -> bool {
    avx512f() && std::arch::is_x86_feature_detected!("avx512bf16")
}
