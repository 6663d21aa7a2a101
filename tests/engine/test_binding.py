"""The Model's dynamics calls through the CPython binding (mbsfmu/engine/native/binding.c).

The binding calls the core's own functions with the caller's float64 arrays in place, so its
results must equal the ctypes path's (``Core``'s methods, which copy the arguments into staging
buffers first) bit for bit. Anything else (lists, other dtypes and shapes, non-finite entries,
another thread) takes the checked ctypes path: converted, or the InputError naming the argument.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.kinematics import forward_kinematics
from mbsfmu.engine.native import build
from mbsfmu.engine.native.core import NO_CALLS, Core, binding
from tests.support.paths import MODELS, ROOT

MODELS_USED = ("urdf_arm7.urdf", "spacecraft.yaml", "scara.yaml", "spring_pendulum.yaml", "urdf_quadruped.urdf")


def load(name: str):
    return mbsfmu.load_model(MODELS / name)


def state(model, rng):
    q, qd = model.random_state(rng)
    return q, qd, rng.normal(size=model.nv), rng.normal(size=model.nv)


def test_the_binding_builds_and_loads():
    assert binding() is not None  # zig and numpy's headers are there wherever the core builds


@pytest.mark.parametrize("name", MODELS_USED)
def test_model_calls_equal_the_ctypes_path_bit_for_bit(name, rng):
    model = load(name)
    ref = Core(model)  # the ctypes path (staging copies, then the same C functions)
    for _ in range(3):
        q, qd, tau, qdd = state(model, rng)
        np.testing.assert_array_equal(model.forward_dynamics(q, qd, tau), ref.forward_dynamics(q, qd, tau))
        np.testing.assert_array_equal(model.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd))
        np.testing.assert_array_equal(model.mass_matrix(q), ref.crba(q))
        if not model.loops:
            for got, want in zip(model.aba_derivatives(q, qd, tau), ref.aba_derivatives(q, qd, tau)[1:]):
                np.testing.assert_array_equal(got, want)
            for got, want in zip(model.rnea_derivatives(q, qd, qdd), ref.rnea_derivatives(q, qd, qdd)):
                np.testing.assert_array_equal(got, want)


def test_core_calls_answer_none_for_what_they_do_not_take(rng):
    model = load("scara.yaml")
    core = Core(model)
    calls = core.calls()
    q, qd, tau, _ = state(model, rng)
    np.testing.assert_array_equal(calls.forward_dynamics(q, qd, tau), core.forward_dynamics(q, qd, tau))
    assert calls.forward_dynamics(list(q), qd, tau) is None  # a list: converted by the checked path
    assert calls.forward_dynamics(q, qd.astype(np.float32), tau) is None
    assert calls.forward_dynamics(q, np.c_[qd, qd][:, 0], tau) is None  # strided
    assert calls.forward_dynamics(q, qd, np.zeros(3)) is None
    assert calls.forward_dynamics(q, np.array([np.nan, 0.0]), tau) is None  # refused by the core
    assert calls.mass_matrix(np.zeros((1, 2))) is None
    assert calls.forward_dynamics(q, qd) is None  # a wrong number of arguments
    got = []
    worker = threading.Thread(target=lambda: got.append(calls.forward_dynamics(q, qd, tau)))
    worker.start()
    worker.join()
    assert got == [None]  # the instance belongs to the thread that bound it


def test_model_calls_keep_the_checks_and_conversions(rng):
    model = load("scara.yaml")
    q, qd, tau, _ = state(model, rng)
    ref = model.forward_dynamics(q, qd, tau)
    np.testing.assert_array_equal(model.forward_dynamics(list(q), qd.tolist(), tau), ref)
    np.testing.assert_array_equal(model.forward_dynamics(q, np.c_[qd, qd][:, 0], tau), ref)  # strided
    with pytest.raises(mbsfmu.InputError, match=r"q has shape \(3,\), model .*scara.yaml has nq = 2"):
        model.forward_dynamics(np.zeros(3), qd, tau)
    with pytest.raises(mbsfmu.InputError, match="qd has non-finite entries at indices"):
        model.forward_dynamics(q, np.array([np.nan, 0.0]), tau)
    with pytest.raises(mbsfmu.InputError, match="qdd has non-finite entries"):
        model.inverse_dynamics(q, qd, np.array([0.0, np.inf]))
    with pytest.raises(mbsfmu.InputError, match="q has non-finite entries"):
        model.mass_matrix(np.array([np.nan, 0.0]))
    with pytest.raises(mbsfmu.InputError, match="tau has non-finite entries"):
        model.aba_derivatives(q, qd, np.array([np.nan, 0.0]))
    with pytest.raises(mbsfmu.InputError, match="unknown frame"):
        model.frame_pose(q, "no_such_frame")


def test_model_calls_from_another_thread_take_the_checked_path(rng):
    model = load("urdf_arm7.urdf")
    q, qd, tau, _ = state(model, rng)
    ref = model.forward_dynamics(q, qd, tau)  # binds this thread's instance
    got = []
    worker = threading.Thread(target=lambda: got.append(model.forward_dynamics(q, qd, tau)))
    worker.start()
    worker.join()
    np.testing.assert_array_equal(got[0], ref)


@pytest.mark.parametrize("name", ("urdf_arm7.urdf", "urdf_quadruped.urdf", "spacecraft.yaml"))
def test_frame_kinematics_match_the_reference(name, rng):
    """Frame pose, velocity and acceleration by the core (binding.c: mbs_fk, then the frame's
    offset) against the numpy reference kinematics; rtol 1e-12 (a few products of O(1) terms,
    ~10 eps, on each side), atol 1e-12 for entries near zero."""
    model = load(name)
    frames = list(model.frames)
    if not frames:
        pytest.skip("no named frames")
    for frame in frames[-3:]:
        i, fr = model.frames[frame]
        for _ in range(3):
            q, qd, _tau, qdd = state(model, rng)
            kin = forward_kinematics(model.tree, q, qd, qdd)
            want = (
                (kin.R[i] @ fr.R, kin.point_position(i, fr.p)),
                (kin.omega_world[i], kin.point_velocity(i, fr.p)),
                (kin.R[i] @ kin.a[i, :3], kin.point_acceleration(i, fr.p)),
            )
            got = (
                model.frame_pose(q, frame),
                model.frame_velocity(q, qd, frame),
                model.frame_acceleration(q, qd, qdd, frame),
            )
            for g, w in zip(got, want):
                for a, b in zip(g, w):
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            listed = model.frame_velocity(list(q), list(qd), frame)  # the checked path: the same
            for a, b in zip(listed, got[1]):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_no_calls_answers_none():
    assert NO_CALLS.forward_dynamics(None, None, None) is None
    assert NO_CALLS.mass_matrix(None) is None
    assert NO_CALLS.frame(None, None, None, "tcp", 0) is None


def test_without_the_binding_the_results_are_the_same(rng):
    """MBSFMU_BINDING=0 (the ctypes path only, as where the binding cannot be built): the same bits."""
    model = load("urdf_arm7.urdf")
    q, qd, tau, _ = state(model, rng)
    code = (
        "import json, sys, numpy as np, mbsfmu; from mbsfmu.engine.native.core import binding; "
        f"m = mbsfmu.load_model({str(MODELS / 'urdf_arm7.urdf')!r}); a = [np.array(v) for v in json.load(sys.stdin)]; "
        "fd, M = m.forward_dynamics(*a), m.mass_matrix(a[0]); "
        "print(json.dumps([binding() is None, fd.tobytes().hex(), M.tobytes().hex()]))"
    )
    env = {**os.environ, "MBSFMU_BINDING": "0", "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps([q.tolist(), qd.tolist(), tau.tolist()]),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    off, fd, M = json.loads(res.stdout)
    assert off
    assert fd == model.forward_dynamics(q, qd, tau).tobytes().hex()
    assert M == model.mass_matrix(q).tobytes().hex()


def test_binding_name_follows_its_source_and_interpreter(tmp_path, monkeypatch):
    (tmp_path / "binding.c").write_bytes((build.HERE / "binding.c").read_bytes())
    monkeypatch.setattr(build, "HERE", tmp_path)
    name = build.binding_name()
    assert name.startswith(f"{build.BINDING}-") and name.endswith(sysconfig.get_config_var("EXT_SUFFIX"))
    (tmp_path / "binding.c").write_text((tmp_path / "binding.c").read_text() + "\n/* changed */\n")
    assert build.binding_name() != name


def test_a_missing_python_header_is_a_build_error(tmp_path, monkeypatch):
    """No Python.h (a Python without its development headers): BuildError saying so, before zig runs."""
    monkeypatch.setattr(build.sysconfig, "get_paths", lambda: {"include": str(tmp_path)})
    with pytest.raises(build.BuildError, match=r"Python.h, not found in"):
        build.build_binding(tmp_path / "out")


def test_the_model_binds_its_calls_at_the_first_call(rng):
    """The fast path is wired: after the first call the Model holds its core's Calls (binding.c),
    whose answers are the Model's."""
    model = load("urdf_arm7.urdf")
    q, qd, tau, _ = state(model, rng)
    qdd = model.forward_dynamics(q, qd, tau)
    calls = model._calls
    assert type(calls).__name__ == "Calls"
    np.testing.assert_array_equal(calls.forward_dynamics(q, qd, tau), qdd)
    frame = list(model.frames)[-1]
    for got, want in zip(calls.frame(q, None, None, frame, 0), model.frame_pose(q, frame)):
        np.testing.assert_array_equal(got, want)
    assert calls.frame(q, None, None, "no_such_frame", 0) is None


