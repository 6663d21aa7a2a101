"""How large a model ``mbsfmu derive`` takes by default (no SymPy import: the CLI reads these to build
its parser on machines without the ``symbolic`` extra)."""

# The scheme keeps each body's quantities as intermediate variables (mbsfmu/symbolic/scheme.py), so
# its statements grow with the bodies (kinematics, h, f) and with the bodies times the joints in
# series (the nv (nv + 1) / 2 entries of M). Measured (docs/guides/closed-form.md: derive and write
# the NumPy and C code, shared 2-core machine at load ~5): general 7-DoF arm 2.1 s, 30-body chain
# 12 s, 60-body chain 38 s. Past these limits the command refuses at once, before any algebra; the
# options raise them knowingly.
MAX_SERIES = 64  # moving joints on the longest path from the world
MAX_NV = 64  # joint rates
