"""Entry points of the compiled kernels: each takes the packed buffer (model and data) and the
call's arrays, checks sizes and finiteness (a status code: 0 ok, BAD_SIZE or NOT_FINITE plus
the argument's index), takes the arrays' views and runs an algorithm of algorithms.py / step.py.

The dispatchers are built with explicit signatures (``entry``), so numba never compiles a new
specialisation for an unexpected argument type: it raises TypeError, and the Python wrapper
(``CompiledModel``) converts the arguments once and retries. ``cache=True`` keeps the machine
code in ``__pycache__`` (or NUMBA_CACHE_DIR) between processes.
"""
from __future__ import annotations

import math

# scipy's Fortran runtime before numba's LLVM: loaded after it, in a process that also hosts an FMU
# of this engine, libgfortran's exit handler met a corrupted heap (7 of 110 runs under gdb; 0 of 120
# in this order). numba imports scipy.linalg anyway (for np.linalg in nopython code): no extra cost.
import scipy.linalg  # noqa: F401
from numba import njit, types
from numba.core import config

from .algorithms import aba, crba, forward_kinematics, joint_transforms, rnea
from ._jit import kernel
from ._view import iview, view
from .layout import N_HEADER, W_FEXT, X_TAU
from .step import passive_forces_to, rhs, run_rk4

# status codes: BAD_SIZE + k / NOT_FINITE + k for the call's argument k (0-based, after buf)
BAD_SIZE, NOT_FINITE = 1, 100


@kernel
def views(buf):
    """(model, data, header): the arrays of the packed buffer (layout.py) as tuples
    model = (topo, elem, SI, R_tree, G3, elem_f, vec), data = (W66, W6, W33, W3, Wx, S66), and
    the header (N, nq, nv, nx, n_u, n_elem, has_forces). Offsets follow layout.sizes_of (the
    tests check them against Packed's views)."""
    hdr = iview(buf, 0, (N_HEADER,))
    N1, nv, nx, ne = hdr[0] + 1, hdr[2], hdr[3], hdr[5]
    o = N_HEADER
    topo = iview(buf, o, (6, N1))
    elem = iview(buf, o + 6 * N1, (ne, 4))
    o += 6 * N1 + 4 * ne
    SI = view(buf, o, (2, N1, 6, 6))
    R_tree = view(buf, o + 72 * N1, (N1, 3, 3))
    G3 = view(buf, o + 81 * N1, (2, N1, 3))
    elem_f = view(buf, o + 87 * N1, (ne, 9))
    vec = view(buf, o + 87 * N1 + 9 * ne, (6 + nv,))
    o += 87 * N1 + 9 * ne + 6 + nv
    W66 = view(buf, o, (4, N1, 6, 6))
    W6 = view(buf, o + 144 * N1, (7, N1, 6))
    W33 = view(buf, o + 186 * N1, (2, N1, 3, 3))
    W3 = view(buf, o + 204 * N1, (2, N1, 3))
    Wx = view(buf, o + 210 * N1, (8, nx))
    S66 = view(buf, o + 210 * N1 + 8 * nx, (6, 6, 6))
    return (topo, elem, SI, R_tree, G3, elem_f, vec), (W66, W6, W33, W3, Wx, S66), hdr


@kernel
def _bad(x, n, k, check_finite):
    """Status of the call's argument k: BAD_SIZE + k if it has not n entries, NOT_FINITE + k if
    check_finite and an entry is not finite, else 0."""
    if x.size != n:
        return BAD_SIZE + k
    if check_finite:
        for j in range(n):
            if not math.isfinite(x[j]):
                return NOT_FINITE + k
    return 0


@kernel
def _set_f_ext(f_ext, out):
    """out = f_ext (N+1, 6), or zero if f_ext has no rows; status 0, or that of argument 3."""
    if f_ext.shape[0] == 0:
        out[:, :] = 0.0
        return 0
    if f_ext.shape[0] != out.shape[0]:
        return BAD_SIZE + 3
    for i in range(out.shape[0]):
        for k in range(6):
            if not math.isfinite(f_ext[i, k]):
                return NOT_FINITE + 3
            out[i, k] = f_ext[i, k]
    return 0


def _aba_entry(buf, q, qd, tau, f_ext, passive, qdd):
    """qdd = ABA(q, qd, tau (+ passive joint forces if passive), f_ext (N+1, 6) or (0, 6): none).
    (f_ext is never None: numba types None ~0.25 us slower than an empty array.)"""
    model, data, hdr = views(buf)
    nq, nv = hdr[1], hdr[2]
    st = _bad(q, nq, 0, True) or _bad(qd, nv, 1, True) or _bad(tau, nv, 2, True) or _bad(qdd, nv, 5, False)
    if not st:
        st = _set_f_ext(f_ext, data[1][W_FEXT])
    if st:
        return st
    joint_transforms(model, data, q)
    tau_total = data[4][X_TAU, :nv]
    if passive:
        passive_forces_to(model, q, qd, tau_total)
        for j in range(nv):
            tau_total[j] = tau[j] + tau_total[j]
    else:
        for j in range(nv):
            tau_total[j] = tau[j]
    aba(model, data, qd, tau_total, qdd)
    return 0


