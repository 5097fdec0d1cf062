/* The prefetch hint the AVX-512 decode GEMVs read weights ahead with.
 * Decode reads each weight once per token, so the lines are not worth a
 * place in L2 and L3: non-temporal prefetches keep them out and leave the
 * caches to what is read again (activations, the KV cache, the weights
 * other prefetches bring in). Gemma 3 270M tg512, AMD EPYC Zen 5
 * (bench/decode_ab.sh 8 against T0 builds): +4.6 % with the q8_0 output
 * matrix so, +5.7 % with every decode GEMV so. Measured on Zen 5 only; the prefetch distances
 * (within 8-16 KiB of the reads for q8_0 and q5_0) keep the lines in L1
 * until they are read. */
#ifndef NPL_GEMV_HINT_H
#define NPL_GEMV_HINT_H
#include <immintrin.h>

#ifndef NPL_GEMV_WEIGHT_HINT
#define NPL_GEMV_WEIGHT_HINT _MM_HINT_NTA
#endif

#endif
