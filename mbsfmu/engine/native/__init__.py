"""The C engine core (mbs_core.h and its sources), its build (build.py), Python binding (core.py),
model tables (tables.py) and the Python-free FMU (mbsfmu/fmu/native.py, fmu_instance.c)."""
