/* Run-time ISA detection and the per-ISA kernel tables. Tables are built
 * once (pthread_once) and read-only afterwards: each ISA starts from a copy
 * of the one below it and overrides what it implements. */
#include <pthread.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/vec_dot_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define NPL_X86 1
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#define NPL_ARM 1
#endif

typedef struct {
    npl_isa best;
    int avx512_bf16;
    int gfni;
} cpu_caps;

#ifdef NPL_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* The kernel hands out AMX tile state only on request (Linux >= 5.16). */
static int amx_permitted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return 0;
#endif
}

static cpu_caps detect(void) {
    cpu_caps c = {NPL_ISA_GENERIC, 0, 0};
    unsigned a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return c;
    const int osxsave = (cx >> 27) & 1, avx = (cx >> 28) & 1, fma = (cx >> 12) & 1, f16c = (cx >> 29) & 1;
    if (!osxsave || !avx) return c;
    const uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return c; /* OS saves XMM and YMM */
    if (__get_cpuid_max(0, NULL) < 7) return c;
    __cpuid_count(7, 0, a, b, cx, d);
    const int avx2 = (b >> 5) & 1;
    const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    const int vnni = (cx >> 11) & 1;
    const int amx_bf16 = (d >> 22) & 1, amx_tile = (d >> 24) & 1, amx_int8 = (d >> 25) & 1;
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    (void)b1, (void)c1, (void)d1;
    if (!(avx2 && fma && f16c)) return c;
    c.best = NPL_ISA_AVX2;
    if ((xcr0 & 0xE0) != 0xE0) return c; /* opmask, ZMM upper halves, ZMM16-31 */
    if (!(f && dq && bw && vl && vnni)) return c;
    c.best = NPL_ISA_AVX512;
    c.avx512_bf16 = (a1 >> 5) & 1;
    c.gfni = (cx >> 8) & 1; /* only the AVX-512 GEMV kernels use it */
    if ((xcr0 & 0x60000) != 0x60000) return c; /* XTILECFG, XTILEDATA */
    if (amx_tile && amx_int8 && amx_bf16 && amx_permitted()) c.best = NPL_ISA_AMX;
    return c;
}
#elif defined(NPL_ARM)
/* Linux's HWCAP bits (asm/hwcap.h), spelled here so that an older libc's
 * headers do not decide what is detected. */
enum { ARM_HWCAP_ASIMD = 1 << 1, ARM_HWCAP_ASIMDDP = 1 << 20, ARM_HWCAP2_I8MM = 1 << 13 };
static cpu_caps detect(void) {
    cpu_caps c = {NPL_ISA_GENERIC, 0, 0};
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (!(hw & ARM_HWCAP_ASIMD)) return c;
    c.best = NPL_ISA_NEON;
    if (!(hw & ARM_HWCAP_ASIMDDP)) return c;
    c.best = NPL_ISA_DOTPROD;
    if (hw2 & ARM_HWCAP2_I8MM) c.best = NPL_ISA_I8MM;
    return c;
}
#else
static cpu_caps detect(void) { return (cpu_caps){NPL_ISA_GENERIC, 0, 0}; }
#endif

static cpu_caps g_caps;
static npl_kernels g_tables[NPL_ISA_TOP + 1];
static npl_vec_dot4_fn g_dot4[NPL_ISA_TOP + 1][NPL_TYPE_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    g_caps = detect();
    npl_kernels k;
    npl_vec_dot4_fn d4[NPL_TYPE_COUNT];
    memset(&k, 0, sizeof k);
    memset(d4, 0, sizeof d4);
    npl_kernels_fill_generic(&k);
    for (int isa = NPL_ISA_GENERIC; isa <= NPL_ISA_TOP; isa++) {
#ifdef NPL_X86
        if (isa == NPL_ISA_AVX2 && g_caps.best >= NPL_ISA_AVX2) npl_kernels_fill_avx2(&k);
        if (isa == NPL_ISA_AVX512 && g_caps.best >= NPL_ISA_AVX512) {
            npl_vec_dot_fn avx2[NPL_TYPE_COUNT];
            memcpy(avx2, k.vec_dot, sizeof avx2);
            npl_kernels_fill_avx512(&k, g_caps.avx512_bf16);
            npl_dot4_fill_avx512(d4);
            /* the types the AVX-512 family takes from AVX2 (gemm.h); AMX's
             * table (the next) keeps AVX-512's, the order of its GEMV */
            npl_kernels t = k;
            t.isa = NPL_ISA_AVX512;
            for (int ty = 0; ty < NPL_TYPE_COUNT; ty++)
                if (npl_avx512_takes_avx2((npl_type)ty)) t.vec_dot[ty] = avx2[ty];
            g_tables[isa] = t;
            memcpy(g_dot4[isa], d4, sizeof d4);
            for (int ty = 0; ty < NPL_TYPE_COUNT; ty++)
                if (npl_avx512_takes_avx2((npl_type)ty)) g_dot4[isa][ty] = NULL;
            continue;
        }
#endif
#ifdef NPL_ARM
        if (isa == NPL_ISA_NEON && g_caps.best >= NPL_ISA_NEON) npl_kernels_fill_neon(&k, d4);
        if (isa == NPL_ISA_DOTPROD && g_caps.best >= NPL_ISA_DOTPROD) npl_kernels_fill_dotprod(&k, d4);
        if (isa == NPL_ISA_I8MM && g_caps.best >= NPL_ISA_I8MM) npl_kernels_fill_i8mm(&k);
#endif
        /* AMX has no vec_dot of its own: its table is the AVX-512 one */
        k.isa = (npl_isa)isa;
        g_tables[isa] = k;
        memcpy(g_dot4[isa], d4, sizeof d4);
    }
}

npl_isa npl_cpu_best_isa(void) {
    pthread_once(&g_once, build_tables);
    return g_caps.best;
}

int npl_cpu_has_gfni(void) {
    pthread_once(&g_once, build_tables);
    return g_caps.gfni;
}

const char *npl_isa_name(npl_isa isa) {
    switch ((int)isa) {
#ifdef NPL_ARM
    case NPL_ISA_GENERIC: return "generic";
    case NPL_ISA_NEON: return "neon";
    case NPL_ISA_DOTPROD: return "dotprod";
    case NPL_ISA_I8MM: return "i8mm";
#else
    case NPL_ISA_GENERIC: return "generic";
    case NPL_ISA_AVX2: return "avx2";
    case NPL_ISA_AVX512: return "avx512";
    case NPL_ISA_AMX: return "amx";
#endif
    }
    return "?";
}

static int clamp_isa(npl_isa want) {
    pthread_once(&g_once, build_tables);
    int isa = (int)want;
    if (isa < NPL_ISA_GENERIC) isa = NPL_ISA_GENERIC;
    if (isa > (int)g_caps.best) isa = (int)g_caps.best;
    return isa;
}

const npl_kernels *npl_kernels_get(npl_isa want) { return &g_tables[clamp_isa(want)]; }

npl_vec_dot4_fn npl_vec_dot4_get(npl_isa want, npl_type t) {
    const int isa = clamp_isa(want);
    return (int)t >= 0 && (int)t < NPL_TYPE_COUNT ? g_dot4[isa][t] : NULL;
}
