"""Dynamics of the kinematic tree: RNEA, CRBA, ABA and the seed-003 transform formulation."""
