"""Spatial algebra for the compiled kernels: the operations of ``mbsfmu.spatial`` written out on
preallocated arrays, with Plucker transforms applied as a rotation plus a translation.

A transform X from frame A to frame B is stored as (E, r): the rotation E (A -> B coordinates)
and the origin r of B in A coordinates, X = [[E, 0], [-E rx, E]] (RBDA Eq. 2.24; rx = skew(r)).
Applying it costs two 3x3 products instead of a dense 6x6 product (RBDA Sec. 2.8 / Table 2.5):

    X v   = [E w; E (v_o - r x w)]                 motion vector v = [w; v_o]
    X^T f = [E^T n + r x (E^T f_o); E^T f_o]       force vector f = [n; f_o]
    X^T I X = Y^T (Q^T I Q) Y,  Q = diag(E, E), Y = [[1, 0], [-rx, 1]]   spatial inertia

No function here allocates; outputs are written (``*_to``) or added (``*_add``) in place and must
not alias the inputs.
"""
from __future__ import annotations

import math

from ._jit import inline_kernel, kernel


@inline_kernel
def X_motion_to(E, r, v, out):
    """out = X v: a motion vector [w; v_o] (6,) carried by X = (E, r)."""
    t0 = v[3] - (r[1] * v[2] - r[2] * v[1])       # v_o - r x w
    t1 = v[4] - (r[2] * v[0] - r[0] * v[2])
    t2 = v[5] - (r[0] * v[1] - r[1] * v[0])
    for k in range(3):
        out[k] = E[k, 0] * v[0] + E[k, 1] * v[1] + E[k, 2] * v[2]
        out[3 + k] = E[k, 0] * t0 + E[k, 1] * t1 + E[k, 2] * t2


@inline_kernel
def XT_force_add(E, r, f, out):
    """out += X^T f: a force vector [n; f_o] (6,) carried back across X = (E, r)."""
    g0 = E[0, 0] * f[3] + E[1, 0] * f[4] + E[2, 0] * f[5]     # E^T f_o
    g1 = E[0, 1] * f[3] + E[1, 1] * f[4] + E[2, 1] * f[5]
    g2 = E[0, 2] * f[3] + E[1, 2] * f[4] + E[2, 2] * f[5]
    out[0] += E[0, 0] * f[0] + E[1, 0] * f[1] + E[2, 0] * f[2] + (r[1] * g2 - r[2] * g1)
    out[1] += E[0, 1] * f[0] + E[1, 1] * f[1] + E[2, 1] * f[2] + (r[2] * g0 - r[0] * g2)
    out[2] += E[0, 2] * f[0] + E[1, 2] * f[1] + E[2, 2] * f[2] + (r[0] * g1 - r[1] * g0)
    out[3] += g0
    out[4] += g1
    out[5] += g2


@inline_kernel
def XT_force_cols(E, r, F, n):
    """F[:, :n] = X^T F[:, :n] in place, column by column (CRBA's F = Xup_j^T F)."""
    for k in range(n):
        g0 = E[0, 0] * F[3, k] + E[1, 0] * F[4, k] + E[2, 0] * F[5, k]
        g1 = E[0, 1] * F[3, k] + E[1, 1] * F[4, k] + E[2, 1] * F[5, k]
        g2 = E[0, 2] * F[3, k] + E[1, 2] * F[4, k] + E[2, 2] * F[5, k]
        n0 = E[0, 0] * F[0, k] + E[1, 0] * F[1, k] + E[2, 0] * F[2, k] + (r[1] * g2 - r[2] * g1)
        n1 = E[0, 1] * F[0, k] + E[1, 1] * F[1, k] + E[2, 1] * F[2, k] + (r[2] * g0 - r[0] * g2)
        n2 = E[0, 2] * F[0, k] + E[1, 2] * F[1, k] + E[2, 2] * F[2, k] + (r[0] * g1 - r[1] * g0)
        F[0, k], F[1, k], F[2, k], F[3, k], F[4, k], F[5, k] = n0, n1, n2, g0, g1, g2


