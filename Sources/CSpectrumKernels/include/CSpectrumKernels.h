// The spectrum multiply-add for an instruction set chosen at run time. Swift compiles a whole
// module for one CPU (here the x86-64 baseline, SSE2); C can compile one function for AVX, and
// the engine calls it only on a CPU that has it, as PipeWire's own DSP does (one kernel per
// instruction set behind a CPU check). AVX runs the engine's multiply-adds in half the
// instructions: `pw-convolver bench` (3 s IR at quantum 256, 10 s at 1024, caches warm or
// evicted): 5-10 % less CPU than with the Swift kernel.
#pragma once
#include <stdbool.h>
#include <stddef.h>

/// Whether this CPU and its OS run AVX (false off x86-64). Detected once, when the library loads.
/// Real-time safe.
bool cspectrum_has_avx(void);

/// acc += x · h over spectra in 16-bin groups (16 real parts, then 16 imaginary parts: Swift's
/// `SplitSpectra`), 8 bins a step, with the same operations in the same order as the Swift kernel
/// (`SpectrumKernels.multiplyAddPortable`), so the same bits: re = (acc + xr·hr) − xi·hi,
/// im = (acc + xr·hi) + xi·hr. Call only when `cspectrum_has_avx()`. `bin_count` a multiple of 16,
/// every pointer 64-byte aligned. Real-time safe.
void cspectrum_multiply_add_avx(float *acc, const float *x, const float *h, ptrdiff_t bin_count);

/// Asks the caches for the `byte_count` bytes at `p`, to be read soon, and returns at once (a hint:
/// no fault, no effect on results). For data another core wrote, so that its transfer overlaps
/// other work. Real-time safe.
static inline void cspectrum_prefetch(const void *p, ptrdiff_t byte_count) {
    for (ptrdiff_t offset = 0; offset < byte_count; offset += 64) __builtin_prefetch((const char *)p + offset);
}
