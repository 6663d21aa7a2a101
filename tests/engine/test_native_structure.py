"""The C core's modules call each other without a cycle (issue 20 item 8): each .c file is one
concept, and a module's callees never call back into it (loops.c once called model.c's
mbs_all_finite while model.c sized the loop work with loops.c's mbs_loop_work)."""

from __future__ import annotations

import re

from mbsfmu.engine.native import build

DEFINITION = re.compile(r"^[a-z][\w \*]*?\b(mbs_\w+)\(", re.MULTILINE)  # an external function at column 0
CALL = re.compile(r"\b(mbs_\w+)\(")


def call_graph() -> dict[str, set[str]]:
    """module (a .c file of build.SOURCES) -> the other modules whose functions it calls."""
    texts = {name: (build.HERE / name).read_text(encoding="utf-8") for name in build.SOURCES}
    owner = {f: name for name, text in texts.items() for f in DEFINITION.findall(text)}
    return {
        name: {owner[f] for f in CALL.findall(text) if f in owner and owner[f] != name} for name, text in texts.items()
    }


def test_call_graph_is_read():
    """The parser sees the known calls (else the acyclicity test below could pass on nothing)."""
    graph = call_graph()
    assert "loops.c" in graph["model.c"]  # mbs_loop_work sizes the loop work area
    assert {"integrate.c", "model.c", "loops.c"} <= graph["sim.c"]


def test_modules_form_no_cycle():
    """A depth-first search finds no module reachable from itself."""
    graph = call_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, "cycle: " + " -> ".join([*path, node, nxt])
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
