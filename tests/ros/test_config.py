"""mbsfmu_ros.config: the node's parameters validated without rclpy (NodeConfig, node_config)."""

import math

import pytest

from mbsfmu_ros import diagnostics as dg
from mbsfmu_ros.config import PARAMETERS, ConfigError, NodeConfig, declarations, node_config


def test_defaults_are_the_declared_ones():
    """Only the model given: every field takes the default the node declares as ROS parameter."""
    cfg = node_config({"model": "m.yaml"})
    for name, (default, _text) in PARAMETERS.items():
        if name != "model":
            assert getattr(cfg, name) == (tuple(default) if isinstance(default, list) else default), name
    assert cfg.thresholds == dg.DEFAULT_THRESHOLDS
    assert cfg.period == 0.01 and cfg.diagnostics_period == 1.0
    assert cfg == NodeConfig(model="m.yaml")
    names = [d[0] for d in declarations()]
    assert len(names) == len(set(names)) == len(PARAMETERS) + 2 * len(dg.DEFAULT_THRESHOLDS)
    assert {d[0] for d in declarations() if d[3]} >= {"publish_rate", "physics_step", "thresholds.p_sys_zero.warn"}


def test_values_are_taken_and_integers_accepted_for_floats():
    cfg = node_config(
        {
            "model": "m.yaml",
            "publish_rate": 1000,
            "physics_step": 0,
            "integrator": "dop853",
            "real_time_factor": 0,
            "lock_step": True,
            "checks": ["H_sys_constant", "none"],
            "invariants_decimation": 5,
            "diagnostics_rate": 0.0,
            "thresholds.constraints.warn": 1e-6,
        }
    )
    assert cfg.publish_rate == 1000.0 and isinstance(cfg.publish_rate, float) and cfg.physics_step == 0.0
    assert cfg.lock_step is True and cfg.checks == ("H_sys_constant", "none") and cfg.invariants_decimation == 5
    assert cfg.diagnostics_period == math.inf and cfg.thresholds["constraints"] == (1e-6, 1e-5)


def test_every_problem_is_listed_at_once():
    """One ConfigError names each bad parameter, its value and what is wrong."""
    values = {
        "model": "",
        "publish_rate": -1.0,
        "physics_step": 0.0,
        "integrator": "euler",
        "rtol": "x",
        "real_time_factor": math.nan,
        "command_timeout": -0.5,
        "diagnostics_rate": math.inf,
        "invariants_decimation": 0,
        "executor": "multi",
        "checks": ["auto", "H_sys"],
        "lock_step": "yes",
        "frame_id": "",
        "thresholds.p_sys_zero.warn": 1.0,
        "thresholds.p_sys_zero.error": 0.1,
        "thresholds.constraints.error": "big",
        "publish_rat": 5.0,
    }
    with pytest.raises(ConfigError) as e:
        node_config(values)
    msg = str(e.value)
    for fragment in (
        "model: no model file",
        "publish_rate = -1.0: must be a positive number",
        "physics_step = 0.0: must be a positive number (0 only with integrator dop853)",
        "integrator = 'euler': must be one of rk4, dop853",
        "rtol = 'x': must be a number",
        "real_time_factor = nan: must be a number >= 0",
        "command_timeout = -0.5: must be a number >= 0",
        "diagnostics_rate = inf: must be a number >= 0",
        "invariants_decimation = 0: must be an integer >= 1",
        "executor = 'multi': must be one of single, events",
        "checks = ['auto', 'H_sys']: unknown check(s) 'H_sys'",
        "lock_step = 'yes': must be true or false",
        "frame_id = '': must name a frame",
        "thresholds.p_sys_zero: warn 1 must not exceed error 0.1",
        "thresholds.constraints.error = 'big': must be a number",
        "publish_rat = 5.0: unknown parameter (did you mean 'publish_rate'?)",
    ):
        assert fragment in msg, (fragment, msg)
    assert msg.startswith("16 bad node parameter(s):")
    assert isinstance(e.value, ValueError)  # InputError: the node's main reports it without a traceback


@pytest.mark.parametrize(
    "values, fragment",
    [
        ({"publish_rate": True}, "publish_rate = True: must be a number"),
        ({"invariants_decimation": 2.0}, "invariants_decimation = 2.0: must be an integer >= 1"),
        ({"checks": "auto"}, "checks = 'auto': must be a list of names"),
        ({"thresholds.H_sys_constant.warn": math.nan}, "thresholds.H_sys_constant: warn nan must not exceed error"),
    ],
)
def test_wrong_types_are_named(values, fragment):
    with pytest.raises(ConfigError, match=r"^1 bad node parameter") as e:
        node_config({"model": "m.yaml", **values})
    assert fragment in str(e.value)


