"""The engine: spatial algebra (spatial.py), joint models (joints.py), the model description and
its checks (spec/: description, topology by path matrix, compiled tree, force elements, loops,
validation, edits), kinematics (kinematics.py), force elements (forces.py), the dynamics in numpy,
the reference (dynamics/: RNEA, CRBA, ABA, velocity transformation, closed loops, singularity
check), the C core that runs them fast (native/) and ``Model``, which ties them together (model.py).

The engine imports nothing above it (no file readers, no simulator, no faces): the import
contracts in pyproject.toml ([tool.importlinter]) are checked by tests/test_architecture.py.
"""
