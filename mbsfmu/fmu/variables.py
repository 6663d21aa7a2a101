"""The FMU's variable map: every FMI 2.0 scalar variable of a model's FMU, with its unit,
description, causality/variability/initial, start value and where its value comes from.

Pure description: no pythonfmu import, so the map can be built and checked without the FMU.
Value references are positions in ``variable_table(...)`` (0-based); the ModelVariables index
used by ModelStructure is the value reference + 1.

Names (FMI 2.0 structured naming, ASCII, 1-based arrays):

| group | names |
|---|---|
| parameters (fixed: set before fmi2ExitInitializationMode) | ``solver.method`` (Integer: 1 = rk4, 2 = dop853), ``solver.h_max``, ``solver.rtol``, ``solver.atol``, ``gravity[1..3]``, ``<body>.mass``, ``<body>.com[1..3]``, ``<body>.I[1,1] .. I[2,3]`` (6 entries of the symmetric inertia), ``<wheel>.Iw``, ``<joint>.spring.k``, ``<joint>.spring.d`` |
| inputs | the Simulator's ``input_names``: ``<joint>.tau`` (``[k]`` multi-DoF), ``<wheel>.torque``, ``<thruster>.thrust``, ``<wrench>.f[1..3]``, ``<wrench>.torque[1..3]`` |
| outputs | ``<joint>.q``, ``<joint>.qd``, ``<joint>.qdd`` (``[k]`` multi-DoF), ``p_sys[1..3]``, ``H_sys[1..3]``, ``R[1..3]``, ``Rdot[1..3]``, ``KE``, ``PE``, ``E``, ``W_in``, ``W_diss``, ``drift.*``, ``solver.*`` statistics |

``naming="flat"`` replaces dots and brackets by underscores (``q1_tau``, ``push_f_1``,
``link1_I_1_2``) for hosts that do not take structured names.
"""  # noqa: E501 - a markdown table

from __future__ import annotations

import re
from dataclasses import dataclass

from ..engine.forces import ForceElements, dof_unit

NAMINGS = ("structured", "flat")
METHODS = ("rk4", "dop853")  # solver.method enumeration values 1, 2
INT_MAX = 2**31 - 1  # fmi2Integer is 32-bit; counters saturate here

# unit name -> exponents of the SI base units (kg, m, s, rad) for <UnitDefinitions>
UNITS = {
    "1": {},
    "1/s": {"s": -1},
    "s": {"s": 1},
    "m": {"m": 1},
    "kg": {"kg": 1},
    "rad": {"rad": 1},
    "m/s": {"m": 1, "s": -1},
    "m/s2": {"m": 1, "s": -2},
    "rad/s": {"rad": 1, "s": -1},
    "rad/s2": {"rad": 1, "s": -2},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "J": {"kg": 1, "m": 2, "s": -2},
    "W": {"kg": 1, "m": 2, "s": -3},
    "N.s": {"kg": 1, "m": 1, "s": -1},
    "N.m.s": {"kg": 1, "m": 2, "s": -1},
    "kg.m2": {"kg": 1, "m": 2},
    "N/m": {"kg": 1, "s": -2},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N.s/m": {"kg": 1, "s": -1},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
}

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INERTIA = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


@dataclass(frozen=True)
class FmuVariable:
    """One FMI scalar variable.

    type: "Real" or "Integer"; causality, variability,
    initial: FMI 2.0 attributes (initial None = not written); source: where the value lives,
    ("param", key) | ("input", k) | ("x", k) (state vector entry) | ("qdd", k) | ("inv", field, k)
    | ("energy", field) | ("drift", field) | ("stat", field) | ("der", k) (the time derivative of
    state entry k, Model Exchange); deps: for outputs, names of the inputs it depends on directly
    (None = initial unknown with no listed dependencies); init_deps: the parameters and inputs its
    initial value depends on (initial unknowns); derivative: the name of the continuous state this
    variable is the time derivative of (Model Exchange); state_deps: the continuous states an
    output or derivative depends on (Model Exchange: with the inputs, the knowns of ModelStructure).
    """

    name: str
    type: str
    causality: str
    variability: str
    initial: str | None
    unit: str | None
    description: str
    source: tuple
    start: float | int | None = None
    min: float | None = None
    max: float | None = None
    deps: tuple[str, ...] = ()
    init_deps: tuple[str, ...] = ()
    derivative: str | None = None
    state_deps: tuple[str, ...] = ()

    @property
    def settable(self) -> bool:
        return self.causality in ("input", "parameter")


