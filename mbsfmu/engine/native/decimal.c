/* decimal.c - doubles as the shortest decimal text that reads back to the same double, in the
 * layout of Python's repr (float_repr_style "short": fixed notation for decimal exponents -4..15,
 * else d.ddde+XX; "1.0", "0.0001", "1e-05", "1e+16", "inf", "nan"), for the trajectory and
 * records files (mbsfmu/trajectory.py writes these bytes; Python's repr where the core is absent).
 *
 * Digits by Grisu2 (F. Loitsch, "Printing floating-point numbers quickly and accurately with
 * integers", PLDI 2010, Sec. 5): v and its rounding boundaries m-, m+ scaled by a cached power of
 * ten c_k ~ 10^-k into [2^alpha, 2^gamma] (alpha = -60, gamma = -32) with 64-bit arithmetic, the
 * digits of the scaled m+ generated until the rest falls inside the (conservatively narrowed)
 * boundary interval, the last digit moved towards v (round_weed). Grisu2 always yields digits
 * inside the rounding interval of v, the shortest in ~99.9 % of cases. Every result is read back
 * with strtod (correctly rounded in glibc and the Universal C Runtime); one that differs (none
 * expected) is replaced by the 17 significant digits of "%.16e", which always read back exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "instance.h"

typedef struct { uint64_t f; int e; } diy_fp;                /* f 2^e */

/* c_k = 10^k rounded to 64 bits: f 2^e, 2^63 <= f < 2^64, k = -348..340 in steps of 8
 * (computed exactly with rationals; tests/engine/test_decimal.py recomputes them) */
