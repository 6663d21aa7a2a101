"""Helpers shared by the tests that are neither tests nor fixtures (fixtures live in the
conftest.py files): the repository's paths, random trees and their Pinocchio twins, FMU builders
and hosts, and the scripts the tests run in child processes (run by path, never imported by
pytest: fmu_probe.py, fmu_misuse_runner.py, hostile_yaml.py). Imported as ``tests.support.x``:
pytest puts the repository root on sys.path because tests/ is a package."""
