"""What a worker must have to run a campaign, and the proof each worker gives before the first run:
the client's mbsfmu version and native core (the core library's name carries the hash of its
sources and flags), and the scenario and model files at the client's (absolute) paths with the
client's SHA-256, and input schedules (csv tables included) that parse to the client's values.
Workers read these files by path; nothing is shipped to them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

# Evaluated on each worker by ``client.run(eval, PROBE, {"files": ...})``: a builtin and a string
# unpickle anywhere, so a worker that cannot import mbsfmu answers with that ImportError instead
# of failing to unpickle the probe.
PROBE = "__import__('mbsfmu.campaign.provision', fromlist=['worker_facts']).worker_facts(files)"


def inputs_digest(scn) -> str:
    """SHA-256 of a scenario's parsed input schedules (names, kinds, numbers, csv tables' values)."""
    h = hashlib.sha256()
    for name in sorted(scn.inputs):
        s = scn.inputs[name]
        h.update(f"{name}\0{s.kind}\0".encode())
        for key in sorted(s.params):
            h.update(key.encode() + b"\0" + np.asarray(s.params[key], dtype=float).tobytes())
    return h.hexdigest()


def worker_facts(files: dict[str, str]) -> dict:
    """This process's mbsfmu version, native core library name, and per path of ``files``
    ({path: client's SHA-256}) the SHA-256 here ("missing" when the file cannot be read); for the
    scenario file, ``inputs``: the digest of its parsed input schedules."""
    from .. import __version__
    from ..engine.native.build import library_name
    from ..scenario.spec import load_scenario

    here = {}
    for path in files:
        try:
            here[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            here[path] = "missing"
    facts = {"version": __version__, "core": library_name(), "files": here}
    scenario = next(iter(files), None)
    if scenario is not None and here[scenario] == files[scenario]:
        facts["inputs"] = inputs_digest(load_scenario(scenario))
    return facts


def differences(ours: dict, theirs: dict | BaseException) -> list[str]:
    """What differs between the client's facts ``ours`` and a worker's answer ``theirs`` (its facts,
    or the exception its probe raised), each as "what: worker's value, client's value"."""
    if isinstance(theirs, BaseException):
        first = str(theirs).strip().splitlines()[:1]
        what = "cannot import mbsfmu" if isinstance(theirs, ImportError) else "cannot check the campaign there"
        return [f"{what} ({type(theirs).__name__}: {first[0] if first else ''})"]
    out = []
    if theirs.get("version") != ours["version"]:
        out.append(f"mbsfmu {theirs.get('version')} there, {ours['version']} here")
    if theirs.get("core") != ours["core"]:
        out.append(f"native core {theirs.get('core')} there, {ours['core']} here")
    for path, sha in ours["files"].items():
        got = theirs.get("files", {}).get(path)
        if got == "missing":
            out.append(f"{path} missing there")
        elif got != sha:
            out.append(f"{path} differs (sha256 {str(got)[:12]} there, {sha[:12]} here)")
    if "inputs" in theirs and theirs["inputs"] != ours["inputs"]:
        out.append("the scenario's input schedules (csv tables) differ")
    return out