static const struct { uint64_t f; int e, k; } POW10[] = {
    {0xFA8FD5A0081C0288ULL, -1220, -348},
    {0xBAAEE17FA23EBF76ULL, -1193, -340},
    {0x8B16FB203055AC76ULL, -1166, -332},
    {0xCF42894A5DCE35EAULL, -1140, -324},
    {0x9A6BB0AA55653B2DULL, -1113, -316},
    {0xE61ACF033D1A45DFULL, -1087, -308},
    {0xAB70FE17C79AC6CAULL, -1060, -300},
    {0xFF77B1FCBEBCDC4FULL, -1034, -292},
    {0xBE5691EF416BD60CULL, -1007, -284},
    {0x8DD01FAD907FFC3CULL, -980, -276},
    {0xD3515C2831559A83ULL, -954, -268},
    {0x9D71AC8FADA6C9B5ULL, -927, -260},
    {0xEA9C227723EE8BCBULL, -901, -252},
    {0xAECC49914078536DULL, -874, -244},
    {0x823C12795DB6CE57ULL, -847, -236},
    {0xC21094364DFB5637ULL, -821, -228},
    {0x9096EA6F3848984FULL, -794, -220},
    {0xD77485CB25823AC7ULL, -768, -212},
    {0xA086CFCD97BF97F4ULL, -741, -204},
    {0xEF340A98172AACE5ULL, -715, -196},
    {0xB23867FB2A35B28EULL, -688, -188},
    {0x84C8D4DFD2C63F3BULL, -661, -180},
    {0xC5DD44271AD3CDBAULL, -635, -172},
    {0x936B9FCEBB25C996ULL, -608, -164},
    {0xDBAC6C247D62A584ULL, -582, -156},
    {0xA3AB66580D5FDAF6ULL, -555, -148},
    {0xF3E2F893DEC3F126ULL, -529, -140},
    {0xB5B5ADA8AAFF80B8ULL, -502, -132},
    {0x87625F056C7C4A8BULL, -475, -124},
    {0xC9BCFF6034C13053ULL, -449, -116},
    {0x964E858C91BA2655ULL, -422, -108},
    {0xDFF9772470297EBDULL, -396, -100},
    {0xA6DFBD9FB8E5B88FULL, -369, -92},
    {0xF8A95FCF88747D94ULL, -343, -84},
    {0xB94470938FA89BCFULL, -316, -76},
    {0x8A08F0F8BF0F156BULL, -289, -68},
    {0xCDB02555653131B6ULL, -263, -60},
    {0x993FE2C6D07B7FACULL, -236, -52},
    {0xE45C10C42A2B3B06ULL, -210, -44},
    {0xAA242499697392D3ULL, -183, -36},
    {0xFD87B5F28300CA0EULL, -157, -28},
    {0xBCE5086492111AEBULL, -130, -20},
    {0x8CBCCC096F5088CCULL, -103, -12},
    {0xD1B71758E219652CULL, -77, -4},
    {0x9C40000000000000ULL, -50, 4},
    {0xE8D4A51000000000ULL, -24, 12},
    {0xAD78EBC5AC620000ULL, 3, 20},
    {0x813F3978F8940984ULL, 30, 28},
    {0xC097CE7BC90715B3ULL, 56, 36},
    {0x8F7E32CE7BEA5C70ULL, 83, 44},
    {0xD5D238A4ABE98068ULL, 109, 52},
    {0x9F4F2726179A2245ULL, 136, 60},
    {0xED63A231D4C4FB27ULL, 162, 68},
    {0xB0DE65388CC8ADA8ULL, 189, 76},
    {0x83C7088E1AAB65DBULL, 216, 84},
    {0xC45D1DF942711D9AULL, 242, 92},
    {0x924D692CA61BE758ULL, 269, 100},
    {0xDA01EE641A708DEAULL, 295, 108},
    {0xA26DA3999AEF774AULL, 322, 116},
    {0xF209787BB47D6B85ULL, 348, 124},
    {0xB454E4A179DD1877ULL, 375, 132},
    {0x865B86925B9BC5C2ULL, 402, 140},
    {0xC83553C5C8965D3DULL, 428, 148},
    {0x952AB45CFA97A0B3ULL, 455, 156},
    {0xDE469FBD99A05FE3ULL, 481, 164},
    {0xA59BC234DB398C25ULL, 508, 172},
    {0xF6C69A72A3989F5CULL, 534, 180},
    {0xB7DCBF5354E9BECEULL, 561, 188},
    {0x88FCF317F22241E2ULL, 588, 196},
    {0xCC20CE9BD35C78A5ULL, 614, 204},
    {0x98165AF37B2153DFULL, 641, 212},
    {0xE2A0B5DC971F303AULL, 667, 220},
    {0xA8D9D1535CE3B396ULL, 694, 228},
    {0xFB9B7CD9A4A7443CULL, 720, 236},
    {0xBB764C4CA7A44410ULL, 747, 244},
    {0x8BAB8EEFB6409C1AULL, 774, 252},
    {0xD01FEF10A657842CULL, 800, 260},
    {0x9B10A4E5E9913129ULL, 827, 268},
    {0xE7109BFBA19C0C9DULL, 853, 276},
    {0xAC2820D9623BF429ULL, 880, 284},
    {0x80444B5E7AA7CF85ULL, 907, 292},
    {0xBF21E44003ACDD2DULL, 933, 300},
    {0x8E679C2F5E44FF8FULL, 960, 308},
    {0xD433179D9C8CB841ULL, 986, 316},
    {0x9E19DB92B4E31BA9ULL, 1013, 324},
    {0xEB96BF6EBADF77D9ULL, 1039, 332},
    {0xAF87023B9BF0EE6BULL, 1066, 340},
};
#define N_POW10 ((int)(sizeof POW10 / sizeof POW10[0]))

