"""Run in a subprocess by tests/io/test_hostile_inputs.py: put a YAML alias bomb (1 KB of text that
expands to 9^8 = 43 million list items) at every leaf of the given model and scenario files, load
each variant and print one JSON line per variant: its label, seconds taken and the outcome.
A loader that renders a value eagerly (repr, str, difflib) hangs here with memory growing; the
parent's timeout and RLIMIT_AS turn that into a failure."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

ANCHORS = "\n".join(
    ["zz_anchors:", "  - &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    + [f"  - &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
)
BOMB = "__alias_bomb__"


def leaves(node, path=()):
    """Paths of every value (mapping values and list items, containers included)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield path + (k,)
            yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield path + (i,)
            yield from leaves(v, path + (i,))


def bombed(doc, path) -> str:
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = BOMB
    text = yaml.safe_dump(doc, sort_keys=False, width=10**6)
    return ANCHORS + "\n" + text.replace(f"'{BOMB}'", "*a8").replace(BOMB, "*a8")


def main() -> int:
    from mbsfmu import MbsError, load_model
    from mbsfmu.scenario import build_simulator, load_scenario

    kind, src = sys.argv[1], Path(sys.argv[2])
    doc = yaml.safe_load(src.read_text())
    work = Path(tempfile.mkdtemp())
    try:
        if kind == "scenario":  # keep the scenario's relative model path valid
            shutil.copytree(src.parent / "models", work / "models")
        for path in leaves(doc):
            target = work / src.name
            target.write_text(bombed(doc, path))
            t0 = time.perf_counter()
            try:
                if kind == "model":
                    load_model(target)
                else:
                    build_simulator(load_scenario(target))
                outcome = "loaded"
            except MbsError as e:
                outcome = "error" if len(str(e)) < 100_000 else "huge error"
            print(
                json.dumps({"path": [str(p) for p in path], "s": time.perf_counter() - t0, "outcome": outcome}),
                flush=True,
            )
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
