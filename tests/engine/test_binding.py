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
