"""campaign.png: failed and errored runs drawn apart and numbered in the drawn value vs outcome
scatter."""

import numpy as np
from matplotlib.figure import Figure

from mbsfmu.campaign import picture
from mbsfmu.campaign.picture import plot_campaign, rows_columns, scatter


def _rows():
    rows = [{"run": i, "k": 1.0 + i, "passed": True, "error": "", "check.e.max_rel": 1e-12 * (1 + i)} for i in range(8)]
    rows.append({"run": 8, "k": 9.0, "passed": False, "error": "", "check.e.max_rel": 1e-6})
    rows.append({"run": 9, "k": 10.0, "passed": False, "error": "Timeout: the run took more than 1 s"})
    return rows


def test_scatter_numbers_failed_and_errored_runs():
    ax = Figure().subplots()
    scatter(ax, "k", "check.e.max_rel", rows_columns(_rows(), ["k"]), {"e": ("rel", 1e-9)})
    labels = {t.get_text(): t.get_color() for t in ax.texts}
    assert labels == {"8": "tab:red", "9": "k"}  # only the failed (red) and errored (black) runs, numbered
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == ["passed (8)", "failed (1)", "errored (1)"] and "bound 1e-09" in legend
    errored_y = ax.collections[2].get_offsets()[0][1]
    assert errored_y < min(ax.collections[0].get_offsets()[:, 1])  # the errored row sits below every value


def test_picture_written_with_errored_runs(tmp_path):
    path = plot_campaign(tmp_path, "t", rows_columns(_rows(), ["k"]), {}, ["k"], [], {"e": ("rel", 1e-9)})
    assert path.stat().st_size > 10_000


def test_a_scatter_of_many_runs_draws_a_bounded_evenly_spaced_sample_and_says_so(monkeypatch):
    monkeypatch.setattr(picture, "SCATTER_POINTS", 50)
    n = 1000
    rows = [{"run": i, "k": float(i), "passed": i % 100 != 7, "error": "", "check.e.max_rel": 1e-12} for i in range(n)]
    rows[7]["check.e.max_rel"] = 1e-6
    ax = Figure().subplots()
    scatter(ax, "k", "check.e.max_rel", rows_columns(rows, ["k"]), {})
    passed_xy, failed_xy = ax.collections[0].get_offsets(), ax.collections[1].get_offsets()
    assert len(passed_xy) == 50 and len(failed_xy) == 10  # 990 passed sampled; the 10 failed all drawn
    x = np.asarray(passed_xy[:, 0])
    assert x[0] == 0.0 and x[-1] == 999.0 and np.all(np.diff(x) > 0)  # first and last, in run order
    assert np.ptp(np.diff(x)) <= 2.0  # evenly spaced over the runs (within one run either way)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["passed (990, 50 drawn)", "failed (10)"]
