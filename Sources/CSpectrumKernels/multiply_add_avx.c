#include "CSpectrumKernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

static bool has_avx;

__attribute__((constructor)) static void detect_avx(void) {
    __builtin_cpu_init();  // constructors run in no set order: make sure the CPU model is read
    has_avx = __builtin_cpu_supports("avx");  // checks the OS saves the AVX registers too
}

bool cspectrum_has_avx(void) { return has_avx; }

// No FMA: a fused multiply-add rounds once where the Swift kernel rounds twice.
__attribute__((target("avx")))
void cspectrum_multiply_add_avx(float *acc_re, float *acc_im, const float *x_re, const float *x_im,
                                const float *h_re, const float *h_im, ptrdiff_t bin_count) {
    for (ptrdiff_t k = 0; k < bin_count; k += 8) {
        __m256 xr = _mm256_load_ps(x_re + k), xi = _mm256_load_ps(x_im + k);
        __m256 hr = _mm256_load_ps(h_re + k), hi = _mm256_load_ps(h_im + k);
        __m256 re = _mm256_sub_ps(_mm256_add_ps(_mm256_load_ps(acc_re + k), _mm256_mul_ps(xr, hr)), _mm256_mul_ps(xi, hi));
        __m256 im = _mm256_add_ps(_mm256_add_ps(_mm256_load_ps(acc_im + k), _mm256_mul_ps(xr, hi)), _mm256_mul_ps(xi, hr));
        _mm256_store_ps(acc_re + k, re);
        _mm256_store_ps(acc_im + k, im);
    }
}

#else

bool cspectrum_has_avx(void) { return false; }

void cspectrum_multiply_add_avx(float *acc_re, float *acc_im, const float *x_re, const float *x_im,
                                const float *h_re, const float *h_im, ptrdiff_t bin_count) {
    (void)acc_re; (void)acc_im; (void)x_re; (void)x_im; (void)h_re; (void)h_im; (void)bin_count;
    __builtin_trap();  // never called: cspectrum_has_avx() is false here
}

#endif
