"""Linearization about an operating point: A, B, C, D in minimal coordinates (tangent.py), the
dynamics Jacobians (jacobians.py, the one place they are computed), equilibria (equilibrium.py),
the state-space model (statespace.py), its files (files.py: .npz, .mat, .json) and the command
``mbsfmu linearize`` (command.py)."""