static diy_fp mul(diy_fp x, diy_fp y)                          /* the upper 64 bits of the product, rounded */
{
    uint64_t a = x.f >> 32, b = x.f & 0xFFFFFFFFu, c = y.f >> 32, d = y.f & 0xFFFFFFFFu;
    uint64_t ac = a * c, bc = b * c, ad = a * d, bd = b * d;
    uint64_t tmp = (bd >> 32) + (ad & 0xFFFFFFFFu) + (bc & 0xFFFFFFFFu) + (1u << 31);
    diy_fp r;
    r.f = ac + (ad >> 32) + (bc >> 32) + (tmp >> 32);
    r.e = x.e + y.e + 64;
    return r;
}

static diy_fp normalize(diy_fp x)
{
    while (!(x.f & 0x8000000000000000ULL)) { x.f <<= 1; x.e--; }
    return x;
}

/* move the last digit towards w (Grisu2's round_weed): dist = Wp - W, delta = Wp - Wm,
 * rest = Wp - current digits, ten_kappa = the last digit's unit (all scaled) */
static void round_weed(char *buf, int len, uint64_t dist, uint64_t delta, uint64_t rest, uint64_t ten_kappa)
{
    while (rest < dist && delta - rest >= ten_kappa &&
           (rest + ten_kappa < dist || dist - rest > rest + ten_kappa - dist)) {
        buf[len - 1]--;
        rest += ten_kappa;
    }
}

/* digits of v > 0 (finite) into buf, *K: v ~ digits 10^K; returns the number of digits */
static int grisu2(double v, char *buf, int *K)
{
    uint64_t bits, one_f, p1, p2, delta, dist;
    diy_fp w, mp, mm, c, W, Wp, Wm;
    int e, idx, k, kappa, len = 0;
    static const uint32_t POW10_32[] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
                                        1000000000u};
    memcpy(&bits, &v, sizeof bits);
    e = (int)((bits >> 52) & 0x7FF);
    w.f = bits & 0xFFFFFFFFFFFFFULL;
    if (e) { w.f += 0x10000000000000ULL; w.e = e - 1075; } else { w.e = -1074; }
    mp.f = (w.f << 1) + 1; mp.e = w.e - 1;                     /* boundaries (Sec. 2): m+ = (2f + 1) 2^(e-1) */
    mp = normalize(mp);
    if (w.f == 0x10000000000000ULL && e > 1) { mm.f = (w.f << 2) - 1; mm.e = w.e - 2; }   /* f a power of 2 */
    else { mm.f = (w.f << 1) - 1; mm.e = w.e - 1; }
    mm.f <<= mm.e - mp.e; mm.e = mp.e;
    w = normalize(w);
    /* c = 10^-k with alpha <= e(c) + e(m+) + 64 <= gamma (alpha = -60, gamma = -32) */
    idx = (int)ceil((-60 - (mp.e + 64)) * 0.30102999566398114 / 8.0) + 43;   /* a guess, then adjusted */
    if (idx < 0) idx = 0;
    if (idx >= N_POW10) idx = N_POW10 - 1;
    while (idx > 0 && POW10[idx].e + mp.e + 64 > -32) idx--;
    while (idx < N_POW10 - 1 && POW10[idx].e + mp.e + 64 < -60) idx++;
    c.f = POW10[idx].f; c.e = POW10[idx].e; k = -POW10[idx].k;
    W = mul(w, c); Wp = mul(mp, c); Wm = mul(mm, c);
    Wp.f--; Wm.f++;                                           /* the narrowed interval (Grisu2) */
    delta = Wp.f - Wm.f;
    dist = Wp.f - W.f;
    one_f = 1ULL << -Wp.e;
    p1 = Wp.f >> -Wp.e;                                       /* integral part (< 2^32) */
    p2 = Wp.f & (one_f - 1);                                  /* fraction */
    kappa = 10;
    while (kappa > 0 && p1 < POW10_32[kappa - 1]) kappa--;    /* digits of p1 */
    while (kappa > 0) {
        uint64_t d = p1 / POW10_32[kappa - 1], rest;
        p1 %= POW10_32[kappa - 1];
        if (d || len) buf[len++] = (char)('0' + d);
        kappa--;
        rest = (p1 << -Wp.e) + p2;
        if (rest <= delta) {
            *K = kappa + k;
            round_weed(buf, len, dist, delta, rest, (uint64_t)POW10_32[kappa] << -Wp.e);
            return len;
        }
    }
    for (;;) {                                                /* fraction digits */
        uint64_t d;
        p2 *= 10; delta *= 10; dist *= 10;
        d = p2 >> -Wp.e;
        if (d || len) buf[len++] = (char)('0' + d);
        p2 &= one_f - 1;
        kappa--;
        if (p2 <= delta) {
            *K = kappa + k;
            round_weed(buf, len, dist, delta, p2, one_f);
            return len;
        }
    }
}

