"""Trajectory CSV files: exact round trip, streaming (a failed run keeps its rows), and errors that
name the file, the row and the column."""

import numpy as np
import pytest

from mbsfmu.errors import MbsError
from mbsfmu.trajectory import (
    Trajectory,
    TrajectoryError,
    TrajectoryWriter,
    read_trajectory,
    save_trajectory,
    write_trajectory,
)


def write_text(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_round_trip_is_exact_and_keeps_column_order(tmp_path, rng):
    T = 7
    cols = {
        "time": np.cumsum(rng.uniform(1e-3, 1.0, T)),
        "b.r_abs[1]": rng.normal(size=T) * 1e-300,
        "b.m": np.full(T, 2.5),
        "engine.KE": rng.normal(size=T) * 1e12,
        "x[xy]": rng.normal(size=T),
    }
    cols["x[xy]"][3] = np.nan
    path = tmp_path / "run.csv"
    save_trajectory(path, cols)
    assert path.read_text().splitlines()[0] == "time,b.r_abs[1],b.m,engine.KE,x[xy]"  # plain CSV header
    traj = read_trajectory(path)
    assert traj.names == tuple(cols) and traj.n_rows == T and traj.source == str(path)
    for name, val in cols.items():
        np.testing.assert_array_equal(traj[name], val)  # repr round trip: bit-exact, NaN kept
    np.testing.assert_array_equal(traj.time, cols["time"])
    assert "b.m" in traj and "b.q" not in traj and traj.missing(["b.m", "b.q"]) == ["b.q"]
    np.testing.assert_array_equal(traj.stack(["b.m", "time"]), np.column_stack((cols["b.m"], cols["time"])))


def test_reader_accepts_blanks_quotes_and_bom(tmp_path):
    path = write_text(tmp_path / "ext.csv", '\ufeff"time", a\n0.0, 1e-3\n\n0.5,-2\n')
    traj = read_trajectory(path)
    assert traj.names == ("time", "a")
    np.testing.assert_array_equal(traj["a"], [1e-3, -2.0])


def test_streaming_writer_keeps_rows_of_a_failed_run(tmp_path):
    path = tmp_path / "partial.csv"

    def run():
        with write_trajectory(path, ["time", "q"]) as w:
            for k in range(10):
                if k == 4:
                    raise RuntimeError("step failed")
                w.write({"time": 0.1 * k, "q": k * k})
                if k == 2:  # rows are on disk while the run goes on
                    assert read_trajectory(path).n_rows == 3

    with pytest.raises(RuntimeError, match="step failed"):
        run()
    traj = read_trajectory(path)
    np.testing.assert_array_equal(traj["q"], [0, 1, 4, 9])
    np.testing.assert_allclose(traj.time, [0.0, 0.1, 0.2, 0.30000000000000004], rtol=0, atol=0)


def test_writer_takes_columns_from_first_row_and_sequences(tmp_path):
    path = tmp_path / "w.csv"
    with TrajectoryWriter(path) as w:
        w.write({"time": 0.0, "a": 1.0})
        w.write([1.0, 2.0])
        assert w.n_rows == 2 and w.columns == ("time", "a")
    np.testing.assert_array_equal(read_trajectory(path)["a"], [1.0, 2.0])


@pytest.mark.parametrize(
    "columns, row, match",
    [
        (["q", "qd"], None, "must include 'time'"),
        (["time", "a,b"], None, "column names must be"),
        (["time", "a", "a"], None, "duplicate column names: a"),
        (["time", "a"], {"time": 0.0}, "row 1 does not match the header; missing: a"),
        (["time", "a"], {"time": 0.0, "a": 1.0, "b": 2.0}, "not in the header: b"),
        (["time", "a"], {"time": 0.0, "a": "x"}, "row 1, column 'a': 'x' is not a number"),
        (["time", "a"], [0.0], "row 1 has 1 values, the header has 2 columns"),
    ],
)
def test_writer_errors_name_the_item(tmp_path, columns, row, match):
    path = tmp_path / "bad.csv"
    with pytest.raises(TrajectoryError, match=match) as e:
        with write_trajectory(path, columns) as w:
            w.write(row)
    assert str(path) in str(e.value) and isinstance(e.value, MbsError)


def test_writer_to_unwritable_path(tmp_path):
    with pytest.raises(TrajectoryError, match="cannot write trajectory file .*nodir"):
        write_trajectory(tmp_path / "nodir" / "x.csv", ["time"])


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "is empty"),
        ("# mbsfmu run\ntime,a\n0,1\n", r"no 'time' column \(the first row must be the column names"),
        ("t,a\n0,1\n", "no 'time' column"),
        ("time,a\n", "no data rows"),
        ("time,a,a\n0,1,2\n", "duplicate column names: a"),
        ("time,,b\n0,1,2\n", "empty column name"),
        ("time,a\n0,1\n1,2,3\n", r"line 3 \(row 2\) has 3 cells, the header has 2 columns"),
        ("time,a,b\n0,1,2\n1,2,oops\n", r"line 3 \(row 2\), column 'b': 'oops' is not a number"),
        ("time,a\n0,1\n1,\n", r"line 3 \(row 2\), column 'a': '' is not a number"),
        ("time,a\n0,1\n1,2\n1,3\n", r"line 4 \(row 3\): time 1.0 s is not greater than the previous 1.0 s"),
        ("time,a\n0,1\n-1,2\n", r"line 3 \(row 2\): time -1.0 s is not greater"),
        ("time,a\n0,1\nnan,2\n", r"line 3 \(row 2\): time is nan, must be finite"),
    ],
)
def test_reader_errors_name_file_row_and_column(tmp_path, text, match):
    path = write_text(tmp_path / "in.csv", text)
    with pytest.raises(TrajectoryError, match=match) as e:
        read_trajectory(path)
    assert str(path) in str(e.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(TrajectoryError, match="cannot read trajectory file .*missing.csv"):
        read_trajectory(tmp_path / "missing.csv")
    with pytest.raises(TrajectoryError, match="cannot read trajectory file"):
        read_trajectory(tmp_path)  # a directory
    binary = tmp_path / "bin.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81time")
    with pytest.raises(TrajectoryError, match="bin.csv is not a readable CSV text file"):
        read_trajectory(binary)


