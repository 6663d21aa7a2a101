"""The bundled controller FMU: the scenario's discrete joint PID (``mbsfmu.sim.pid.JointPID``)
as an FMI 2.0 Co-Simulation FMU built with pythonfmu: its configuration and variables, and its
builder ``build_pid_fmu`` (the slave that runs it: ``pid_slave.PidSlave``).

Variables (structured names; per controlled joint j, in the order of the scenario's
``controller.joints``): parameters (fixed) ``sample_period`` [s] (the PID's dt), ``j.kp``,
``j.ki``, ``j.kd``, ``j.limit`` (start: the scenario's gains; ``limit`` = INF: none); inputs
``j.q`` [rad or m], ``j.qd`` [rad/s or m/s]; outputs ``j.tau`` [N m or N]. The setpoint
schedules (with tables and CSV data already read), the derivative modes and the gains' start
values are in ``resources/mbsfmu_pid.json``.

Output timing: sample and hold, computed in fmi2DoStep. ``fmi2DoStep(t_k, h)`` samples the
inputs set before the call, computes u_k = PID(t_k, q_k, qd_k) (updating the integral and the
previous setpoint exactly once), and from then on the outputs hold u_k; before the first step they
are 0. The outputs never depend on the inputs set at the same communication point (no direct
feedthrough: ModelStructure lists no dependencies). Hence:

- a master that, at each communication point, steps the controller before the model and feeds its
  fresh output to the model (Gauss-Seidel order ctrl -> mbs: ``mbsfmu cosim`` with the fmpy master
  and ``scheme: gauss-seidel``) drives the model with u_k over [t_k, t_k+1]: exactly what
  ``mbsfmu run`` does in-process (the same JointPID code, the same floats: bit for bit);
- a Jacobi master (every FMU stepped from the outputs read at t_k: libcosim's fixed-step algorithm,
  or the fmpy loop with ``scheme: jacobi``) drives it with u_{k-1} (u_{-1} = 0): a one-step delay.

FMU state (get/set/serialize): the inputs, held outputs, parameters, the PID's integral and
previous setpoints (pythonfmu alone would save only the registered variables).
"""

from __future__ import annotations

import json
import math
import uuid
import zipfile
from pathlib import Path

from .. import __version__
from ..errors import MbsError
from ..sim.pid import PIDGains
from ..sim.schedules import Schedule
from .description import build_info, model_identifier
from .package import engine_info, package_python_fmu, python_info, require_pythonfmu
from .variables import FmuVariable, structured_name

CONFIG = "mbsfmu_pid.json"
CONFIG_FORMAT = "mbsfmu-pid/1"
GAINS = ("kp", "ki", "kd", "limit")


# ---- configuration (resources/mbsfmu_pid.json) ----------------------------------------------------


def pid_config(
    gains: dict[str, PIDGains], dt: float, units: dict[str, tuple[str, str, str]] | None = None, name: str = "pid"
) -> dict:
    """The JSON document of a controller FMU: {format, name, sample_period, joints: {j: {kp, ki, kd,
    limit, derivative, setpoint: {kind, params}, units: [q, qd, tau]}}}; floats exact (JSON repr)."""
    if not gains:
        raise MbsError("a PID controller FMU needs at least one joint")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise MbsError(f"sample period must be a positive time [s], got {dt!r}")
    units = units or {}
    joints = {}
    for j, g in gains.items():
        joints[j] = {
            "kp": float(g.kp),
            "ki": float(g.ki),
            "kd": float(g.kd),
            "limit": float(g.limit),
            "derivative": g.derivative,
            "setpoint": {"kind": g.setpoint.kind, "params": g.setpoint.params},
            "units": list(units.get(j, ("rad", "rad/s", "N.m"))),
        }
    return {"format": CONFIG_FORMAT, "name": name, "sample_period": float(dt), "joints": joints}


def gains_from_config(cfg: dict) -> dict[str, PIDGains]:
    """joint -> PIDGains from a ``pid_config`` document."""
    return {
        j: PIDGains(
            kp=g["kp"],
            ki=g["ki"],
            kd=g["kd"],
            limit=g["limit"],
            derivative=g["derivative"],
            setpoint=Schedule(g["setpoint"]["kind"], g["setpoint"]["params"]),
        )
        for j, g in cfg["joints"].items()
    }