def variable_table(
    model,
    naming: str = "structured",
    method: str = "rk4",
    h_max: float = 1e-3,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    model_exchange: bool = False,
) -> list[FmuVariable]:
    """Every variable of ``model``'s FMU in value-reference order: parameters, inputs, outputs.

    method, h_max [s], rtol, atol: the start values of the solver parameters. model_exchange:
    the continuous states' derivatives too (after every other variable, so the value references
    of a co-simulation FMU stay), the qdd outputs marked as the derivatives of qd, and the states
    each output depends on (``state_deps``). Raises ValueError naming every variable whose name is
    not unique or not ASCII."""
    if naming not in NAMINGS:
        raise ValueError(f"naming {naming!r}: expected one of {', '.join(NAMINGS)}")
    if method not in METHODS:
        raise ValueError(f"integrator {method!r}: expected one of {', '.join(METHODS)}")
    spec, t = model.spec, model.tree
    out: list[FmuVariable] = []

    def real(parts, causality, variability, initial, unit, description, source, **kw):
        out.append(
            FmuVariable(
                structured_name(parts), "Real", causality, variability, initial, unit, description, source, **kw
            )
        )

    def param(parts, unit, description, key, start, lo=None, hi=None):
        real(
            parts, "parameter", "fixed", "exact", unit, description, ("param", key), start=float(start), min=lo, max=hi
        )

    # ---- parameters ----------------------------------------------------------------------
    out.append(
        FmuVariable(
            structured_name(["solver", "method"]),
            "Integer",
            "parameter",
            "fixed",
            "exact",
            None,
            "integrator: 1 = rk4 (fixed step h_max, deterministic), 2 = dop853 (adaptive, rtol/atol)",
            ("param", ("solver", "method")),
            start=METHODS.index(method) + 1,
            min=1,
            max=len(METHODS),
        )
    )
    param(
        ["solver", "h_max"],
        "s",
        "rk4: internal step, each communication step takes ceil(dt / h_max) equal "
        "sub-steps; dop853: largest internal step, 0 = unlimited",
        ("solver", "h_max"),
        h_max,
        lo=0.0,
    )
    param(["solver", "rtol"], "1", "dop853 relative tolerance", ("solver", "rtol"), rtol, lo=0.0)
    param(
        ["solver", "atol"],
        "1",
        "dop853 absolute tolerance, applied to every state entry in its own SI unit",
        ("solver", "atol"),
        atol,
        lo=0.0,
    )
    mass_params, com_params, inertia_params, wheel_params, spring_params, gravity_params = [], [], [], [], [], []
    for k in range(3):
        param(
            [("gravity", k + 1)],
            "m/s2",
            f"gravitational acceleration, world axes, component {k + 1}",
            ("gravity", k),
            spec.gravity[k],
        )
        gravity_params.append(out[-1].name)
    for b in spec.bodies:
        param([b.name, "mass"], "kg", f"mass of body {b.name}", ("mass", b.name), b.mass, lo=0.0)
        mass_params.append(out[-1].name)
        for k in range(3):
            param(
                [b.name, ("com", k + 1)],
                "m",
                f"centre of mass of body {b.name}, body axes, component {k + 1}",
                ("com", b.name, k),
                b.com[k],
            )
            com_params.append(out[-1].name)
        for a, c in _INERTIA:
            sym = f" (= I[{c + 1},{a + 1}])" if a != c else ""
            param(
                [b.name, ("I", a + 1, c + 1)],
                "kg.m2",
                f"inertia of body {b.name} about its centre of mass, body axes, entry ({a + 1},{c + 1}){sym}",
                ("inertia", b.name, a, c),
                b.inertia[a][c],
                lo=0.0 if a == c else None,
            )
            inertia_params.append(out[-1].name)
        for w in b.wheels:
            param(
                [w.name, "Iw"],
                "kg.m2",
                f"spin inertia I_w of reaction wheel {w.name} about its axis",
                ("wheel", w.name),
                w.inertia,
                lo=0.0,
            )
            wheel_params.append(out[-1].name)
        if b.joint.spring is not None:
            lin = b.joint.type == "prismatic"
            param(
                [b.joint.name, "spring", "k"],
                "N/m" if lin else "N.m/rad",
                f"stiffness of the spring on joint {b.joint.name}: tau = -k (q - q0) - d qd",
                ("spring_k", b.joint.name),
                b.joint.spring.k,
                lo=0.0,
            )
            spring_params.append(out[-1].name)
            param(
                [b.joint.name, "spring", "d"],
                "N.s/m" if lin else "N.m.s/rad",
                f"damping of the spring on joint {b.joint.name}: tau = -k (q - q0) - d qd",
                ("spring_d", b.joint.name),
                b.joint.spring.d,
                lo=0.0,
            )
            spring_params.append(out[-1].name)

    # ---- inputs --------------------------------------------------------------------------
    fe = ForceElements(model)
    layout = fe.layout
    input_bodies = _input_bodies(model, fe)
    inputs = []
    for k, (n, unit, desc) in enumerate(zip(layout.names, layout.units, layout.descriptions)):
        real(_split(n), "input", "continuous", None, unit, desc, ("input", k), start=0.0)
        inputs.append(out[-1].name)

    # ---- outputs -------------------------------------------------------------------------
    inertial = tuple(mass_params + com_params + inertia_params + wheel_params)
    dynamic = inertial + tuple(gravity_params + spring_params)

    def output(parts, unit, description, source, deps=(), init_deps=(), type_="Real"):
        var = "continuous" if type_ == "Real" else "discrete"
        out.append(
            FmuVariable(
                structured_name(parts),
                type_,
                "output",
                var,
                "calculated",
                unit,
                description,
                source,
                deps=tuple(deps),
                init_deps=tuple(init_deps),
            )
        )

    nq = model.nq
    for i in range(1, model.N + 1):
        body = model.bodies[i - 1]
        j, jt = body.joint.name, body.joint.type
        kind = "reaction wheel" if body.name in model.wheels else f"{jt} joint"
        nqi, nvi = int(t.nq[i]), int(t.nv[i])
        deps = _input_deps(model, input_bodies, i, inputs)
        for k in range(nqi):
            output(
                [j, ("q", k + 1) if nqi > 1 else "q"],
                _q_unit(jt, k),
                f"{_q_desc(jt, k)} of {kind} {j}",
                ("x", int(t.iq[i]) + k),
            )
        for k in range(nvi):
            unit = dof_unit(jt, k, force=False)
            what = _qd_desc(jt, k)
            output([j, ("qd", k + 1) if nvi > 1 else "qd"], unit, f"{what} of {kind} {j}", ("x", nq + int(t.iv[i]) + k))
        for k in range(nvi):
            unit = dof_unit(jt, k, force=False) + "2"
            output(
                [j, ("qdd", k + 1) if nvi > 1 else "qdd"],
                unit,
                f"time derivative of the {_qd_desc(jt, k)} of {kind} {j}, at the current state and inputs",
                ("qdd", int(t.iv[i]) + k),
                deps=deps,
                init_deps=deps + dynamic,
            )
    for field, unit, desc, deps in (
        (
            "p_sys",
            "N.s",
            "sum of the bodies' linear momenta relative to the system CM, world axes (MBS Momentum "
            "Testing Eq. 9, zero up to rounding)",
            inertial,
        ),
        (
            "H_sys",
            "N.m.s",
            "angular momentum about the system CM incl. reaction wheels, world axes (MBS Momentum Testing Eq. 10)",
            inertial,
        ),
        ("R", "m", "position of the system centre of mass, world axes", inertial),
        ("Rdot", "m/s", "velocity of the system centre of mass, world axes", inertial),
    ):
        for k in range(3):
            output([(field, k + 1)], unit, f"{desc}, component {k + 1}", ("inv", field, k), init_deps=deps)
    output(
        ["KE"],
        "J",
        "kinetic energy incl. reaction wheels (MBS Energy Testing Eq. 1)",
        ("inv", "KE", 0),
        init_deps=inertial,
    )
    output(
        ["PE"],
        "J",
        "potential energy: springs and gravity (MBS Energy Testing Eq. 2)",
        ("inv", "PE", 0),
        init_deps=dynamic,
    )
    output(["E"], "J", "total mechanical energy KE + PE", ("inv", "E", 0), init_deps=dynamic)
    output(
        ["W_in"],
        "J",
        "work done by the inputs (actuators, wheel motors, thrusters, wrenches) since the start",
        ("energy", "W_in"),
    )
    output(["W_diss"], "J", "work done by the dampers since the start (<= 0)", ("energy", "W_diss"))
    output(
        ["drift", "H_sys"],
        "1",
        "relative drift of H_sys since the start: |H_sys - H_sys(t0)| / H_scale, "
        "H_scale = max(S(t0), S) with S = sum over bodies of |L_c,i| + |(c_i - R) x p_rel,i| (the magnitudes "
        "of the terms of H_sys, MBS Momentum Testing Eq. 10; nonzero when H_sys = 0 with spinning parts); "
        "0 when the drift is 0, +inf when S = 0 and the drift is not (conserved without external torques)",
        ("drift", "H_rel"),
    )
    output(
        ["drift", "H_sys_abs"],
        "N.m.s",
        "absolute drift of H_sys since the start: |H_sys - H_sys(t0)|",
        ("drift", "H_abs"),
    )
    output(
        ["drift", "E_balance"],
        "1",
        "relative energy balance residual: |E - W_in - W_diss - E(t0)| / E_scale, "
        "E_scale = max(KE(t0), |PE - PE(t0)|, S_E + |W_in| + |W_diss|), S_E = KE + springs' energy + "
        "sum over bodies of m_i |g| |c_i| (the magnitudes of the terms E sums, MBS Energy Testing Eqs. 1, 2); 0 "
        "when the residual is 0, +inf when E_scale = 0 and the residual is not (zero for exact integration)",
        ("drift", "E_rel"),
    )
    output(["drift", "E_balance_abs"], "J", "energy balance residual E - W_in - W_diss - E(t0)", ("drift", "E_abs"))
    output(
        ["solver", "n_steps"],
        None,
        "internal integrator steps taken since the start (saturates at 2^31 - 1)",
        ("stat", "n_steps"),
        type_="Integer",
    )
    output(
        ["solver", "n_rhs"],
        None,
        "evaluations of the equations of motion since the start (saturates at 2^31 - 1)",
        ("stat", "n_rhs"),
        type_="Integer",
    )
    output(
        ["solver", "n_discards"],
        None,
        "communication steps discarded (fmi2Discard) since the start",
        ("stat", "n_discards"),
        type_="Integer",
    )
    output(["solver", "h_last"], "s", "size of the last internal integrator step", ("stat", "h_last"))
    if model_exchange:
        out = state_derivatives(model, out, inputs)

    if naming == "flat":
        out = [_flatten(v) for v in out]
    check_names(out, naming)
    return out