/* Python's repr layout of the digits d (n of them) with value 0.d 10^decpt, sign s */
static int layout(char *out, int neg, const char *d, int n, int decpt)
{
    int len = 0, i, x = decpt - 1;
    if (neg) out[len++] = '-';
    if (x >= -4 && x < 16) {                                  /* fixed */
        if (decpt <= 0) {
            out[len++] = '0'; out[len++] = '.';
            for (i = 0; i < -decpt; i++) out[len++] = '0';
            for (i = 0; i < n; i++) out[len++] = d[i];
        } else if (decpt >= n) {
            for (i = 0; i < n; i++) out[len++] = d[i];
            for (i = n; i < decpt; i++) out[len++] = '0';
            out[len++] = '.'; out[len++] = '0';
        } else {
            for (i = 0; i < decpt; i++) out[len++] = d[i];
            out[len++] = '.';
            for (i = decpt; i < n; i++) out[len++] = d[i];
        }
        return len;
    }
    out[len++] = d[0];                                        /* d.ddde+XX */
    if (n > 1) {
        out[len++] = '.';
        for (i = 1; i < n; i++) out[len++] = d[i];
    }
    out[len++] = 'e';
    out[len++] = x < 0 ? '-' : '+';
    if (x < 0) x = -x;
    if (x >= 100) { out[len++] = (char)('0' + x / 100); x %= 100; out[len++] = (char)('0' + x / 10); }
    else out[len++] = (char)('0' + x / 10);
    out[len++] = (char)('0' + x % 10);
    return len;
}

int mbs_shortest(double v, char *out)
{
    char d[32], *end;
    int n, K, len;
    if (isnan(v)) { memcpy(out, "nan", 3); return 3; }
    if (isinf(v)) {
        if (v < 0) { memcpy(out, "-inf", 4); return 4; }
        memcpy(out, "inf", 3);
        return 3;
    }
    if (v == 0.0) {
        if (signbit(v)) { memcpy(out, "-0.0", 4); return 4; }
        memcpy(out, "0.0", 3);
        return 3;
    }
    n = grisu2(fabs(v), d, &K);
    while (n > 1 && d[n - 1] == '0') { n--; K++; }            /* trailing zeros belong to the exponent */
    len = layout(out, v < 0, d, n, n + K);
    out[len] = '\0';
    if (strtod(out, &end) != v || end != out + len) {          /* never expected: 17 digits instead */
        char e17[40];
        int i, exp10;
        snprintf(e17, sizeof e17, "%.16e", fabs(v));            /* d.dddddddddddddddde[+-]XX */
        exp10 = atoi(strchr(e17, 'e') + 1);
        d[0] = e17[0];
        for (i = 0; i < 16; i++) d[1 + i] = e17[2 + i];
        n = 17;
        while (n > 1 && d[n - 1] == '0') n--;
        len = layout(out, v < 0, d, n, exp10 + 1);
    }
    return len;
}

size_t mbs_format_values(const double *v, size_t n, char sep, char *out)
{
    size_t i, len = 0;
    for (i = 0; i < n; i++) {
        if (i) out[len++] = sep;
        len += (size_t)mbs_shortest(v[i], out + len);
    }
    return len;
}
