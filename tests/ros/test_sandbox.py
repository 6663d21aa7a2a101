"""The isolation helpers of tests/support/ros_sandbox.py, without ROS: a leased domain id is exclusive
(between leases of one process and between processes) and free again when its holder releases it
or dies; a sandbox's names are unique, valid ROS names and cover every topic of the node."""

import re
import subprocess
import sys

import pytest

from mbsfmu_ros import topics
from tests.support import ros_sandbox as rt

ROS_NAME = re.compile(r"^(/[A-Za-z_][A-Za-z0-9_]*)+$")


def test_leases_in_one_process_never_share_an_id(tmp_path):
    leases = [rt.lease_domain(range(10, 14), tmp_path) for _ in range(4)]
    assert sorted(lease.domain_id for lease in leases) == [10, 11, 12, 13]
    with pytest.raises(RuntimeError, match="every ROS domain id in range"):
        rt.lease_domain(range(10, 14), tmp_path)
    leases[2].release()
    again = rt.lease_domain(range(10, 14), tmp_path)
    assert again.domain_id == leases[2].domain_id
    for lease in leases + [again]:
        lease.release()


@pytest.mark.integration
def test_a_lease_held_by_another_process_is_skipped_and_freed_when_it_dies(tmp_path):
    code = (
        "import sys; from tests.support import ros_sandbox as rt; "
        f"lease = rt.lease_domain([77], {str(tmp_path)!r}); print(lease.domain_id, flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "77"
        with pytest.raises(RuntimeError):
            rt.lease_domain([77], tmp_path)
        other = rt.lease_domain([77, 78], tmp_path)
        assert other.domain_id == 78
        other.release()
    finally:
        holder.kill()  # no clean release: the kernel drops the flock
        holder.wait(10)
    with rt.lease_domain([77], tmp_path) as lease:
        assert lease.domain_id == 77


def test_sandbox_names_are_unique_valid_and_cover_every_topic(tmp_path):
    with (
        rt.Sandbox("a-b.c", ids=range(30, 32), lock_dir=tmp_path) as a,
        rt.Sandbox("a-b.c", ids=range(30, 32), lock_dir=tmp_path) as b,
    ):
        assert a.domain_id != b.domain_id
        assert a.node_name != b.node_name and a.prefix != b.prefix
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", a.node_name) and ROS_NAME.match(a.prefix)
        args = a.ros_args()
        rules = dict(r.split(":=") for r in args[1::2])
        assert args[0::2] == ["-r"] * len(rules)
        assert rules.pop("__node") == a.node_name
        assert set(rules) == set(topics.ALL)
        assert all(rules[t] == a.prefix + t and ROS_NAME.match(rules[t]) for t in topics.ALL)
        assert a.topic("/rosout") == "/rosout" and a.topic("/joint_states") == a.prefix + "/joint_states"
        assert a.service("~/pause") == f"/{a.node_name}/pause"
        assert a.env({"ROS_LOCALHOST_ONLY": "1"}) == {
            "ROS_DOMAIN_ID": str(a.domain_id),
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
            "RCUTILS_COLORIZED_OUTPUT": "0",
        }