def state_derivatives(model, table: list[FmuVariable], inputs: list[str]) -> list[FmuVariable]:
    """``table`` for Model Exchange: the local variables ``der(<state>)`` of the configuration
    and energy states appended (the qdd outputs are the derivatives of qd), in the order of the
    state vector x = [q, qd, W_in, W_diss] (host_state.c), with the states each output and
    derivative depends on. Dependencies (ModelStructure): a joint's configuration rate depends on
    its own q and qd (quaternion rows: the quaternion and the angular rate); qdd of a body on the
    states and inputs of every body it is coupled with (its world-attached subtree, M^-1 couples
    exactly the joints of a connected tree, joined with the subtrees a point spring-damper ties it
    to, whose force depends on both ends' states; every body when the model has loops or
    couplings); the energy rates and the other outputs on every q and qd (and W_in, W_diss where
    they enter)."""
    from dataclasses import replace

    t = model.tree
    nq, nv = model.nq, model.nv
    by_source = {v.source: v for v in table}
    x_name = {k: by_source[("x", k)].name for k in range(nq + nv)}
    x_name[nq + nv] = by_source[("energy", "W_in")].name
    x_name[nq + nv + 1] = by_source[("energy", "W_diss")].name
    all_q_qd = tuple(x_name[k] for k in range(nq + nv))

    root = {b: _root(model, b) for b in range(1, model.N + 1)}
    joined = {r: r for r in root.values()}  # subtrees tied by a point spring-damper, as a union-find

    def find(r: int) -> int:
        while joined[r] != r:
            r = joined[r]
        return r

    for _el, a, _ra, b, _rb in ForceElements(model).springs:
        if a > 0 and b > 0:
            joined[find(root[a])] = find(root[b])

    members: dict[int, list[int]] = {}  # each coupled group's bodies, once (0: every body, with loops)
    for b in range(1, model.N + 1):
        members.setdefault(0 if model.loops else find(root[b]), []).append(b)
    group_states: dict[int, tuple[str, ...]] = {}
    for key, bodies in members.items():
        ks = [int(t.iq[b]) + k for b in bodies for k in range(int(t.nq[b]))]
        ks += [nq + int(t.iv[b]) + k for b in bodies for k in range(int(t.nv[b]))]
        group_states[key] = tuple(x_name[k] for k in sorted(ks))
    body_of_dof = {int(t.iv[b]) + k: b for b in range(1, model.N + 1) for k in range(int(t.nv[b]))}

    def states_of(i: int) -> tuple[str, ...]:
        return group_states[0 if model.loops else find(root[i])]

    out = []
    for v in table:
        src = v.source
        if src[0] == "qdd":
            v = replace(v, derivative=x_name[nq + int(src[1])], state_deps=states_of(body_of_dof[int(src[1])]))
        elif v.causality == "output" and src[0] == "x":
            v = replace(v, state_deps=(v.name,))
        elif v.causality == "output" and src[0] == "energy":
            v = replace(v, state_deps=(v.name,))
        elif v.causality == "output" and src[0] == "drift" and src[1] in ("E_abs", "E_rel"):
            v = replace(v, state_deps=all_q_qd + (x_name[nq + nv], x_name[nq + nv + 1]))
        elif v.causality == "output" and src[0] in ("inv", "drift"):
            v = replace(v, state_deps=all_q_qd)
        out.append(v)
    spring_d = tuple(v.name for v in table if v.source[0] == "param" and v.source[1][0] == "spring_d")
    for i in range(1, model.N + 1):
        jt = model.bodies[i - 1].joint.type
        nqi, iq, iv = int(t.nq[i]), int(t.iq[i]), int(t.iv[i])
        for k in range(nqi):
            state = x_name[iq + k]
            if jt == "free":  # p rows: R(quat) v; quaternion rows: the quaternion and w
                deps = [iq + 3 + m for m in range(4)] + [nq + iv + m for m in ((0, 1, 2) if k < 3 else (3, 4, 5))]
            elif jt == "spherical":
                deps = [iq + m for m in range(4)] + [nq + iv + m for m in range(3)]
            else:
                deps = [nq + iv + k]
            unit = "1/s" if (jt == "spherical" or (jt == "free" and k >= 3)) else dof_unit(jt, k, force=False)
            out.append(
                FmuVariable(
                    f"der({state})",
                    "Real",
                    "local",
                    "continuous",
                    "calculated",
                    unit,
                    f"time derivative of {state} (Model Exchange)",
                    ("der", iq + k),
                    derivative=state,
                    state_deps=tuple(x_name[d] for d in sorted(deps)),
                )
            )
    for k, (field, desc, init) in enumerate(
        (
            ("W_in", "power of the inputs (the time derivative of W_in)", tuple(inputs)),
            ("W_diss", "power of the dampers, <= 0 (the time derivative of W_diss)", spring_d),
        )
    ):
        state = x_name[nq + nv + k]
        out.append(
            FmuVariable(
                f"der({state})",
                "Real",
                "local",
                "continuous",
                "calculated",
                "W",
                desc,
                ("der", nq + nv + k),
                derivative=state,
                state_deps=all_q_qd,
                init_deps=init,
                deps=tuple(inputs) if field == "W_in" else (),
            )
        )
    return out