def test_from_rows_gives_the_columns_of_from_columns_and_validates_like_a_file():
    rows = [[0.0, 1.0, -2.0], [0.5, 3.0, 4.0]]
    traj = Trajectory.from_rows(["time", "a", "b"], rows, "<rows>")
    ref = Trajectory.from_columns({"time": [0.0, 0.5], "a": [1.0, 3.0], "b": [-2.0, 4.0]})
    assert traj.names == ref.names and all(np.array_equal(traj[c], ref[c]) for c in ref)
    with pytest.raises(TrajectoryError, match="no 'time' column"):
        Trajectory.from_rows(["a"], [[1.0]])
    with pytest.raises(TrajectoryError, match=r"<rows>: rows of shape \(1, 2\), expected \(T, 3\)"):
        Trajectory.from_rows(["time", "a", "b"], [[0.0, 1.0]])
    with pytest.raises(TrajectoryError, match="repeated column names"):
        Trajectory.from_rows(["time", "a", "a"], [[0.0, 1.0, 2.0]])
    with pytest.raises(TrajectoryError, match="row 2: time"):
        Trajectory.from_rows(["time"], [[1.0], [0.0]])


def test_from_columns_validates_like_a_file():
    traj = Trajectory.from_columns({"time": 0.0, "a": 1.0})
    assert traj.n_rows == 1 and traj["a"][0] == 1.0
    with pytest.raises(TrajectoryError, match="no 'time' column"):
        Trajectory.from_columns({"a": [1.0]})
    with pytest.raises(TrajectoryError, match="different lengths"):
        Trajectory.from_columns({"time": [0.0, 1.0], "a": [1.0]})
    with pytest.raises(TrajectoryError, match="column 'a' is not numeric"):
        Trajectory.from_columns({"time": [0.0], "a": ["x"]})
    with pytest.raises(TrajectoryError, match="row 2: time"):
        Trajectory.from_columns({"time": [1.0, 0.0]})
    with pytest.raises(KeyError, match="no column 'b'"):
        traj["b"]


def test_wide_files_round_trip(tmp_path):
    """30,000 columns (a 1,000-body model's records): written and read back exactly; a duplicate
    column among them is still named."""
    names = ["time", *(f"b{k}.v[{c}]" for k in range(10_000) for c in (1, 2, 3))][:30_000]
    rows = [{n: float(k) + j * 1e-3 for j, n in enumerate(names)} for k in range(3)]
    path = tmp_path / "wide.csv"
    with TrajectoryWriter(path) as w:
        for r in rows:
            w.write(r)
    traj = read_trajectory(path)
    assert list(traj.names) == names
    assert traj[names[-1]].tolist() == [r[names[-1]] for r in rows]
    path.write_text(",".join([*names, names[5]]) + "\n" + ",".join(["0"] * (len(names) + 1)) + "\n")
    with pytest.raises(TrajectoryError, match=r"duplicate column names: b1\.v\[2\]"):
        read_trajectory(path)


def test_plain_and_other_files_read_the_same_numbers(tmp_path, rng):
    """A plain file (what the writers write: one pass of numpy's reader) and the same text with
    Windows line ends and a blank line (read cell by cell) give the same columns, bit for bit,
    special values included; the written values come back exactly whichever formatter wrote them."""
    T = 5
    values = rng.normal(size=(T, 4)) * 10.0 ** rng.integers(-300, 300, size=(T, 4))
    values[:, 0] = np.arange(T) * 0.1
    values[1, 1:] = [np.nan, np.inf, -0.0]
    values[2, 1:] = [5e-324, -1.7976931348623157e308, 1e23]
    names = ["time", "a", "b", "c"]
    plain = tmp_path / "plain.csv"
    save_trajectory(plain, dict(zip(names, values.T)))
    text = plain.read_text()
    other = write_text(tmp_path / "other.csv", text.replace("\n", "\r\n", 2).replace("\r\n", "\r\n\r\n", 1))
    a, b = read_trajectory(plain), read_trajectory(other)
    for k, name in enumerate(names):
        assert a[name].tobytes() == b[name].tobytes() == values[:, k].tobytes(), name
    from mbsfmu.engine.native.core import value_formatter  # the core's text (decimal.c), where it loads

    fmt = value_formatter()
    if fmt is not None:
        with TrajectoryWriter(tmp_path / "core.csv", names, format_values=fmt) as w:
            for row in values:
                w.write(row)
        c = read_trajectory(tmp_path / "core.csv")
        for k, name in enumerate(names):
            assert c[name].tobytes() == values[:, k].tobytes(), name
