"""campaign.png: failed and errored runs drawn apart and numbered in the drawn value vs outcome
scatter."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from mbsfmu.campaign.picture import _scatter, plot_campaign


def _rows():
    rows = [{"run": i, "k": 1.0 + i, "passed": True, "error": "", "check.e.max_rel": 1e-12 * (1 + i)} for i in range(8)]
    rows.append({"run": 8, "k": 9.0, "passed": False, "error": "", "check.e.max_rel": 1e-6})
    rows.append({"run": 9, "k": 10.0, "passed": False, "error": "Timeout: the run took more than 1 s"})
    return rows


def test_scatter_numbers_failed_and_errored_runs():
    rows = _rows()
    fig, ax = plt.subplots()
    ok, failed, err = rows[:8], rows[8:9], rows[9:]
    _scatter(ax, "k", "check.e.max_rel", ok, failed, err, {"e": ("rel", 1e-9)})
    labels = {t.get_text(): t.get_color() for t in ax.texts}
    assert labels == {"8": "tab:red", "9": "k"}  # only the failed (red) and errored (black) runs, numbered
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == ["passed (8)", "failed (1)", "errored (1)"] and "bound 1e-09" in legend
    errored_y = ax.collections[2].get_offsets()[0][1]
    assert errored_y < min(ax.collections[0].get_offsets()[:, 1])  # the errored row sits below every value
    plt.close(fig)


def test_picture_written_with_errored_runs(tmp_path):
    path = plot_campaign(tmp_path, "t", _rows(), [{}] * 10, ["k"], [], {"e": ("rel", 1e-9)})
    assert path.stat().st_size > 10_000
