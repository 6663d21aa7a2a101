"""``mbsfmu linearize``: each format written and read back equal to ``linearize``; the --at,
--inputs, --outputs and --equilibrium options; bad input as one message and exit status 2."""

import json

import numpy as np
import pytest
from scipy.io import loadmat

import mbsfmu
from mbsfmu.linear.statespace import linearize
from tests.support.paths import MODELS

SCARA = MODELS / "scara.yaml"


def read(path):
    """The file's keys as numpy arrays (matrices, vectors) and lists of str (names)."""
    if path.suffix == ".npz":
        with np.load(path) as z:
            return {k: (z[k].tolist() if z[k].dtype.kind == "U" else z[k]) for k in z.files}
    if path.suffix == ".mat":
        m = loadmat(path)
        out = {}
        for k, v in m.items():
            if k.startswith("__"):
                continue
            if v.dtype == object:  # cell array of char
                out[k] = [str(c[0]) for c in v.ravel()]
            elif v.dtype.kind == "U":
                out[k] = str(v[0])
            else:
                out[k] = v
        return out
    return json.loads(path.read_text())


@pytest.mark.parametrize("suffix", [".npz", ".mat", ".json"])
def test_writes_each_format(run_cli, tmp_path, suffix):
    out = tmp_path / f"lin{suffix}"
    r = run_cli(
        "linearize", SCARA, "--at", "q.q1=-1.5,q.q2=0.1", "--at", "u.q2.tau=0.2", "--equilibrium",
        "--outputs", "q.q1,engine.PE,qdd.q2", "-o", out,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}: model scara, 4 states, 2 inputs, 3 outputs" in r.stdout
    assert "eigenvalues of A" in r.stdout
    model = mbsfmu.load_model(SCARA)
    ref = linearize(model, [-1.5, 0.1], u0=[0.0, 0.2], outputs=["q.q1", "engine.PE", "qdd.q2"], equilibrium=True)
    got = read(out)
    for key in ("A", "B", "C", "D"):
        np.testing.assert_array_equal(
            np.asarray(got[key], dtype=float).reshape(getattr(ref, key).shape), getattr(ref, key)
        )
    for key in ("q0", "qd0", "u0", "y0", "qdd0"):
        np.testing.assert_array_equal(np.asarray(got[key], dtype=float).ravel(), getattr(ref, key))
    assert list(got["state_names"]) == ["q.q1", "q.q2", "qd.q1", "qd.q2"]
    assert list(got["input_names"]) == ["q1.tau", "q2.tau"]
    assert list(got["output_names"]) == ["q.q1", "engine.PE", "qdd.q2"]
    assert list(got["q_names"]) == ["q.q1", "q.q2"] and list(got["u_names"]) == ["q1.tau", "q2.tau"]
    assert got["model"] == "scara"


def test_inputs_select_columns(run_cli, tmp_path):
    out = tmp_path / "lin.npz"
    r = run_cli("linearize", MODELS / "spacecraft.yaml", "--inputs", "thr1.thrust,rw2.torque", "-o", out)
    assert r.returncode == 0, r.stderr
    got = read(out)
    assert got["input_names"] == ["thr1.thrust", "rw2.torque"] and got["B"].shape == (24, 2)
    assert got["A"].shape == (24, 24) and len(got["q0"]) == 13


@pytest.mark.parametrize(
    "args, message",
    [
        (["--at", "q.q9=1"], "--at q.q9: no such state or input of model"),
        (["--at", "q.q1"], "--at 'q.q1': expected NAME=VALUE"),
        (["--at", "q.q1=nan"], "--at 'q.q1=nan': expected NAME=VALUE with a finite number"),
        (["--at", "qd.q1=0.5", "--equilibrium"], "--equilibrium solves for a state at rest"),
        (["--outputs", "KE"], "unknown output 'KE'; the model has outputs:"),
        (["--inputs", "tau"], "unknown input 'tau'"),
    ],
)
def test_bad_input(run_cli, tmp_path, args, message):
    r = run_cli("linearize", SCARA, *args, "-o", tmp_path / "x.npz")
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.npz").exists()


def test_bad_suffix_and_model(run_cli, tmp_path):
    r = run_cli("linearize", SCARA, "-o", tmp_path / "x.csv")
    assert r.returncode == 2 and "the suffix must be one of .npz, .mat, .json" in r.stderr
    r = run_cli("linearize", tmp_path / "none.yaml", "-o", tmp_path / "x.npz")
    assert r.returncode == 2 and "does not exist" in r.stderr
    bare = tmp_path / "fourbar_bare.yaml"  # the four-bar without its loop's independent joints
    bare.write_text((MODELS / "fourbar.yaml").read_text().replace("    independent: [q1]\n", ""))
    r = run_cli("linearize", bare, "-o", tmp_path / "x.npz")
    assert r.returncode == 2 and "closure declare no independent joints" in r.stderr and "Traceback" not in r.stderr


def test_closed_loop_in_independent_coordinates(run_cli, tmp_path):
    out = tmp_path / "fourbar.json"
    r = run_cli("linearize", MODELS / "fourbar.yaml", "--equilibrium", "-o", out)
    assert r.returncode == 0, r.stderr
    got = read(out)
    assert got["state_names"] == ["q.q1", "qd.q1"] and len(got["q0"]) == 3