# ---- the Model's methods in C (binding.c Method) and out= ---------------------------------------
FRESH_AND_OUT = (  # (method, the arguments after q, out's shape)
    ("mass_matrix", lambda q, qd, tau, qdd: (q,), 2),
    ("forward_dynamics", lambda q, qd, tau, qdd: (q, qd, tau), 1),
    ("inverse_dynamics", lambda q, qd, tau, qdd: (q, qd, qdd), 1),
)


def out_array(model, nd):
    return np.full((model.nv,) * nd, np.nan)


@pytest.mark.parametrize("name", ("urdf_arm7.urdf", "fourbar.yaml", "spring_pendulum.yaml"))
@pytest.mark.parametrize("backend", ("auto", "native", "python"))
def test_out_holds_the_fresh_result_bit_for_bit(name, backend, rng):
    """out= returns out, holding the bits the call returns as a new array; on the first call (the
    Python method, which binds) and on later ones (binding.c's Method), for every backend."""
    for method, args, nd in FRESH_AND_OUT:
        model = load(name)
        q, qd, tau, qdd = state(model, rng)
        fn = getattr(model, method)
        out = out_array(model, nd)
        assert fn(*args(q, qd, tau, qdd), backend=backend, out=out) is out  # the first call binds
        np.testing.assert_array_equal(out, getattr(model, method)(*args(q, qd, tau, qdd), backend=backend))
        for _ in range(2):
            q, qd, tau, qdd = state(model, rng)
            out = out_array(model, nd)
            got = getattr(model, method)(*args(q, qd, tau, qdd), backend=backend, out=out)
            assert got is out
            np.testing.assert_array_equal(out, getattr(model, method)(*args(q, qd, tau, qdd), backend=backend))
        if backend == "python" and method == "mass_matrix":
            np.testing.assert_allclose(out, Core(model).crba(q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ("urdf_arm7.urdf", "spacecraft.yaml"))
def test_out_may_be_an_input(name, rng):
    """out the array of an argument (qdd into tau's or qd's memory, tau into qdd's or qd's; M into
    memory starting at q's): the results into fresh memory (binding.c then leaves the call to the
    Python method, which computes into new memory and copies: ABA reads qd after it writes qdd)."""
    model = load(name)
    q, qd, tau, qdd = state(model, rng)
    want_fd, want_id, want_M = (
        model.forward_dynamics(q, qd, tau),
        model.inverse_dynamics(q, qd, qdd),
        model.mass_matrix(q),
    )
    for args, k in (((q, qd, tau), 2), ((q, qd, tau), 1)):
        a = [x.copy() for x in args]
        assert model.forward_dynamics(*a, out=a[k]) is a[k]
        np.testing.assert_array_equal(a[k], want_fd)
    for args, k in (((q, qd, qdd), 2), ((q, qd, qdd), 1)):
        a = [x.copy() for x in args]
        assert model.inverse_dynamics(*a, out=a[k]) is a[k]
        np.testing.assert_array_equal(a[k], want_id)
    M = np.zeros((model.nv, model.nv))
    qM = M.reshape(-1)[: model.nq]
    if qM.size == model.nq:
        qM[:] = q
        assert model.mass_matrix(qM, out=M) is M
        np.testing.assert_array_equal(M, want_M)


@pytest.mark.parametrize("method, args, nd", FRESH_AND_OUT)
def test_a_bad_out_is_an_input_error_naming_it(method, args, nd, rng):
    model = load("urdf_arm7.urdf")
    q, qd, tau, qdd = state(model, rng)
    shape = (model.nv,) * nd
    ro = np.zeros(shape)
    ro.flags.writeable = False
    bad = {
        "shape": np.zeros((model.nv + 1,) * nd),
        "dtype float32": np.zeros(shape, np.float32),
        "not C-contiguous": np.zeros((model.nv, 2 * model.nv))[:, ::2] if nd == 2 else np.zeros(2 * model.nv)[::2],
        "read-only": ro,
    }
    for bound in (False, True):  # the Python method, then (bound by a call) binding.c's Method
        if bound:
            getattr(model, method)(*args(q, qd, tau, qdd))
            assert type(getattr(model, method)).__name__ == "Method"
        for what, out in bad.items():
            with pytest.raises(mbsfmu.InputError, match=rf"out is {what}.*expected a writeable C-contiguous float64"):
                getattr(model, method)(*args(q, qd, tau, qdd), out=out)
        with pytest.raises(mbsfmu.InputError, match=r"out must be a numpy float64 array of shape .*not list"):
            getattr(model, method)(*args(q, qd, tau, qdd), out=np.zeros(shape).tolist())


C_METHODS = ("forward_dynamics", "inverse_dynamics", "mass_matrix", "frame_pose", "frame_velocity")
C_METHODS += ("frame_acceleration", "aba_derivatives", "rnea_derivatives")  # the last two: trees only


def spied(monkeypatch, log: list):
    """Model's dynamics methods turned into ones that log their name, then run (so a call that
    binding.c's Method answers leaves no entry: it never reaches the Python method); returns the
    original methods (as attributes)."""
    import functools
    import types

    from mbsfmu.engine.model import Model

    def logging(name, fn):
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            log.append(name)
            return fn(self, *args, **kwargs)

        return method

    original = types.SimpleNamespace(**{name: Model.__dict__[name] for name in C_METHODS})
    for name in C_METHODS:
        monkeypatch.setattr(Model, name, logging(name, Model.__dict__[name]))
    return original


def test_the_methods_run_in_c_after_the_first_call(rng, monkeypatch):
    """After the first call the dynamics methods are binding.c's Methods in the instance dict (the
    derivatives too on a tree, not with closed loops): the default case, positional or by keyword,
    runs in C (the Python method is not called) with the Python method's results; every other case
    (another backend, f_ext, method, a list, an unknown or repeated keyword) reaches the Python
    method, with its results and errors."""
    log = []
    py = spied(monkeypatch, log)
    model = load("urdf_arm7.urdf")
    q, qd, tau, qdd = state(model, rng)
    model.mass_matrix(q)
    assert log == ["mass_matrix"]  # the first call binds
    want = py.mass_matrix(model, q)
    assert all(type(model.__dict__[n]).__name__ == "Method" for n in C_METHODS)
    frame = list(model.frames)[-1]
    out = np.empty((model.nv, model.nv))
    for got in (
        model.mass_matrix(q),
        model.mass_matrix(q=q),
        model.mass_matrix(q, "native"),
        model.mass_matrix(q, backend="auto"),
        model.mass_matrix(backend="native", q=q, out=None),
        model.mass_matrix(q, out=out),
        model.mass_matrix(out=out, q=q),
    ):
        np.testing.assert_array_equal(got, want)
    fd = py.forward_dynamics(model, q, qd, tau)
    for got in (
        model.forward_dynamics(q, qd, tau),
        model.forward_dynamics(q, qd, tau=tau, f_ext=None, method="aba"),
        model.forward_dynamics(tau=tau, qd=qd, q=q, backend="native"),
        model.forward_dynamics(q, qd, tau, None, "aba", "auto", np.empty(model.nv)),
    ):
        np.testing.assert_array_equal(got, fd)
    np.testing.assert_array_equal(model.inverse_dynamics(q, qd, qdd=qdd), py.inverse_dynamics(model, q, qd, qdd))
    np.testing.assert_array_equal(
        model.inverse_dynamics(q, qd, qdd, backend="native", f_ext=None, out=None),
        py.inverse_dynamics(model, q, qd, qdd),
    )
    for got, w in zip(model.aba_derivatives(q, qd, tau=tau), py.aba_derivatives(model, q, qd, tau)):
        np.testing.assert_array_equal(got, w)
    for got, w in zip(model.rnea_derivatives(q, qd=qd, qdd=qdd, f_ext=None), py.rnea_derivatives(model, q, qd, qdd)):
        np.testing.assert_array_equal(got, w)
    for m, args in (("frame_pose", (q,)), ("frame_velocity", (q, qd)), ("frame_acceleration", (q, qd, qdd))):
        for got, w in zip(getattr(model, m)(*args, frame=frame), getattr(py, m)(model, *args, frame)):
            np.testing.assert_array_equal(got, w)
    assert log == ["mass_matrix"]  # none of these reached the Python methods
    np.testing.assert_array_equal(model.mass_matrix(q, backend="python"), crba_reference(model, q))
    np.testing.assert_array_equal(model.mass_matrix(list(q)), want)
    np.testing.assert_allclose(model.forward_dynamics(q, qd, tau, method="crba"), fd, rtol=1e-9, atol=1e-9)
    f_ext = np.zeros((model.N, 6))
    np.testing.assert_array_equal(model.inverse_dynamics(q, qd, qdd, f_ext), py.inverse_dynamics(model, q, qd, qdd))
    model.aba_derivatives(q, qd, tau, f_ext=f_ext)
    with pytest.raises(mbsfmu.InputError, match="unknown frame"):
        model.frame_velocity(q, qd, "no_such_frame")
    with pytest.raises(mbsfmu.InputError, match="backend 'gpu'"):
        model.mass_matrix(q, backend="gpu")
    with pytest.raises(mbsfmu.InputError, match="method 'rk'"):
        model.forward_dynamics(q, qd, tau, method="rk")
    with pytest.raises(TypeError, match="unexpected keyword argument 'qq'"):
        model.mass_matrix(qq=q)
    with pytest.raises(TypeError, match="multiple values for argument 'q'"):
        model.mass_matrix(q, q=q)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        model.forward_dynamics(q, qd)
    with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments"):
        model.mass_matrix(q, "auto", None, None)
    assert log[1:] == ["mass_matrix"] * 2 + ["forward_dynamics", "inverse_dynamics", "aba_derivatives"] + [
        "frame_velocity",
        "mass_matrix",
        "forward_dynamics",
        "mass_matrix",
        "mass_matrix",
        "forward_dynamics",
        "mass_matrix",
    ]


def crba_reference(model, q):
    from mbsfmu.engine.dynamics.crba import crba

    return crba(model.tree, q)


def test_closed_loops_keep_the_derivatives_refusal(rng):
    model = load("fourbar.yaml")
    q, qd, tau, _ = state(model, rng)
    model.mass_matrix(q)  # binds
    assert "mass_matrix" in model.__dict__ and "aba_derivatives" not in model.__dict__
    for _ in range(2):
        with pytest.raises(mbsfmu.InputError, match="analytic derivatives of ABA and RNEA are for trees"):
            model.aba_derivatives(q, qd, tau)


def test_help_and_signature_document_the_methods(rng):
    import inspect
    import pydoc

    model = load("scara.yaml")
    q, _qd, _tau, _ = state(model, rng)
    model.mass_matrix(q)
    for name in C_METHODS:
        fn, py = getattr(model, name), getattr(type(model), name)
        assert type(fn).__name__ == "Method"
        assert inspect.signature(fn) == inspect.signature(py.__get__(model))
        assert fn.__doc__ == py.__doc__ and fn.__name__ == name
        text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
        assert f"{name}(q" in text and py.__doc__.splitlines()[0] in text


def test_a_method_with_other_parameters_is_refused(rng):
    """binding.c routes arguments by position: a Python method whose parameters differ is a
    ValueError at binding time, not a call with its arguments in the wrong places."""
    model = load("scara.yaml")
    q, *_ = state(model, rng)
    model.mass_matrix(q)

    def mass_matrix(q, out=None, backend="auto"):
        return None

    with pytest.raises(ValueError, match="takes the parameters"):
        binding().method(model._calls, mass_matrix, "mass_matrix", ("q", "out", "backend"))
    with pytest.raises(ValueError, match="no Method for kinetic_energy"):
        binding().method(model._calls, mass_matrix, "kinetic_energy", ("q", "qd"))


def test_a_model_with_its_methods_in_c_is_collected(rng):
    """The Methods hold the bound Python methods (a cycle through the instance dict), which the
    garbage collector breaks: a dropped model is freed."""
    import gc
    import weakref

    model = load("scara.yaml")
    q, qd, tau, _ = state(model, rng)
    model.forward_dynamics(q, qd, tau)
    model.forward_dynamics(q, qd, tau)
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None


def test_mass_matrix_out_from_another_thread(rng):
    model = load("urdf_arm7.urdf")
    q, *_ = state(model, rng)
    want = model.mass_matrix(q)  # binds this thread's instance
    out = out_array(model, 2)
    got = []
    worker = threading.Thread(target=lambda: got.append(model.mass_matrix(q, out=out)))
    worker.start()
    worker.join()
    assert got[0] is out
    np.testing.assert_array_equal(out, want)


def test_a_subclass_override_runs_on_every_call(rng):
    """A Model subclass's own mass_matrix (another signature, or the same) is what every call runs:
    no Method is put in front of an override; the methods it does not override still run in C."""
    from mbsfmu.engine.model import Model

    model = load("scara.yaml")
    q, qd, tau, _ = state(model, rng)

    class Scaled(Model):
        def mass_matrix(self, q, backend="auto", out=None):
            return 2.0 * super().mass_matrix(q, backend, out)

        def frame_pose(self, q):
            return "mine"

    want = model.mass_matrix(q)
    model.__class__ = Scaled
    model.__dict__.pop("_calls")
    for name in C_METHODS:
        model.__dict__.pop(name)
    for _ in range(3):
        np.testing.assert_array_equal(model.mass_matrix(q), 2.0 * want)
        assert model.frame_pose(q) == "mine"
    assert "mass_matrix" not in model.__dict__ and "frame_pose" not in model.__dict__
    assert type(model.__dict__["forward_dynamics"]).__name__ == "Method"
