"""Simulation on the engine: the Simulator (simulator.py: state, inputs, step, outputs), the
numpy integrators (integrators.py), per-step outputs (outputs.py: body records in the four
notations and the engine's own momentum and energy), the one trajectory-row builder (rows.py),
input schedules (schedules.py) and the joint PID controller (pid.py)."""
