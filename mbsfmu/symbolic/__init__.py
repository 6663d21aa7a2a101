"""Equations of motion in closed form: the PyMbs explicit scheme (seed 004_0c0a19c83fa138a1.txt,
Eq. 2-9) as SymPy expressions, and NumPy / C code generated from them (extra ``symbolic``)."""