def relative_drift(residual: float, scale: float) -> float:
    """drift.H_sys / drift.E_balance from |residual| and its scale (see their descriptions): 0 for
    a zero residual, residual / scale, +inf when the scale is 0 and the residual is not."""
    residual = abs(residual)
    if residual == 0.0:
        return 0.0
    return residual / scale if scale > 0.0 else float("inf")


def check_names(table: list[FmuVariable], naming: str) -> None:
    """ValueError listing every duplicate, non-ASCII or reserved variable name."""
    problems, seen = [], set()
    for v in table:
        if v.name in seen:
            problems.append(f"{v.name!r} is not unique")
        seen.add(v.name)
        if not v.name.isascii():
            problems.append(f"{v.name!r} is not ASCII: rename the body, joint or element")
        if v.name == "time":
            problems.append("a variable may not be named 'time'")
    if problems:
        hint = " (try naming='structured')" if naming == "flat" else ""
        raise ValueError(f"{len(problems)} problem(s) with the FMU variable names{hint}: " + "; ".join(problems))


def structured_name(parts) -> str:
    """Structured name from parts: a string, or (base, index...) for an array element."""
    out = []
    for p in parts:
        if isinstance(p, tuple):
            out.append(_component(p[0]) + "[" + ",".join(str(k) for k in p[1:]) + "]")
        else:
            out.append(_component(p))
    return ".".join(out)