@kernel
def XT_I_X_add(E, r, I, out):
    """out += X^T I X for a symmetric spatial inertia I = [[A, B], [B^T, C]] (6, 6).

    Rotate the blocks to parent axes, A' = E^T A E (B', C' alike), then shift the reference
    point by r: X^T I X = [[A' - Z - Z^T - rx C' rx, B' + rx C'], [(B' + rx C')^T, C']] with
    Z = B' rx (rows: Z[a] = B'[a] x r) and rx C' rx (rows: (rx C')[a] x r). Written on scalars:
    everything is read before anything is written, so the compiler keeps it in registers."""
    a00, a01, a02, a10, a11, a12, a20, a21, a22 = rotated_block(E, I, 0, 0)
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = rotated_block(E, I, 0, 3)
    c00, c01, c02, c10, c11, c12, c20, c21, c22 = rotated_block(E, I, 3, 3)
    r0, r1, r2 = r[0], r[1], r[2]
    # K = rx C' (columns r x C'[:, b])
    k00, k10, k20 = r1 * c20 - r2 * c10, r2 * c00 - r0 * c20, r0 * c10 - r1 * c00
    k01, k11, k21 = r1 * c21 - r2 * c11, r2 * c01 - r0 * c21, r0 * c11 - r1 * c01
    k02, k12, k22 = r1 * c22 - r2 * c12, r2 * c02 - r0 * c22, r0 * c12 - r1 * c02
    # G = B' + K (upper-right block; its transpose is the lower-left one)
    g00, g01, g02 = b00 + k00, b01 + k01, b02 + k02
    g10, g11, g12 = b10 + k10, b11 + k11, b12 + k12
    g20, g21, g22 = b20 + k20, b21 + k21, b22 + k22
    # Z = B' rx (rows B'[a] x r) and W = K rx (rows K[a] x r)
    z00, z01, z02 = b01 * r2 - b02 * r1, b02 * r0 - b00 * r2, b00 * r1 - b01 * r0
    z10, z11, z12 = b11 * r2 - b12 * r1, b12 * r0 - b10 * r2, b10 * r1 - b11 * r0
    z20, z21, z22 = b21 * r2 - b22 * r1, b22 * r0 - b20 * r2, b20 * r1 - b21 * r0
    w00, w01, w02 = k01 * r2 - k02 * r1, k02 * r0 - k00 * r2, k00 * r1 - k01 * r0
    w10, w11, w12 = k11 * r2 - k12 * r1, k12 * r0 - k10 * r2, k10 * r1 - k11 * r0
    w20, w21, w22 = k21 * r2 - k22 * r1, k22 * r0 - k20 * r2, k20 * r1 - k21 * r0
    out[0, 0] += a00 - z00 - z00 - w00
    out[0, 1] += a01 - z01 - z10 - w01
    out[0, 2] += a02 - z02 - z20 - w02
    out[1, 0] += a10 - z10 - z01 - w10
    out[1, 1] += a11 - z11 - z11 - w11
    out[1, 2] += a12 - z12 - z21 - w12
    out[2, 0] += a20 - z20 - z02 - w20
    out[2, 1] += a21 - z21 - z12 - w21
    out[2, 2] += a22 - z22 - z22 - w22
    out[0, 3] += g00
    out[0, 4] += g01
    out[0, 5] += g02
    out[1, 3] += g10
    out[1, 4] += g11
    out[1, 5] += g12
    out[2, 3] += g20
    out[2, 4] += g21
    out[2, 5] += g22
    out[3, 0] += g00
    out[4, 0] += g01
    out[5, 0] += g02
    out[3, 1] += g10
    out[4, 1] += g11
    out[5, 1] += g12
    out[3, 2] += g20
    out[4, 2] += g21
    out[5, 2] += g22
    out[3, 3] += c00
    out[3, 4] += c01
    out[3, 5] += c02
    out[4, 3] += c10
    out[4, 4] += c11
    out[4, 5] += c12
    out[5, 3] += c20
    out[5, 4] += c21
    out[5, 5] += c22


@inline_kernel
def rotated_block(E, I, ro, co):
    """E^T M E for the 3x3 block M = I[ro:ro+3, co:co+3], as 9 numbers (row by row)."""
    e00, e01, e02 = E[0, 0], E[0, 1], E[0, 2]
    e10, e11, e12 = E[1, 0], E[1, 1], E[1, 2]
    e20, e21, e22 = E[2, 0], E[2, 1], E[2, 2]
    m00, m01, m02 = I[ro, co], I[ro, co + 1], I[ro, co + 2]
    m10, m11, m12 = I[ro + 1, co], I[ro + 1, co + 1], I[ro + 1, co + 2]
    m20, m21, m22 = I[ro + 2, co], I[ro + 2, co + 1], I[ro + 2, co + 2]
    n00, n01, n02 = (m00 * e00 + m01 * e10 + m02 * e20, m00 * e01 + m01 * e11 + m02 * e21,    # M E
                     m00 * e02 + m01 * e12 + m02 * e22)
    n10, n11, n12 = (m10 * e00 + m11 * e10 + m12 * e20, m10 * e01 + m11 * e11 + m12 * e21,
                     m10 * e02 + m11 * e12 + m12 * e22)
    n20, n21, n22 = (m20 * e00 + m21 * e10 + m22 * e20, m20 * e01 + m21 * e11 + m22 * e21,
                     m20 * e02 + m21 * e12 + m22 * e22)
    return (e00 * n00 + e10 * n10 + e20 * n20, e00 * n01 + e10 * n11 + e20 * n21, e00 * n02 + e10 * n12 + e20 * n22,
            e01 * n00 + e11 * n10 + e21 * n20, e01 * n01 + e11 * n11 + e21 * n21, e01 * n02 + e11 * n12 + e21 * n22,
            e02 * n00 + e12 * n10 + e22 * n20, e02 * n01 + e12 * n11 + e22 * n21, e02 * n02 + e12 * n12 + e22 * n22)