def _rnea_entry(buf, q, qd, qdd, f_ext, passive, tau):
    """tau = RNEA(q, qd, qdd, f_ext (N+1, 6) or (0, 6): none) (- passive joint forces if passive)."""
    model, data, hdr = views(buf)
    nq, nv = hdr[1], hdr[2]
    st = _bad(q, nq, 0, True) or _bad(qd, nv, 1, True) or _bad(qdd, nv, 2, True) or _bad(tau, nv, 5, False)
    if not st:
        st = _set_f_ext(f_ext, data[1][W_FEXT])
    if st:
        return st
    joint_transforms(model, data, q)
    rnea(model, data, qd, qdd, tau)
    if passive:
        tau_p = data[4][X_TAU, :nv]
        passive_forces_to(model, q, qd, tau_p)
        for j in range(nv):
            tau[j] -= tau_p[j]
    return 0


def _crba_entry(buf, q, M):
    """M = CRBA(q), (nv, nv)."""
    model, data, hdr = views(buf)
    nq, nv = hdr[1], hdr[2]
    st = _bad(q, nq, 0, True)
    if st:
        return st
    if M.shape[0] != nv or M.shape[1] != nv:
        return BAD_SIZE + 1
    joint_transforms(model, data, q)
    crba(model, data, M)
    return 0


def _fk_entry(buf, q, qd, qdd):
    """Body poses, velocities (if qd has entries) and accelerations (if qdd has) into data."""
    model, data, hdr = views(buf)
    nq, nv = hdr[1], hdr[2]
    with_v, with_a = qd.size > 0, qdd.size > 0
    st = _bad(q, nq, 0, True)
    if not st and with_v:
        st = _bad(qd, nv, 1, True)
    if not st and with_a:
        st = _bad(qdd, nv, 2, True)
    if st:
        return st
    joint_transforms(model, data, q)
    forward_kinematics(model, data, qd, qdd, with_v, with_v and with_a)
    return 0


def _rhs_entry(buf, x, u, xdot):
    """xdot = f(x, u), the equations of motion of the Simulator's state."""
    model, data, hdr = views(buf)
    nx, n_u = hdr[3], hdr[4]
    st = _bad(x, nx, 0, True) or _bad(u, n_u, 1, True) or _bad(xdot, nx, 2, False)
    if st:
        return st
    rhs(model, data, hdr[6] != 0, x, u, xdot)
    return 0


def _run_entry(buf, x, U, h, n, X_out, stride):
    """n RK4 steps from x in place (step.run_rk4); returns -status on bad arguments."""
    model, data, hdr = views(buf)
    nx, n_u = hdr[3], hdr[4]
    st = _bad(x, nx, 0, True)
    if not st and (U.shape[1] != n_u or (U.shape[0] != 1 and U.shape[0] < n)):
        st = BAD_SIZE + 1
    if not st:
        for k in range(U.shape[0]):
            for j in range(U.shape[1]):
                if not math.isfinite(U[k, j]):
                    st = NOT_FINITE + 1
    if not st and X_out.shape[0] > 0 and (X_out.shape[1] != nx or stride < 1):
        st = BAD_SIZE + 4
    if st:
        return -st
    return run_rk4(model, data, hdr[6] != 0, x, U, h, n, X_out, stride)


F1, F2, I64, B = types.float64[::1], types.float64[:, ::1], types.int64, types.boolean
SIGNATURES = {
    "aba": (_aba_entry, I64(F1, F1, F1, F1, F2, B, F1)),
    "rnea": (_rnea_entry, I64(F1, F1, F1, F1, F2, B, F1)),
    "crba": (_crba_entry, I64(F1, F1, F2)),
    "fk": (_fk_entry, I64(F1, F1, F1, F1)),
    "rhs": (_rhs_entry, I64(F1, F1, F1, F1)),
    "run": (_run_entry, I64(F1, F1, F2, types.float64, I64, F2, I64)),
}
_dispatchers: dict = {}


def entry(name: str):
    """The compiled dispatcher of one entry point, built (or loaded from the cache) on first use.
    It has one signature: a call with other argument types raises TypeError (never compiles)."""
    disp = _dispatchers.get(name)
    if disp is None:
        py_func, sig = SIGNATURES[name]
        slp = config.SLP_VECTORIZE
        config.SLP_VECTORIZE = 1        # straight-line 3x3/6x6 code gains ~1.5x from SLP vectors
        try:
            disp = njit([sig], cache=True, error_model="numpy", fastmath={"contract"})(py_func)
        finally:
            config.SLP_VECTORIZE = slp
        _dispatchers[name] = disp
    return disp