def pid_variables(cfg: dict) -> list[FmuVariable]:
    """Every variable of the controller FMU in value-reference order (see the module docstring);
    sources: ("param", key) with key "sample_period" or (joint, gain), ("input", (joint, "q"|"qd")),
    ("output", joint)."""
    out = [
        FmuVariable(
            "sample_period",
            "Real",
            "parameter",
            "fixed",
            "exact",
            "s",
            "sample period of the PID: dt of the integral and of the setpoint derivative "
            "(the master's communication step)",
            ("param", "sample_period"),
            start=cfg["sample_period"],
            min=0.0,
        )
    ]
    for j, g in cfg["joints"].items():
        uq, uqd, utau = g["units"]
        rate = uqd.split("/")[0]
        descriptions = {
            "kp": (f"{utau}/{uq}", f"proportional gain of joint {j}"),
            "ki": (None, f"integral gain of joint {j} [{utau}/({uq} s)]"),
            "kd": (f"{utau}.s/{rate}", f"derivative gain of joint {j}"),
            "limit": (utau, f"saturation |tau| <= limit of joint {j} (INF: none)"),
        }
        for gain in GAINS:
            unit, desc = descriptions[gain]
            out.append(
                FmuVariable(
                    structured_name([j, gain]),
                    "Real",
                    "parameter",
                    "fixed",
                    "exact",
                    unit,
                    desc,
                    ("param", (j, gain)),
                    start=g[gain],
                    min=0.0,
                )
            )
    for j, g in cfg["joints"].items():
        uq, uqd, _ = g["units"]
        out.append(
            FmuVariable(
                structured_name([j, "q"]),
                "Real",
                "input",
                "continuous",
                None,
                uq,
                f"measured position of joint {j}, sampled at each fmi2DoStep",
                ("input", (j, "q")),
                start=0.0,
            )
        )
        out.append(
            FmuVariable(
                structured_name([j, "qd"]),
                "Real",
                "input",
                "continuous",
                None,
                uqd,
                f"measured rate of joint {j}, sampled at each fmi2DoStep",
                ("input", (j, "qd")),
                start=0.0,
            )
        )
    for j, g in cfg["joints"].items():
        out.append(
            FmuVariable(
                structured_name([j, "tau"]),
                "Real",
                "output",
                "discrete",
                "exact",
                g["units"][2],
                f"actuator command of joint {j}: u_k computed in the last fmi2DoStep from the "
                f"inputs at its start, held (0 before the first step)",
                ("output", j),
                start=0.0,
            )
        )
    return out


# ---- the builder ----------------------------------------------------------------------------------


def build_pid_fmu(
    gains: dict[str, PIDGains],
    dt: float,
    output: str | Path,
    *,
    units: dict[str, tuple[str, str, str]] | None = None,
    name: str = "pid",
    loader: bool | None = None,
) -> Path:
    """Build the controller FMU ``output`` (a file, or a folder for ``<identifier>.fmu``) of a
    JointPID: gains by joint (``Scenario.controller``), dt: sample period [s] (the scenario's dt),
    units: joint -> (q, qd, tau) unit names (default rad, rad/s, N.m); name: the model name
    (modelIdentifier ``mbsfmu_pid_<name>``); loader as in ``build_fmu`` (the Linux loader binary,
    so libcosim and other C hosts load it). Returns the FMU's path."""
    require_pythonfmu()
    cfg = pid_config(gains, dt, units, name)
    table = pid_variables(cfg)
    identifier = model_identifier(f"mbsfmu_pid_{name}")
    output = Path(output)
    if output.is_dir():
        output = output / f"{identifier}.fmu"
    info = build_info(
        str(uuid.uuid4()),
        identifier,
        identifier,
        "structured",
        (
            f"mbsfmu discrete joint PID {name} ({', '.join(cfg['joints'])}), sample period "
            f"{cfg['sample_period']!r} s; output u_k computed in fmi2DoStep(t_k) from the inputs set "
            f"before it and held (FMI 2.0 Co-Simulation, mbsfmu {__version__})"
        ),
        **engine_info(),
        python=python_info(),
    )

    def stage_files(stage: Path) -> list[Path]:
        (stage / CONFIG).write_text(json.dumps(cfg, indent=1, allow_nan=True), encoding="utf-8")
        return [stage / CONFIG]

    return package_python_fmu(
        output,
        table,
        info,
        slave="fmu.pid_slave import PidSlave",
        what=f"discrete joint PID {name}",
        maker="mbsfmu.fmu.pid.build_pid_fmu",
        module="mbsfmu_pidslave",
        stage_files=stage_files,
        loader=loader,
    )


def read_pid_config(fmu: str | Path) -> dict:
    """The controller configuration stored in a controller FMU's resources."""
    with zipfile.ZipFile(fmu) as z:
        return json.loads(z.read(f"resources/{CONFIG}").decode("utf-8"))


__all__ = ["CONFIG", "GAINS", "build_pid_fmu", "gains_from_config", "pid_config", "pid_variables", "read_pid_config"]