@inline_kernel
def crm_to(v, m, out):
    """out = v x m: spatial cross product of motion vectors (RBDA Eq. 2.31)."""
    out[0] = v[1] * m[2] - v[2] * m[1]
    out[1] = v[2] * m[0] - v[0] * m[2]
    out[2] = v[0] * m[1] - v[1] * m[0]
    out[3] = v[1] * m[5] - v[2] * m[4] + (v[4] * m[2] - v[5] * m[1])
    out[4] = v[2] * m[3] - v[0] * m[5] + (v[5] * m[0] - v[3] * m[2])
    out[5] = v[0] * m[4] - v[1] * m[3] + (v[3] * m[1] - v[4] * m[0])


@inline_kernel
def bias_force_to(I, v, out):
    """out = v x* (I v), exact at speed as ``spatial.bias_force``: with h = I v, the linear
    velocity enters the angular part only through v_o x (I[3:, :3] w), since v_o x (m v_o) = 0."""
    h0 = h1 = h2 = h3 = h4 = h5 = 0.0
    for k in range(6):
        h0 += I[0, k] * v[k]
        h1 += I[1, k] * v[k]
        h2 += I[2, k] * v[k]
        h3 += I[3, k] * v[k]
        h4 += I[4, k] * v[k]
        h5 += I[5, k] * v[k]
    g0 = I[3, 0] * v[0] + I[3, 1] * v[1] + I[3, 2] * v[2]        # I[3:, :3] w
    g1 = I[4, 0] * v[0] + I[4, 1] * v[1] + I[4, 2] * v[2]
    g2 = I[5, 0] * v[0] + I[5, 1] * v[1] + I[5, 2] * v[2]
    w0, w1, w2, o0, o1, o2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = (w1 * h2 - w2 * h1) + (o1 * g2 - o2 * g1)
    out[1] = (w2 * h0 - w0 * h2) + (o2 * g0 - o0 * g2)
    out[2] = (w0 * h1 - w1 * h0) + (o0 * g1 - o1 * g0)
    out[3] = w1 * h5 - w2 * h4
    out[4] = w2 * h3 - w0 * h5
    out[5] = w0 * h4 - w1 * h3


@inline_kernel
def quat_to_R(q, s):
    """R of the quaternion q[s: s + 4] (w, x, y, z) as 9 numbers, row by row (``spatial.quat_to_R``)."""
    w, x, y, z = q[s], q[s + 1], q[s + 2], q[s + 3]
    return (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))


@inline_kernel
def rot_axis(a, angle):
    """I + sin(angle) K + (1 - cos(angle)) K K, K = skew(a) (Rodrigues), as 9 numbers row by row."""
    s, c1 = math.sin(angle), 1.0 - math.cos(angle)
    K01, K02, K10, K12, K20, K21 = -a[2], a[1], a[2], -a[0], -a[1], a[0]
    KK00, KK01, KK02 = K01 * K10 + K02 * K20, K02 * K21, K01 * K12
    KK10, KK11, KK12 = K12 * K20, K10 * K01 + K12 * K21, K10 * K02
    KK20, KK21, KK22 = K21 * K10, K20 * K01, K20 * K02 + K21 * K12
    return (1.0 + c1 * KK00, s * K01 + c1 * KK01, s * K02 + c1 * KK02,
            s * K10 + c1 * KK10, 1.0 + c1 * KK11, s * K12 + c1 * KK12,
            s * K20 + c1 * KK20, s * K21 + c1 * KK21, 1.0 + c1 * KK22)


@kernel
def spd_inverse_to(D, n, L, out):
    """out[:n, :n] = D[:n, :n]^-1 of a symmetric positive definite D by Cholesky, D = L L^T
    (non-finite for a singular D, which the callers report as a non-finite result)."""
    for j in range(n):
        s = D[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        L[j, j] = math.sqrt(s) if s > 0.0 else math.nan
        for i in range(j + 1, n):
            s = D[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    for c in range(n):          # solve L L^T x = e_c, column c of the inverse
        for i in range(n):
            s = 1.0 if i == c else 0.0
            for k in range(i):
                s -= L[i, k] * out[k, c]
            out[i, c] = s / L[i, i]
        for i in range(n - 1, -1, -1):
            s = out[i, c]
            for k in range(i + 1, n):
                s -= L[k, i] * out[k, c]
            out[i, c] = s / L[i, i]
