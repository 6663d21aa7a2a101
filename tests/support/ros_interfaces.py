"""tf2_msgs and simulation_interfaces for tests: ``interfaces_loaded()`` builds them once into the
per-user cache (``mbsfmu_ros.interface_packages``: keyed by definitions and wheel versions, written
atomically, so concurrent test runs share one correct build) and makes them importable; a failed
build fails the test with its reason (the test environment has the generators and zig)."""

from __future__ import annotations

import functools


@functools.cache
def interfaces_loaded() -> None:
    from mbsfmu_ros import interface_packages

    missing = interface_packages.load(build=True)
    assert missing is None, missing
