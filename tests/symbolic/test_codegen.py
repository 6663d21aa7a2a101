"""Generated C (compiled by zig) and the `mbsfmu derive` command."""

from __future__ import annotations

import ctypes as C
import importlib.util

import numpy as np
import pytest

import mbsfmu
from mbsfmu.cli import main
from mbsfmu.engine.native.build import host_target, zig_cc
from mbsfmu.symbolic.codegen import c_source, identifier, load_numpy, numpy_source
from mbsfmu.symbolic.scheme import derive
from mbsfmu.symbolic.verify import engine_pairs, random_states
from tests.support.general_arm import write_general_arm

MODELS = "scenarios/models/"
CFLAGS = ("-shared", "-fPIC", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-lm")


def _c_namespace(eq, tmp_path) -> dict:
    """The generated C compiled into a shared library, wrapped with the NumPy module's calling
    convention (eom, forward_dynamics or constraints) so the same checks apply."""
    header, source = c_source(eq)
    px = identifier(eq.name)
    (tmp_path / f"{px}_eom.h").write_text(header)
    (tmp_path / f"{px}_eom.c").write_text(source)
    so = zig_cc([tmp_path / f"{px}_eom.c"], host_target(), tmp_path / f"lib{px}.so", CFLAGS, progress=lambda m: None)
    lib = C.CDLL(str(so))
    nv, m = eq.nv, 0 if eq.Phi is None else eq.Phi.rows
    p = np.ctypeslib.as_array((C.c_double * max(len(eq.params), 1)).in_dll(lib, f"{px}_default_params"))
    dp = C.POINTER(C.c_double)

    def arr(x):
        x = np.ascontiguousarray(x, dtype=float)
        return x, x.ctypes.data_as(dp)

    def eom(q, qd, u):
        M, h, f = np.zeros((nv, nv)), np.zeros(nv), np.zeros(nv)
        keep = [arr(a) for a in (q, qd, u, p)]
        getattr(lib, f"{px}_eom")(*(k[1] for k in keep), *(x.ctypes.data_as(dp) for x in (M, h, f)))
        return M, h, f

    ns = {"eom": eom}
    if m:

        def constraints(q, qd):
            Phi, A, gamma = np.zeros(m), np.zeros((m, nv)), np.zeros(m)
            keep = [arr(a) for a in (q, qd, p)]
            getattr(lib, f"{px}_constraints")(*(k[1] for k in keep), *(x.ctypes.data_as(dp) for x in (Phi, A, gamma)))
            return Phi, A, gamma

        ns["constraints"] = constraints
    else:

        def forward_dynamics(q, qd, u):
            qdd = np.zeros(nv)
            keep = [arr(a) for a in (q, qd, u, p)]
            fn = getattr(lib, f"{px}_forward_dynamics")
            assert fn(*(k[1] for k in keep), qdd.ctypes.data_as(dp)) == 0
            return qdd

        ns["forward_dynamics"] = forward_dynamics
    return ns


@pytest.mark.integration
@pytest.mark.parametrize("name", ["scara", "fourbar", "spacecraft", "crank_slider", "general_arm7"])
def test_generated_c_equals_the_engine_and_the_numpy_code(tmp_path, name):
    path = write_general_arm(tmp_path, 7) if name == "general_arm7" else f"{MODELS}{name}.yaml"
    model = mbsfmu.load_model(path)
    eq = derive(model)
    c_ns, py_ns = _c_namespace(eq, tmp_path), load_numpy(numpy_source(eq))
    for q, qd, u in random_states(model, 3):
        pairs = engine_pairs(model, c_ns, q, qd, u)
        for what, (mine, engine, atol) in pairs.items():
            np.testing.assert_allclose(mine, engine, rtol=0, atol=atol, err_msg=what)
        for a, b in zip(c_ns["eom"](q, qd, u), py_ns["eom"](q, qd, u)):  # one expression, two languages
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14 * max(1.0, np.abs(b).max()))


