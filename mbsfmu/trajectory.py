"""Trajectory files: plain CSV, one row per output time, read by the independent checker
(``mbsfmu check TRAJECTORY.csv --procedure N``, see ``mbsfmu/checker/``).

Any simulator can write one (MuJoCo, Pinocchio, an in-house code): export the columns below and
run the checker on the file. Format:

- Plain CSV, UTF-8, comma separated. The first row holds the column names; no comment lines,
  no units row. Every later row holds one number per column (Python ``float`` syntax; ``nan``
  and ``inf`` are read as such). Write full precision (``repr(x)`` or ``%.17g``): the checker
  compares to ~1e-12, and 6 significant digits cap every relative check at ~1e-6.
- ``time`` [s]: required, strictly increasing.
- Column order is free; extra columns are ignored. Vectors are 1-based ``name[1]..name[3]``,
  symmetric 3x3 tensors ``name[xx]``, ``[yy]``, ``[zz]``, ``[xy]``, ``[xz]``, ``[yz]``.
- All vectors are in world (inertial) axes unless the name says ``_b1`` (body-1 axes: the axes of
  the reference body b1, the tree's base body). Every rate is the inertial time derivative,
  expressed in the stated axes (so ``C1 @ rdot_b1`` is the inertial velocity).

Per rigid body B (discovered by its ``B.m`` column):

| column | meaning | unit |
|---|---|---|
| ``B.m`` | mass | kg |
| ``B.I[xx..yz]`` | inertia about the CoM, world axes | kg m^2 |
| ``B.I_b1[xx..yz]`` | inertia about the CoM, body-1 axes | kg m^2 |
| ``B.omega[1..3]``, ``B.omega_b1[1..3]`` | angular velocity, world / body-1 axes | rad/s |
| ``B.r_abs[1..3]``, ``B.rdot_abs[1..3]`` | CoM position and velocity (rbar, inertial) | m, m/s |
| ``B.r_cm[1..3]``, ``B.rdot_cm[1..3]`` | CoM from the system CM (rhat), world axes | m, m/s |
| ``B.r_cm_b1[1..3]``, ``B.rdot_cm_b1[1..3]`` | the same in body-1 axes | m, m/s |
| ``B.r_j1[1..3]``, ``B.rdot_j1[1..3]`` | CoM from joint 1 (r = rbar - etabar_1), world axes | m, m/s |
| ``B.r_j1_b1[1..3]``, ``B.rdot_j1_b1[1..3]`` | the same in body-1 axes | m, m/s |

Per reaction wheel W (discovered by ``W.Iw``): ``W.Iw`` spin-axis inertia [kg m^2],
``W.h[1..3]`` / ``W.h_b1[1..3]`` wheel angular momentum h = g I_w thetadot (absolute spin rate)
in world / body-1 axes [N m s]. The wheel's mass and transverse inertia are part of its host
body's ``m`` and ``I``; the host's ``I`` omits the wheel's spin-axis inertia.

Per spring S (joint springs named by their joint, point springs by their element; discovered by
``S.k``): ``S.k`` stiffness [N/m or N m/rad], ``S.x`` deflection [m or rad]; PE = 1/2 k x^2.

System: ``C1[1..9]`` the rotation body-1 axes -> world axes, row-major (C1[1] C1[2] C1[3] is
the first row); ``R[1..3]``, ``Rdot[1..3]`` system CM position and velocity [m, m/s];
``eta1[1..3]``, ``etadot1[1..3]`` joint-1 position and velocity (etabar_1) [m, m/s];
``g[1..3]`` uniform gravity [m/s^2].

Names: ``engine``, ``q``, ``qd`` and ``u`` are reserved column prefixes: a body, wheel or spring
of that name is not discovered. Names must not contain commas or quotes.

Optional: joint states ``q.<joint>``, ``qd.<joint>`` (``[k]`` for multi-DoF joints), inputs
``u.<name>``, and the simulator's own values, compared by the ``engine_agreement`` check:
``engine.p_sys[1..3]``, ``engine.P_sys[1..3]``, ``engine.H_sys[1..3]`` [N s, N s, N m s],
``engine.R[1..3]``, ``engine.Rdot[1..3]``, ``engine.KE``, ``engine.PE``, ``engine.E`` [J],
``engine.W_in`` (work done by the inputs since the first row) and ``engine.W_diss`` (damper
work, <= 0) [J], so that KE + PE - W_in - W_diss is constant (``energy_balance`` check).

Which columns a check needs depends on the procedure (MBS Momentum/Energy Testing Procedures 1-4, table in
``mbsfmu/checker/``): a file needs only the columns of the procedures it is checked with;
the checker names any that are missing. The smallest export is the inertial absolute one:
``time``, ``g``, and per body ``m``, ``I``, ``omega``, ``r_abs``, ``rdot_abs`` (plus wheels' ``h``,
``Iw`` and springs' ``k``, ``x``), checked with ``--procedure 2 --energy-procedure 1``.

Exporting from MuJoCo (checked in tests/checker/test_checks.py): for body b, ``m = model.body_mass[b]``,
``r_abs = data.xipos[b]``, ``I = X diag(model.body_inertia[b]) X^T`` with
``X = data.ximat[b].reshape(3, 3)``, and ``[omega, rdot_abs]`` = the 6-vector from
``mujoco.mj_objectVelocity(model, data, mjOBJ_BODY, b, res, 0)`` (world axes, at the CoM).
From Pinocchio: ``data.oMi[i]`` gives the joint frame (R, p), ``model.inertias[i]`` its mass,
``lever`` c and ``inertia`` about the CoM (joint axes), so ``r_abs = p + R c``,
``I = R I_c R^T``; ``getVelocity(model, data, i, LOCAL_WORLD_ALIGNED)`` gives omega and the
frame origin's velocity v, so ``rdot_abs = v + omega x (R c)``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from .errors import MbsError
from .files import open_regular

Array = NDArray[np.float64]
TRAJECTORY_FILE = "trajectory.csv"  # a run folder's joint states and engine columns (`mbsfmu run`)
RECORDS_FILE = "records.csv"  # ... and its body records for the checker, beside it


_BAD_NAME_CHARS = frozenset(',"\r\n')  # not allowed in a column name


def _is_real(v) -> bool:
    """Whether float(v) accepts ``v`` (the writer's test for a cell)."""
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


class TrajectoryError(MbsError):
    """A trajectory file that cannot be written or read; names the file, row and column."""


class TrajectoryWriteError(TrajectoryError):
    """A trajectory row or header that could not be written (disk full, I/O error): not bad input,
    the run stopped (exit code 1)."""

    exit_code = 1


class Trajectory(Mapping):
    """Columns of a trajectory as float arrays (T,), by name; ``time`` (T,) [s].

    Built by ``read_trajectory`` or ``Trajectory.from_columns``; ``names`` keeps the file order;
    ``notes``: what a reader of these rows must be told about them (``read_run``: the rows of a
    stopped run's two files that were checked)."""

    def __init__(self, columns: Mapping[str, Array], source: str, notes: tuple[str, ...] = ()):
        self._columns = dict(columns)
        self.source = source
        self.names = tuple(self._columns)
        self.notes = tuple(notes)

    @classmethod
    def from_columns(cls, columns: Mapping[str, object], source: str = "<columns>") -> Trajectory:
        """A trajectory from named scalars or equal-length sequences, validated like a file
        (``time`` present, numeric, strictly increasing)."""
        out: dict[str, Array] = {}
        for name, val in columns.items():
            try:
                arr = np.atleast_1d(np.asarray(val, dtype=float))
            except (TypeError, ValueError):
                raise TrajectoryError(f"{source}: column {name!r} is not numeric") from None
            if arr.ndim != 1:
                raise TrajectoryError(f"{source}: column {name!r} has shape {arr.shape}, expected (T,)")
            out[str(name)] = arr
        lengths = {len(v) for v in out.values()}
        if len(lengths) > 1:
            raise TrajectoryError(f"{source}: columns have different lengths {sorted(lengths)}")
        _check_time(out, source, first_line=None)
        return cls(out, source)

    @classmethod
    def from_rows(cls, names: Sequence[str], rows: Sequence[Sequence[float]], source: str = "<rows>") -> Trajectory:
        """A trajectory from float rows (T, len(names)) under column names (each column a view of
        one block), validated like a file (``time`` present, strictly increasing): the columns of
        ``from_columns`` without a conversion per column."""
        values = np.asarray(rows, dtype=float)
        if values.ndim != 2 or values.shape[1] != len(names):
            raise TrajectoryError(f"{source}: rows of shape {values.shape}, expected (T, {len(names)}) for the names")
        out = dict(zip(map(str, names), values.T))
        if len(out) != len(names):
            raise TrajectoryError(f"{source}: repeated column names")
        _check_time(out, source, first_line=None)
        return cls(out, source)

    # Mapping interface
    def __getitem__(self, name: str) -> Array:
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"{self.source}: no column {name!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    @property
    def time(self) -> Array:
        """(T,) output times [s]."""
        return self._columns["time"]

    @property
    def n_rows(self) -> int:
        return len(self.time)

    def missing(self, names: Iterable[str]) -> list[str]:
        """The names (in the given order) that are not columns of this trajectory."""
        return [n for n in names if n not in self._columns]

    def stack(self, names: Sequence[str]) -> Array:
        """(T, len(names)) the named columns side by side."""
        return np.column_stack([self._columns[n] for n in names])

    def __repr__(self) -> str:
        return f"Trajectory({self.source!r}, {self.n_rows} rows, {len(self)} columns)"


class TrajectoryWriter:
    """Streaming CSV writer: opens ``path``, writes the header (column names) at once, then one
    row per ``write(row)``, flushed, so a run that fails keeps every row it computed.

    columns: the column names, ``time`` among them; if None, taken from the first row's keys
    (the header is then written with the first row). format_values: a function giving the text
    of a float64 row (bytes, comma-separated), each value as repr writes it or any text that reads
    back to the same double (the C core's, 5-10x faster); default: repr. Use as a context manager or
    call close()."""

    def __init__(
        self, path: str | os.PathLike, columns: Sequence[str] | None = None, format_values: Callable | None = None
    ):
        self.path = str(path)
        self._format = format_values
        self.columns: tuple[str, ...] | None = None
        self.n_rows = 0
        self.last_time: float | None = None  # time [s] of the last row written
        try:
            self._f = open(self.path, "wb", buffering=0)  # one write per line: a row is on disk or not
        except OSError as e:
            raise TrajectoryError(f"cannot write trajectory file {self.path}: {e.strerror or e}") from None
        if columns is not None:
            self._header(columns)

    def _header(self, columns: Sequence[str]) -> None:
        cols = tuple(str(c) for c in columns)
        text = ",".join(cols)
        plain = text.count(",") == len(cols) - 1 and _BAD_NAME_CHARS.isdisjoint(text.replace(",", ""))
        plain = plain and not any(ch.isspace() for ch in set(text)) and "" not in cols  # one pass, not per name
        bad = [] if plain else [c for c in cols if not c or c != c.strip() or not _BAD_NAME_CHARS.isdisjoint(c)]
        if bad:
            raise TrajectoryError(
                f"{self.path}: column names must be non-empty, without commas, quotes, "
                f"newlines or surrounding blanks: {', '.join(map(repr, bad))}"
            )
        self._column_set = frozenset(cols)  # membership per row key: O(1), not O(columns)
        if len(self._column_set) < len(cols):
            dup = sorted(c for c, n in Counter(cols).items() if n > 1)
            raise TrajectoryError(f"{self.path}: duplicate column names: {', '.join(dup)}")
        if "time" not in self._column_set:
            raise TrajectoryError(f"{self.path}: the columns must include 'time'")
        self.columns = cols
        self._time_index = cols.index("time")
        self._write(text + "\n", "the header")

    def write(self, row: Mapping[str, float] | Sequence[float]) -> None:
        """Append one row: a mapping with exactly the file's columns, or a sequence (or 1-D
        array) of values in column order. Values are written with repr (exact round trip)."""
        if self._f.closed:
            raise TrajectoryError(f"{self.path}: write after close")
        if self.columns is None:
            if not isinstance(row, Mapping):
                raise TrajectoryError(f"{self.path}: the first row must be a mapping when no columns were given")
            self._header(list(row))
        if isinstance(row, Mapping) and tuple(row) == self.columns:  # the usual row: keys in header order
            values = list(row.values())
        elif isinstance(row, Mapping):
            missing = [c for c in self.columns if c not in row]
            extra = [str(k) for k in row if k not in self._column_set]
            if missing or extra:
                raise TrajectoryError(
                    f"{self.path}: row {self.n_rows + 1} does not match the header"
                    + (f"; missing: {', '.join(missing)}" if missing else "")
                    + (f"; not in the header: {', '.join(extra)}" if extra else "")
                )
            values = [row[c] for c in self.columns]
        elif self._format is not None and type(row) is np.ndarray and row.dtype == np.float64 and row.ndim == 1:
            if row.size != len(self.columns):
                raise TrajectoryError(
                    f"{self.path}: row {self.n_rows + 1} has {row.size} values, "
                    f"the header has {len(self.columns)} columns"
                )
            self._write(self._format(row) + b"\n", f"row {self.n_rows + 1}")
            self.n_rows += 1
            self.last_time = float(row[self._time_index])
            return
        else:
            values = row.tolist() if isinstance(row, np.ndarray) else list(row)
            if len(values) != len(self.columns):
                raise TrajectoryError(
                    f"{self.path}: row {self.n_rows + 1} has {len(values)} values, "
                    f"the header has {len(self.columns)} columns"
                )
        try:
            cells = list(map(float, values))
        except (TypeError, ValueError):
            c, v = next((c, v) for c, v in zip(self.columns, values) if not _is_real(v))
            raise TrajectoryError(f"{self.path}: row {self.n_rows + 1}, column {c!r}: {v!r} is not a number") from None
        text = self._format(np.array(cells)) + b"\n" if self._format else ",".join(map(repr, cells)) + "\n"
        self._write(text, f"row {self.n_rows + 1}")
        self.n_rows += 1
        self.last_time = float(values[self._time_index])

    def _write(self, text: str | bytes, what: str) -> None:
        """Write one line (unbuffered); on OSError (disk full, I/O error) cut the file back to
        its last whole line, so that every row kept is valid, and raise TrajectoryError."""
        data = memoryview(text if isinstance(text, bytes) else text.encode("utf-8"))
        at = None
        try:
            at = self._f.tell()
            done = 0
            while done < len(data):
                n = self._f.write(data[done:])
                if not n:
                    raise OSError(f"no progress writing {len(data) - done} bytes")
                done += n
        except OSError as e:
            try:
                if at is not None:
                    self._f.truncate(at)
                    self._f.seek(at)
            except OSError:
                pass
            raise TrajectoryWriteError(
                f"cannot write {what} to {self.path}: {e.strerror or e} ({self.n_rows} row(s) written before)"
            ) from None

    def close(self) -> None:
        if not self._f.closed:
            try:
                self._f.close()
            except OSError:  # a flush that failed (disk full) was reported by write
                pass

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_trajectory(path: str | os.PathLike, columns: Sequence[str] | None = None) -> TrajectoryWriter:
    """Open a streaming trajectory writer (see ``TrajectoryWriter``):

    with write_trajectory("run.csv", names) as w:
        for ...: w.write(row)
    """
    return TrajectoryWriter(path, columns)


def save_trajectory(path: str | os.PathLike, columns: Mapping[str, object]) -> None:
    """Write whole columns (scalars or equal-length sequences, ``time`` included) at once."""
    traj = Trajectory.from_columns(columns, source=str(path))
    with TrajectoryWriter(path, traj.names) as w:
        for k in range(traj.n_rows):
            w.write([traj[c][k] for c in traj.names])


def read_trajectory(path: str | os.PathLike) -> Trajectory:
    """Read a trajectory CSV (format in this module's docstring) into float columns.

    TrajectoryError names the file and, for bad cells, the line, row and column."""
    path = str(path)
    try:
        with open_regular(path, newline="", encoding="utf-8-sig") as f:
            text = f.read()
    except OSError as e:
        raise TrajectoryError(f"cannot read trajectory file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise TrajectoryError(f"trajectory file {path} is not a readable CSV text file: {e}") from None
    plain = _plain_numbers(text)
    if plain is not None:  # the files this package writes: one C pass of numpy's reader
        header_line, names, values = 1, plain[0], plain[1]
        first_lines = list(range(2, 2 + len(values)))
    else:  # anything else, cell by cell, so that a bad cell is named with its line
        header_line, names, values, first_lines = _read_cells(text, path)
    _check_header(names, header_line, path)
    columns = dict(zip(names, values.T.copy()))  # one block; each column a contiguous row of it
    _check_time(columns, path, first_line=first_lines)
    return Trajectory(columns, path)


def written_trajectory(path: str | os.PathLike, columns: Sequence[str], rows: Sequence[Array]) -> Trajectory | None:
    """What ``read_trajectory(path)`` gives for the file a TrajectoryWriter with the core's
    ``format_values`` wrote at ``path`` from ``columns`` and these float64 rows, without reading
    it: that text is each value's shortest decimal that reads back to the same double (decimal.c),
    so the file's numbers are the rows' numbers bit for bit (tests/scenario/test_in_memory.py
    compares them). None when a value is NaN (written "nan": its sign and payload are not kept),
    or there are no rows: read the file then. TrajectoryError as read_trajectory raises it."""
    path = str(path)
    if not rows:
        return None
    values = np.array(rows, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(columns) or np.isnan(values).any():
        return None
    # each column a view of the stacked rows (no transposed copy: at 10,000 bodies the 46 MB copy was
    # a quarter of this function, and superlinear once it left the cache); names as TrajectoryWriter
    # checked them for the header
    out = dict(zip(columns, values.T))
    _check_time(out, path, first_line=list(range(2, 2 + len(rows))))
    return Trajectory(out, path)


def _plain_numbers(text: str) -> tuple[list[str], Array] | None:
    """(names, rows x columns values) of a CSV text with a header line and only numbers below it,
    no quotes, no blank lines, no carriage returns, every row as wide as the header: what
    TrajectoryWriter writes. None for any other text (``_read_cells`` reads and reports it)."""
    nl = text.find("\n")
    if nl < 0 or '"' in text or "\r" in text or "\n\n" in text or text.endswith("\n\n"):
        return None
    names = [c.strip() for c in text[:nl].split(",")]
    body = text[nl + 1 :]
    if not body.strip():
        return None
    try:
        values = np.loadtxt(io.StringIO(body), delimiter=",", dtype=float, comments=None, ndmin=2)
    except ValueError:
        return None
    if values.shape[1] != len(names):
        return None
    return names, values


def _read_cells(text: str, path: str) -> tuple[int, list[str], Array, list[int]]:
    """(header line, names, values, data line numbers) read cell by cell; TrajectoryError naming
    the line, row and column of a malformed row or cell."""
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise TrajectoryError(f"trajectory file {path} is not a readable CSV text file: {e}") from None
    # keep file line numbers (1-based) while skipping blank lines
    lines = [(k + 1, r) for k, r in enumerate(rows) if r and any(c.strip() for c in r)]
    if not lines:
        raise TrajectoryError(f"trajectory file {path} is empty: expected a header row of column names")
    header_line, header = lines[0]
    names = [c.strip() for c in header]
    _check_header(names, header_line, path)
    data = lines[1:]
    if not data:
        raise TrajectoryError(f"{path}: no data rows after the header")
    for row_no, (line, r) in enumerate(data, start=1):
        if len(r) != len(names):
            raise TrajectoryError(
                f"{path}: line {line} (row {row_no}) has {len(r)} cells, the header has {len(names)} columns"
            )
    try:
        values = np.array([r for _, r in data], dtype=float)
    except ValueError:
        for row_no, (line, r) in enumerate(data, start=1):
            for name, cell in zip(names, r):
                try:
                    float(cell)
                except ValueError:
                    raise TrajectoryError(
                        f"{path}: line {line} (row {row_no}), column {name!r}: {cell.strip()!r} is not a number"
                    ) from None
        raise TrajectoryError(f"{path}: could not read the numbers") from None  # pragma: no cover
    return header_line, names, values, [line for line, _ in data]


def _check_header(names: list[str], header_line: int, path: str) -> None:
    empty = [k + 1 for k, c in enumerate(names) if not c]
    if empty:
        raise TrajectoryError(
            f"{path}: line {header_line}: header has empty column name(s) at position(s) {', '.join(map(str, empty))}"
        )
    dup = sorted(c for c, n in Counter(names).items() if n > 1)
    if dup:
        raise TrajectoryError(f"{path}: line {header_line}: duplicate column names: {', '.join(dup)}")
    if "time" not in names:
        raise TrajectoryError(
            f"{path}: no 'time' column (the first row must be the column names, e.g. "
            f"time,...; found: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"
        )


def join_trajectories(a: Trajectory, b: Trajectory) -> Trajectory:
    """The columns of ``a`` and ``b`` side by side (``a``'s where both have one), over the rows
    both have: a run writes trajectory.csv and records.csv row by row, so after a failure one may
    hold a row more. TrajectoryError if their times differ."""
    n = min(a.n_rows, b.n_rows)
    if not np.array_equal(a.time[:n], b.time[:n]):
        k = int(np.flatnonzero(a.time[:n] != b.time[:n])[0])
        raise TrajectoryError(
            f"{b.source}: row {k + 1} has time {float(b.time[k])!r} s, {a.source} has "
            f"{float(a.time[k])!r} s: not the same run"
        )
    columns = dict(b._columns) if b.n_rows == n else {name: col[:n] for name, col in b._columns.items()}
    columns.update(a._columns if a.n_rows == n else {name: col[:n] for name, col in a._columns.items()})
    return Trajectory(columns, f"{a.source} + {b.source}")


def _check_time(columns: Mapping[str, Array], source: str, first_line: list[int] | None) -> None:
    if "time" not in columns:
        raise TrajectoryError(f"{source}: no 'time' column")
    t = columns["time"]
    if t.size == 0:
        raise TrajectoryError(f"{source}: no data rows")

    def where(k: int) -> str:
        return f"line {first_line[k]} (row {k + 1})" if first_line else f"row {k + 1}"

    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise TrajectoryError(f"{source}: {where(int(bad[0]))}: time is {float(t[bad[0]])}, must be finite")
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        k = int(back[0]) + 1
        raise TrajectoryError(
            f"{source}: {where(k)}: time {float(t[k])!r} s is not greater than the previous "
            f"{float(t[k - 1])!r} s (time must be strictly increasing)"
        )


__all__ = [
    "Trajectory",
    "TrajectoryError",
    "TrajectoryWriteError",
    "TrajectoryWriter",
    "join_trajectories",
    "read_trajectory",
    "save_trajectory",
    "write_trajectory",
    "written_trajectory",
]


def read_run(path: str | os.PathLike) -> Trajectory:
    """What the checker reads from ``path``: a run folder (its trajectory.csv joined with the
    records.csv beside it), or a trajectory file, joined with a records.csv in the same folder
    when the file is a run's trajectory.csv (the body records are there); any other CSV as it is.
    TrajectoryError says what was looked for when a folder holds neither, and names both files
    and their row counts when they differ other than as a stopped run leaves them (``notes``
    then says which rows are checked)."""
    path = Path(path)
    if path.is_dir():
        if not (path / TRAJECTORY_FILE).is_file():
            raise TrajectoryError(f"{path} is a folder without {TRAJECTORY_FILE}: expected a run folder or a CSV file")
        path = path / TRAJECTORY_FILE
    traj = read_trajectory(path)
    beside = path.parent / RECORDS_FILE
    if path.name == TRAJECTORY_FILE and beside.is_file():
        records = read_trajectory(beside)
        note = _row_counts(traj, records, path.parent / "report.json")
        traj = join_trajectories(traj, records)
        if note:
            traj = Trajectory(traj._columns, traj.source, (note,))
    return traj


def _row_counts(traj: Trajectory, records: Trajectory, report: Path) -> str | None:
    """A run writes trajectory.csv and records.csv row by row, each row in one unbuffered write,
    trajectory.csv first (mbsfmu/scenario/run.py): the files hold the same rows, or trajectory.csv
    one more when the run stopped between the two writes. None for the same rows; the note saying
    which rows are checked for that one legitimate difference (the run's report.json, if there is
    one, must say it stopped); TrajectoryError for any other difference."""
    n, m = traj.n_rows, records.n_rows
    if n == m:
        return None
    stopped = None  # why the run stopped, from its report.json; None: no readable report
    if report.is_file():
        try:
            r = json.loads(report.read_text(encoding="utf-8"))
            stopped = (r.get("error") or r.get("interrupted") or "") if isinstance(r, dict) else None
        except (OSError, ValueError):
            stopped = None
    if n == m + 1 and stopped != "":
        why = f" ({report.name}: {stopped})" if stopped else ""
        return (
            f"{records.source} has {m} rows, {traj.source} {n}: the run stopped between writing the "
            f"two files{why}; checked the {m} rows both hold (t = {float(traj.time[0]):.6g} .. "
            f"{float(records.time[-1]):.6g} s), not the last row of {traj.source}"
        )
    complete = f"; {report} says the run completed" if stopped == "" else ""
    raise TrajectoryError(
        f"{records.source} has {m} rows, {traj.source} {n}: a run writes both files row by row, so "
        f"they hold the same rows (records one fewer only when the run stopped between the two "
        f"writes){complete}; one of them was truncated or comes from another run (records.csv on its "
        f"own, with the body records and engine.* columns: `mbsfmu check {records.source}`)"
    )