def _component(s: str) -> str:
    """One name component: an identifier as is, anything else quoted (FMI 2.0 q-name)."""
    if _IDENT.match(s):
        return s
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _split(name: str) -> list:
    """Parts of an engine input name such as ``push.f[1]`` (its own components are engine names)."""
    parts = []
    for p in name.split("."):
        m = re.match(r"^(.*)\[(\d+)\]$", p)
        parts.append((m.group(1), int(m.group(2))) if m else p)
    return parts


def flat_name(name: str) -> str:
    """Structured name -> flat: ``push.f[1]`` -> ``push_f_1``, ``b.I[1,2]`` -> ``b_I_1_2``."""
    s = re.sub(r"'((?:[^'\\]|\\.)*)'", lambda m: m.group(1).replace("\\'", "'").replace("\\\\", "\\"), name)
    s = re.sub(r"\[(\d+(?:,\d+)*)\]", lambda m: "_" + m.group(1).replace(",", "_"), s)
    return s.replace(".", "_")


def _flatten(v: FmuVariable) -> FmuVariable:
    from dataclasses import replace

    return replace(
        v,
        name=flat_name(v.name),
        deps=tuple(flat_name(d) for d in v.deps),
        init_deps=tuple(flat_name(d) for d in v.init_deps),
        derivative=flat_name(v.derivative) if v.derivative else None,
        state_deps=tuple(flat_name(d) for d in v.state_deps),
    )


