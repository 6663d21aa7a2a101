"""How large a model the explicit scheme derives (no SymPy import: the CLI reads these to build
its parser on machines without the ``symbolic`` extra)."""

# The explicit scheme's limits. Its expressions grow with the number of moving joints in series (each
# rotation multiplies the terms of everything outboard): measured (docs/guides/closed-form.md), the
# derivation takes 0.2 s for SCARA (2 in series), 7 s for a 7-link chain (7), 97 s for a 7-DoF arm with
# two fingers (8 in series) and 29 s for a 19-rate branched robot (4 in series); the number of rates
# adds terms only linearly. A model past either limit is refused at once, before any algebra.
MAX_SERIES = 7  # moving joints on the longest path from the world
MAX_NV = 20  # joint rates
