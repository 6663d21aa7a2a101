/* trig.h - sin and cos of one angle from one argument reduction, the same bits on every
 * platform. The C libraries' sin and cos differ in their last bit between glibc's FMA and non-FMA
 * paths and the Windows CRT, so an FMU's linux64 and win64 binaries (or two Linux machines) drifted
 * apart on a robot's joint angles; this file's arithmetic is IEEE double + - * only (no FMA: the
 * core is built with -ffp-contract=off), so it rounds alike everywhere.
 *
 * Method (Cody & Waite, Software Manual for the Elementary Functions, 1980, ch. 8; Muller,
 * Elementary Functions, 3rd ed., Sec. 11.2): n = nearest integer to x 2/pi, y = x - n pi/2 with
 * pi/2 = P1 + P2 + P3, P1 and P2 of 33 significant bits so n P1 and n P2 are exact for |n| < 2^20,
 * y carried as yh + yl (TwoSum); then sin and cos of y on [-pi/4, pi/4] by the minimax
 * polynomials of Sun's fdlibm (k_sin.c, k_cos.c: figures, |error| < 2^-58 on that interval),
 * with the first-order correction for yl, and the quadrant n mod 4 choosing +-sin / +-cos.
 * Measured against mpmath at 50 digits (tests/engine/test_trig.py): within 1 ulp for
 * |x| <= TRIG_X_MAX. Beyond it (|n| >= 2^19) and for non-finite x, the C library's sin and cos. */
#ifndef MBS_TRIG_H
#define MBS_TRIG_H
#include <math.h>
#include "mbs_inline.h"

#define TRIG_X_MAX 823549.0                                   /* < 2^19 pi/2 */

MBS_INLINE void mbs_sincos(double x, double *s_out, double *c_out)
{
    static const double TWO_OVER_PI = 6.36619772367581382433e-01;
    static const double P1 = 1.57079632673412561417e+00;      /* pi/2's first 33 bits */
    static const double P2 = 6.07710050630396597660e-11;      /* its next 33 bits */
    static const double P3 = 2.02226624879595063154e-21;      /* pi/2 - P1 - P2 */
    static const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                        S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                        S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    static const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                        C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                        C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    double fn, dn, r, w, yh, yl, t, z, z2, v, ps, pc, hz, sn, cs;
    int n;
    if (!(fabs(x) <= TRIG_X_MAX)) {                           /* huge or non-finite */
        *s_out = sin(x);
        *c_out = cos(x);
        return;
    }
    if (fabs(x) < 7.450580596923828125e-09) {                 /* |x| < 2^-27: x^2 / 2 < ulp(1) / 4, */
        *s_out = x;                                           /* so these are sin and cos rounded */
        *c_out = 1.0;                                         /* (and sin(-0) = -0) */
        return;
    }
    fn = x * TWO_OVER_PI;
    n = (int)(fn + copysign(0.5, fn));                        /* nearest (ties away from zero) */
    dn = (double)n;
    r = x - dn * P1;                                          /* exact: n P1 exact, Sterbenz */
    w = dn * P2;                                              /* exact */
    yh = r - w;                                               /* TwoSum: yh + yl = r - w exactly */
    t = yh - r;
    yl = (r - (yh - t)) - (w + t);
    yl -= dn * P3;
    t = yh + yl;                                              /* renormalised: |yl| <= ulp(yh) / 2 */
    yl -= t - yh;
    yh = t;
    z = yh * yh;
    v = z * yh;                                               /* sin(yh + yl) ~ sin yh + yl (1 - yh^2 / 2) */
    z2 = z * z;                                               /* Estrin's scheme: shorter chains */
    ps = (S2 + z * S3) + z2 * ((S4 + z * S5) + z2 * S6);
    sn = yh - ((z * (0.5 * yl - v * ps) - yl) - v * S1);
    pc = z * ((C1 + z * C2) + z2 * ((C3 + z * C4) + z2 * (C5 + z * C6)));
    hz = 0.5 * z;                                             /* cos(yh + yl) ~ cos yh - yh yl */
    w = 1.0 - hz;
    cs = w + (((1.0 - w) - hz) + (z * pc - yh * yl));
    t = (n & 1) ? cs : sn;                                    /* quadrant n mod 4, without jumps */
    w = (n & 1) ? sn : cs;
    *s_out = (n & 2) ? -t : t;
    *c_out = ((n + 1) & 2) ? -w : w;
}

/* sin and cos of a0 + d from s0 = sin a0 and c0 = cos a0 (mbs_sincos's) for |d| <= 1/16
 * (MBS_SINCOS_SUM_D): the angle-sum formulas
 *     sin = s0 + (s0 (cos d - 1) + c0 sin d),  cos = c0 + (c0 (cos d - 1) - s0 sin d),
 * sin d and cos d - 1 by their Taylor series to d^9 and d^8 (Abramowitz & Stegun 4.3.65-66; the first
 * terms left out, d^11 / 11! and d^10 / 10!, are below 1e-19 at |d| = 1/16). Measured against mpmath
 * (tests/engine/test_trig.py): within 1 ulp of 1 (2^-52 absolute; 0.54 measured) of the exact sin and
 * cos of a0 + d. RK4's later stages take their joint angles' sin and cos so (kinematics.c), at a third
 * of mbs_sincos's work. */
#define MBS_SINCOS_SUM_D 0.0625

MBS_INLINE void mbs_sincos_sum(double s0, double c0, double d, double *s_out, double *c_out)
{
    double d2 = d * d;
    double sd = d + d * d2 * (-1.0 / 6.0 + d2 * (1.0 / 120.0 + d2 * (-1.0 / 5040.0 + d2 * (1.0 / 362880.0))));
    double cm = d2 * (-0.5 + d2 * (1.0 / 24.0 + d2 * (-1.0 / 720.0 + d2 * (1.0 / 40320.0))));
    *s_out = s0 + (s0 * cm + c0 * sd);
    *c_out = c0 + (c0 * cm - s0 * sd);
}

#endif
