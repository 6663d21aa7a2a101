"""plots.py: every joint plotted, grouped, wheel angles left out for their
rates, legends outside the data, pages for large models; conservation.png plots what each check
bounds with its bound and marks a failure; nothing dies on huge, infinite or NaN values."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from mbsfmu.scenario.plots import PANELS_PER_PAGE, PER_PANEL, joint_kinds, panel_groups, plot_run
from mbsfmu.trajectory import Trajectory
from tests.support.trees import random_tree

matplotlib.use("Agg")


@pytest.fixture
def saved(monkeypatch):
    """The figures plot_run saves, by file name: [(title, y label, legend labels, ylim)] per axes."""
    from matplotlib.figure import Figure

    out = {}
    real = Figure.savefig

    def savefig(self, path, *a, **k):
        out[str(path).rsplit("/", 1)[-1]] = [
            (
                ax.get_title(loc="left"),
                ax.get_ylabel(),
                [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else [],
                ax.get_ylim(),
            )
            for ax in self.axes
        ]
        return real(self, path, *a, **k)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return out


def spacecraft_like(n_t=50):
    """Two hinges, four wheels spinning to ~1e4 rad, a free base: 7 + 4 + 7 coordinates."""
    t = np.linspace(0, 10, n_t)
    cols = {"time": t}
    for j in ("hinge_l", "hinge_r"):
        cols[f"q.{j}"], cols[f"qd.{j}"] = 0.3 * np.sin(t), 0.3 * np.cos(t)
    for k in range(1, 5):
        cols[f"q.rw{k}"], cols[f"qd.rw{k}"] = 1000.0 * k * t, np.full(n_t, 1000.0 * k)
    for k in range(1, 8):
        cols[f"q.base[{k}]"] = np.full(n_t, 1.0 if k == 4 else 0.0)
    for k in range(1, 7):
        cols[f"qd.base[{k}]"] = 0.01 * np.sin(k * t)
    kinds = {"hinge_l": "revolute", "hinge_r": "revolute", "base": "free", **{f"rw{k}": "wheel" for k in range(1, 5)}}
    return Trajectory.from_columns(cols), kinds


def test_every_joint_is_plotted_and_wheel_angles_are_not(tmp_path, saved):
    traj, kinds = spacecraft_like()
    plot_run(traj, tmp_path, "sc", kinds)
    axes = saved["joint_states.png"]
    labels = [lab for _title, _y, labs, _lim in axes for lab in labs]
    expect = [c.split(".", 1)[1] for c in traj if c.startswith("qd.")] + [
        c.split(".", 1)[1] for c in traj if c.startswith("q.") and not c.startswith("q.rw")
    ]
    assert sorted(labels) == sorted(expect)  # rw4 included; wheel angles left out
    titles = [a[0] for a in axes]
    assert any("wheel" in t for t in titles) and any("quaternion" in t for t in titles)
    for _title, _y, labs, _ylim in axes:  # no panel mixes wheel rates with hinge rates
        assert len(labs) <= PER_PANEL and not ({"hinge_l", "rw1"} <= set(labs))
    # without the model, the spinning joints are found from their data (range > 4 pi)
    assert any(
        "rw1" in cols[0] and "wheel" in title
        for title, _l, cols in [(t, lab, c) for t, lab, c in panel_groups(traj, None) if c and c[0].startswith("qd.rw")]
    )


@pytest.mark.slow  # renders several pages (~10 s on a shared machine)
def test_large_branched_model_pages_and_distinct_colours(tmp_path, saved, rng):
    model = random_tree(rng, 40, types=("revolute", "prismatic", "spherical"))
    n_t = 20
    t = np.linspace(0, 1, n_t)
    cols = {"time": t}
    names = []
    from mbsfmu.sim.simulator import Simulator

    sim = Simulator(model)
    for name in sim.state_names[: model.nq + model.nv]:
        cols[name] = rng.uniform(-1, 1, n_t)
        names.append(name)
    traj = Trajectory.from_columns(cols)
    paths = plot_run(traj, tmp_path, "big", joint_kinds(model))
    assert all(p.exists() for p in paths) and len([p for p in paths if "joint_states" in p.name]) > 1
    labels = [
        lab
        for name, axes in saved.items()
        if name.startswith("joint_states")
        for _t, _y, labs, _l in axes
        for lab in labs
    ]
    assert sorted(labels) == sorted(n.split(".", 1)[1] for n in names)
    assert all(len(axes) <= PANELS_PER_PAGE for name, axes in saved.items() if name.startswith("joint_states"))


def test_huge_infinite_and_nan_values_do_not_break_the_plots(tmp_path, saved):
    """A stiff blow-up reaches 1e151 then inf/NaN: both PNGs are written with finite limits."""
    traj, kinds = spacecraft_like()
    cols = {c: traj[c].copy() for c in traj}
    cols["q.hinge_l"][30:] = 1e151
    cols["qd.hinge_l"][40:] = np.inf
    cols["qd.hinge_r"][45:] = np.nan
    blown = Trajectory.from_columns(cols)
    series = {
        "energy_balance": (
            np.r_[np.linspace(0, 1e-9, 40), np.full(10, np.inf)],
            {"quantity": "|B - B(t0)|", "unit": "J", "bound": 1e-6, "bound_on": "max_rel", "passed": False},
        ),
        "p_sys_zero": (
            np.full(50, 1e300),
            {"quantity": "|p_sys|", "unit": "N s", "bound": 0.0, "bound_on": "max_abs", "passed": False},
        ),
    }
    paths = plot_run(blown, tmp_path, "blowup", kinds, series)
    assert all(p.exists() for p in paths)
    for axes in saved.values():
        assert all(np.isfinite(lim).all() for _t, _y, _l, lim in axes)


def test_conservation_plots_each_check_against_its_bound_and_marks_failures(tmp_path, saved):
    traj, kinds = spacecraft_like()
    n = traj.n_rows
    checks = {
        "H_sys_constant": (
            np.linspace(0, 1e-12, n),
            {"quantity": "|H_sys - H_sys(t0)|", "unit": "N m s", "bound": 1e-11, "bound_on": "max_rel", "passed": True},
        ),
        "energy_balance": (
            np.linspace(0, 1e-5, n),
            {"quantity": "|B - B(t0)|", "unit": "J", "bound": 1e-6, "bound_on": "max_rel", "passed": False},
        ),
    }
    plot_run(traj, tmp_path, "sc", kinds, checks)
    axes = saved["conservation.png"]
    assert [a[0].split(":")[0] for a in axes] == ["H_sys_constant", "energy_balance"]
    assert axes[0][0].endswith("PASS") and axes[1][0].endswith("FAIL")
    assert "bound 1e-11" in axes[0][2] and "bound 1e-06" in axes[1][2]
    lo, hi = axes[1][3]
    assert lo <= 1e-6 <= hi and hi >= 1e-5  # the bound and the failing maximum are in view


def test_a_large_group_is_one_readable_band(tmp_path, saved):
    """300 joint angles and rates: one panel each (min-max band, median, the widest joints named),
    not 60 panels over 8 pages; the band spans every curve."""
    from mbsfmu.scenario.plots import ENVELOPE_ABOVE, HIGHLIGHT

    n, n_t = 300, 25
    t = np.linspace(0, 1, n_t)
    cols = {"time": t}
    amp = np.linspace(0.01, 1.0, n)
    for k in range(n):
        cols[f"q.j{k}"], cols[f"qd.j{k}"] = amp[k] * np.sin(t), amp[k] * np.cos(t)
    traj = Trajectory.from_columns(cols)
    paths = plot_run(traj, tmp_path, "chain", {f"j{k}": "revolute" for k in range(n)})
    assert [p.name for p in paths] == ["joint_states.png", "conservation.png"]
    axes = saved["joint_states.png"]
    assert n > ENVELOPE_ABOVE and len(axes) == 2
    for (title, _y, labels, (lo, hi)), prefix in zip(axes, ("q.", "qd.")):
        assert f"{n} curves" in title
        assert labels[:2] == [f"min..max of {n}", "median"] and len(labels) == 2 + HIGHLIGHT
        assert set(labels[2:]) == {f"j{k}" for k in range(n - HIGHLIGHT, n)}  # the widest ranges, named
        data = np.array([cols[c] for c in cols if c.startswith(prefix)])
        assert lo <= data.min() and hi >= data.max()  # every curve inside the axis
