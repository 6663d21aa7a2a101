/* mbs_inline.h - MBS_INLINE: a static function the compiler must inline (the hot loops' small
 * products, so that their constant arguments fold), on GCC, clang and MSVC alike. */
#ifndef MBS_INLINE_H
#define MBS_INLINE_H
#if defined(__GNUC__) || defined(__clang__)
#define MBS_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define MBS_INLINE static __forceinline
#else
#define MBS_INLINE static inline
#endif
/* MBS_X86_64_AVX: the hot passes get an AVX copy, chosen at run time (instance.h: avx), built with
 * clang's or GCC's target attribute on x86-64 */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(_M_X64))
#define MBS_X86_64_AVX 1
#define MBS_TARGET_AVX __attribute__((target("avx")))
#else
#define MBS_X86_64_AVX 0
#endif
/* void name params: calls name##_body args (an MBS_INLINE function of mbs_sim *s and more) compiled
 * twice, for the target's baseline (SSE2 on x86-64) and, on x86-64, for AVX when s->avx (VEX's
 * three-operand forms save the baseline's register copies): the same operations in the same order,
 * so the same bits (tests/engine/test_aba_structure.py) */
#if MBS_X86_64_AVX
#define MBS_AVX_COPIES(name, params, args)                                                     \
    static void name##_base params { name##_body args; }                                     \
    MBS_TARGET_AVX static void name##_avx params { name##_body args; }                      \
    void name params                                                                         \
    {                                                                                        \
        if (s->avx) name##_avx args;                                                         \
        else name##_base args;                                                               \
    }
#else
#define MBS_AVX_COPIES(name, params, args)                                                     \
    void name params { name##_body args; }
#endif
#endif
