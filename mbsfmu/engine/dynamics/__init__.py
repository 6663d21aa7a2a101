"""Dynamics of the kinematic tree: RNEA, CRBA, ABA and No's transform formulation."""
