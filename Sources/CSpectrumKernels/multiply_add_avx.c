#include "CSpectrumKernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

static bool has_avx;

__attribute__((constructor)) static void detect_avx(void) {
    __builtin_cpu_init();  // constructors run in no set order: make sure the CPU model is read
    has_avx = __builtin_cpu_supports("avx");  // checks the OS saves the AVX registers too
}

bool cspectrum_has_avx(void) { return has_avx; }

// Live, the spectra arrive cold, and the head's are short (2 KB a spectrum at quantum 256): the
// hardware prefetcher hardly ramps up before a stream ends. Loads asked for 2 KB ahead overlap the
// misses; both streams run forward into the next segment (FrequencyDelayLine.slot). docs/facts.md.
#define PREFETCH_FLOATS 512

// No FMA: a fused multiply-add rounds once where the Swift kernel rounds twice.
__attribute__((target("avx")))
void cspectrum_multiply_add_avx(float *acc, const float *x, const float *h, ptrdiff_t bin_count) {
    for (ptrdiff_t group = 0; group < 2 * bin_count; group += 32) {
        for (ptrdiff_t line = 0; line < 32; line += 16) {
            _mm_prefetch((const char *)(x + group + PREFETCH_FLOATS + line), _MM_HINT_T0);
            _mm_prefetch((const char *)(h + group + PREFETCH_FLOATS + line), _MM_HINT_T0);
        }
        for (ptrdiff_t k = group; k < group + 16; k += 8) {  // the real parts at k, the imaginary at k + 16
            __m256 xr = _mm256_load_ps(x + k), xi = _mm256_load_ps(x + k + 16);
            __m256 hr = _mm256_load_ps(h + k), hi = _mm256_load_ps(h + k + 16);
            __m256 re = _mm256_sub_ps(_mm256_add_ps(_mm256_load_ps(acc + k), _mm256_mul_ps(xr, hr)), _mm256_mul_ps(xi, hi));
            __m256 im = _mm256_add_ps(_mm256_add_ps(_mm256_load_ps(acc + k + 16), _mm256_mul_ps(xr, hi)), _mm256_mul_ps(xi, hr));
            _mm256_store_ps(acc + k, re);
            _mm256_store_ps(acc + k + 16, im);
        }
    }
}

#else

bool cspectrum_has_avx(void) { return false; }

void cspectrum_multiply_add_avx(float *acc, const float *x, const float *h, ptrdiff_t bin_count) {
    (void)acc; (void)x; (void)h; (void)bin_count;
    __builtin_trap();  // never called: cspectrum_has_avx() is false here
}

#endif