@pytest.mark.integration
def test_node_reports_every_bad_parameter_and_exits_2(tmp_path):
    """The node builds its config through node_config: bad parameters on the command line give
    one error listing them all (exit 2, no traceback), before any topic exists."""
    pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy")
    from tests.support import ros_sandbox as rt
    from tests.support.paths import MODELS

    log = tmp_path / "node.log"
    with rt.Sandbox("config") as sandbox:
        proc = rt.start_node(
            MODELS / "scara.yaml",
            {"publish_rate": -5.0, "executor": "multi", "thresholds.p_sys_zero.warn": 1.0},
            sandbox,
            log,
        )
        try:
            code = proc.wait(timeout=120)
        finally:
            rt.stop_node(proc)
    text = rt.read_log(log)
    assert code == 2, text
    for fragment in (
        "mbsfmu ros: error: 3 bad node parameter(s)",
        "publish_rate = -5.0: must be a positive number",
        "executor = 'multi': must be one of single, events",
        "thresholds.p_sys_zero: warn 1 must not exceed error 1e-06",
    ):
        assert fragment in text, text
    assert "Traceback" not in text


def test_the_shipped_parameters_file_lists_every_parameter_with_its_default():
    """ros_node/config/mbsfmu.yaml (installed to share/mbsfmu_ros/config) is a valid ROS 2 parameters
    file holding every parameter but the model, each at the node's default."""
    import yaml

    from tests.support.paths import ROOT

    doc = yaml.safe_load((ROOT / "ros_node" / "config" / "mbsfmu.yaml").read_text())
    params = dict(doc["/**"]["ros__parameters"])
    for check, levels in params.pop("thresholds").items():  # nested as ROS parameter files nest dotted names
        params.update({f"thresholds.{check}.{level}": v for level, v in levels.items()})
    expected = {name: default for name, default, _text, _num in declarations() if name != "model"}
    assert params == expected


def test_launch_arguments_given_win_over_the_params_file():
    """The launch file's parameter list: the params file first, then the launch arguments given
    (launch_ros applies them in order, a later one winning); arguments not given (empty) are left
    out, so the file's value stands; with robot_state_publisher the node's /tf is off unless given."""
    from mbsfmu_ros.config import launch_parameters

    given = {"publish_rate": "200.0", "real_time_factor": "", "lock_step": "true", "frame_prefix": ""}
    assert launch_parameters(given, "/abs/p.yaml") == ["/abs/p.yaml", {"publish_rate": 200.0, "lock_step": True}]
    assert launch_parameters({"publish_rate": ""}) == [{}]
    assert launch_parameters({}, "", robot_state_publisher=True) == [{"publish_tf": False}]
    assert launch_parameters({"publish_tf": "true"}, "", robot_state_publisher=True) == [{"publish_tf": True}]


@pytest.mark.integration
def test_the_node_started_as_the_launch_file_starts_it_takes_the_explicit_argument(tmp_path):
    """What launch_ros makes of ``launch_parameters``: one ``--params-file`` per entry, in order
    (a dict written to a temporary parameters file under ``/**``). The file sets publish_rate 50
    and frame_prefix f/, the launch argument publish_rate:=200: the node runs at 200 Hz (stamps
    5 ms apart; the file would give 20 ms) and keeps the file's frame_prefix (header frame f/world)."""
    pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy")
    import subprocess
    import sys

    import yaml
    from sensor_msgs.msg import JointState

    from mbsfmu_ros.config import launch_parameters
    from tests.support import ros_sandbox as rt
    from tests.support.paths import MODELS
    from tests.support.ros_interfaces import interfaces_loaded

    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"publish_rate": 50.0, "frame_prefix": "f/"}}}))
    args = []
    for k, entry in enumerate(launch_parameters({"publish_rate": "200.0", "frame_prefix": ""}, str(params_file))):
        if isinstance(entry, dict):
            path = tmp_path / f"launch_{k}.yaml"
            path.write_text(yaml.safe_dump({"/**": {"ros__parameters": entry}}))
            entry = str(path)
        args += ["--params-file", entry]
    interfaces_loaded()
    log = tmp_path / "node.log"
    with rt.Sandbox("launchargs") as sandbox:
        cmd = [sys.executable, "-m", "mbsfmu_ros", str(MODELS / "scara.yaml"), "--ros-args", *args, *sandbox.ros_args()]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, env=sandbox.env(), stdout=out, stderr=subprocess.STDOUT)
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            assert client.spin_until(lambda: len(client.msgs["/joint_states"]) >= 5), client.failure(log)
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
    js = client.msgs["/joint_states"]
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in js]
    assert {b - a for a, b in zip(stamps, stamps[1:])} == {5_000_000}
    assert {m.header.frame_id for m in js} == {"f/world"}