def test_forward_dynamics_refuses_an_indefinite_mass_matrix(tmp_path):
    """The generated C's Cholesky reports a mass matrix that is not positive definite (-1), here
    for a negative mass passed as a parameter, instead of returning NaN accelerations."""
    pytest.importorskip("ziglang")
    eq = derive(mbsfmu.load_model(f"{MODELS}scara.yaml"))
    header, source = c_source(eq)
    (tmp_path / "scara_eom.h").write_text(header)
    (tmp_path / "scara_eom.c").write_text(source)
    so = zig_cc([tmp_path / "scara_eom.c"], host_target(), tmp_path / "libs.so", CFLAGS, progress=lambda m: None)
    lib = C.CDLL(str(so))
    names = [n.decode() for n in (C.c_char_p * len(eq.params)).in_dll(lib, "scara_param_names")]
    p = np.array(list(eq.params.values()))
    p[names.index("I_link1_zz")] = p[names.index("I_link2_zz")] = -10.0
    dp = C.POINTER(C.c_double)
    q, qd, u, qdd = np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2)
    assert lib.scara_forward_dynamics(*(x.ctypes.data_as(dp) for x in (q, qd, u, p, qdd))) == -1


def test_derive_command_writes_checked_code(tmp_path, capsys):
    assert main(["derive", f"{MODELS}trolley_pendulum.yaml", "-o", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "checked against the numeric engine at 3 random states" in out
    progress = [line.rsplit(" (", 1)[0] for line in captured.err.splitlines()]  # without the elapsed time
    assert progress[:2] == ["derive: body 1/2 (trolley): kinematics", "derive: body 2/2 (pendulum): kinematics"]
    assert "derive: checking against the numeric engine at 3 random states" in progress
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"trolley_pendulum_eom.{e}" for e in ("c", "h", "py", "tex", "txt")]
    spec = importlib.util.spec_from_file_location("tp_eom", tmp_path / "trolley_pendulum_eom.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mbsfmu.load_model(f"{MODELS}trolley_pendulum.yaml")
    q, qd, u = np.array([0.2, -0.7]), np.array([0.3, 1.1]), np.array([0.5, -0.2])
    np.testing.assert_allclose(mod.forward_dynamics(q, qd, u), model.forward_dynamics(q, qd, u), rtol=1e-12)
    assert mod.Q_NAMES == ("q1", "q2") and mod.U_NAMES == ("q1.tau", "q2.tau")
    tex = (tmp_path / "trolley_pendulum_eom.tex").read_text()
    assert "\\begin{align*}" in tex and "m_{pendulum}" in tex


def test_derive_refuses_a_model_past_the_limit_at_once(tmp_path, capsys):
    assert main(["derive", f"{MODELS}urdf_arm7.urdf", "-o", str(tmp_path / "x"), "--max-series", "7"]) == 2
    err = capsys.readouterr().err
    assert "8 moving joints in series" in err and "--max-series" in err
    assert "derive: body" not in err  # refused before any algebra
    assert not (tmp_path / "x").exists()


def test_derive_command_takes_the_panda_with_the_defaults(tmp_path, capsys):
    """urdf_arm7 (8 joints in series) was refused by the defaults and took 26 s past them (issue 37
    item 8); every body reports its progress."""
    assert main(["derive", f"{MODELS}urdf_arm7.urdf", "-o", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "checked against the numeric engine" in captured.out
    model = mbsfmu.load_model(f"{MODELS}urdf_arm7.urdf")
    for i, body in enumerate(model.bodies, start=1):
        assert f"derive: body {i}/{model.N} ({body.name}): kinematics" in captured.err


@pytest.mark.parametrize("option", ["--max-nv", "--max-series"])
@pytest.mark.parametrize("value", ["-1", "0", "2.5"])
def test_derive_refuses_a_limit_that_is_not_a_whole_number_of_at_least_1(tmp_path, run_cli, option, value):
    result = run_cli("derive", f"{MODELS}compound_pendulum.yaml", "-o", tmp_path / "x", option, value)
    assert result.returncode == 2 and f"argument {option}: " in result.stderr, result.stderr
    assert not (tmp_path / "x").exists()
