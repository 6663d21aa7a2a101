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
#endif