def _q_unit(jtype: str, k: int) -> str:
    if jtype == "revolute":
        return "rad"
    if jtype == "prismatic" or (jtype == "free" and k < 3):
        return "m"
    return "1"  # quaternion components


def _q_desc(jtype: str, k: int) -> str:
    if jtype == "revolute":
        return "angle"
    if jtype == "prismatic":
        return "displacement"
    if jtype == "free" and k < 3:
        return f"position of the body origin, parent axes, component {k + 1},"
    quat = "wxyz"[k - 3 if jtype == "free" else k]
    return f"orientation quaternion component {quat} (scalar first)"


def _qd_desc(jtype: str, k: int) -> str:
    if jtype == "revolute":
        return "rate"
    if jtype == "prismatic":
        return "velocity"
    if jtype == "free" and k < 3:
        return f"velocity of the body origin, body axes, component {k + 1},"
    return f"angular velocity, body axes, component {k - 3 + 1 if jtype == 'free' else k + 1},"


def _input_bodies(model, fe: ForceElements) -> list[int]:
    """The body each input acts on (a joint actuator or wheel motor: the body its joint moves)."""
    layout = fe.layout
    bodies = [0] * len(layout.names)
    for k, dof in zip(layout.tau_index.tolist(), layout.tau_dof.tolist()):
        bodies[k] = _body_of_dof(model, dof)
    for iu, b, *_ in fe.thrusters:
        bodies[iu] = b
    for iu, b, *_ in fe.wrenches:
        for c in range(6):
            bodies[iu + c] = b
    return bodies


def _input_deps(model, input_bodies: list[int], i: int, inputs: list[str]) -> tuple[str, ...]:
    """Inputs that act directly on the accelerations of body i's joint: every input on a body of
    the same world-attached subtree (M^-1 couples exactly the joints of a connected tree; a model
    with loop-closure joints couples everything)."""
    if model.loops:  # loop-closure joints and joint couplings
        return tuple(inputs)
    root = _root(model, i)
    return tuple(name for name, b in zip(inputs, input_bodies) if b > 0 and _root(model, b) == root)


def _root(model, i: int) -> int:
    while model.L[i] != 0:
        i = int(model.L[i])
    return i


def _body_of_dof(model, dof: int) -> int:
    t = model.tree
    for i in range(1, model.N + 1):
        if t.iv[i] <= dof < t.iv[i] + t.nv[i]:
            return i
    raise KeyError(dof)


def apply_parameters(spec, values: dict) -> object:
    """A copy of ModelSpec ``spec`` with the model parameters ``values`` ({source key: value},
    keys as in ``FmuVariable.source[1]``; solver keys are ignored) applied."""
    from dataclasses import replace

    gravity = list(spec.gravity)
    bodies = []
    for k, v in values.items():
        if k[0] == "gravity":
            gravity[k[1]] = float(v)
    for b in spec.bodies:
        mass = float(values.get(("mass", b.name), b.mass))
        com = tuple(float(values.get(("com", b.name, k), b.com[k])) for k in range(3))
        inertia = [list(map(float, row)) for row in b.inertia]
        for a, c in _INERTIA:
            v = float(values.get(("inertia", b.name, a, c), b.inertia[a][c]))
            inertia[a][c] = inertia[c][a] = v
        wheels = tuple(replace(w, inertia=float(values.get(("wheel", w.name), w.inertia))) for w in b.wheels)
        joint = b.joint
        if joint.spring is not None:
            joint = replace(
                joint,
                spring=replace(
                    joint.spring,
                    k=float(values.get(("spring_k", joint.name), joint.spring.k)),
                    d=float(values.get(("spring_d", joint.name), joint.spring.d)),
                ),
            )
        bodies.append(replace(b, mass=mass, com=com, inertia=tuple(map(tuple, inertia)), wheels=wheels, joint=joint))
    return replace(spec, gravity=tuple(gravity), bodies=tuple(bodies))
