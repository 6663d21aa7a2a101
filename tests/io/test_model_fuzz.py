"""Fuzz the model loader: mutated model files raise nothing but the project's own ModelError.
Examples per property: the hypothesis profile of tests/conftest.py (30 in the fast tier, 300 in a
run with the slow tier)."""

from __future__ import annotations

import copy
import json

import yaml
from hypothesis import given
from hypothesis import strategies as st

import mbsfmu
from mbsfmu.io.model_file import spec_from_dict

SCARA = {
    "version": 1,
    "name": "scara",
    "gravity": [0, -9.81, 0],
    "bodies": [
        {
            "name": "link1",
            "parent": "world",
            "joint": {"name": "q1", "type": "revolute", "axis": [0, 0, 1]},
            "mass": 2.0,
            "com": [0.5, 0.02, 0.0],
            "inertia": {"Ixx": 0.01, "Iyy": 0.17, "Izz": 0.17},
            "frames": {"elbow": [1.0, 0, 0]},
        },
        {
            "name": "link2",
            "parent": "link1",
            "joint": {
                "name": "q2",
                "type": "revolute",
                "axis": [0, 0, 1],
                "origin": {"xyz": [1.0, 0, 0]},
                "spring": {"k": 1.0, "d": 0.1, "q0": 0.0},
            },
            "mass": 1.5,
            "com": [0.4, 0.05, 0.0],
            "inertia": {"Ixx": 0.005, "Iyy": 0.08, "Izz": 0.08},
            "frames": {"tip": {"xyz": [0.8, 0, 0], "rpy": [0, 0, 0.1]}},
        },
    ],
    "initial": {"q": {"q1": 0.3, "q2": -0.5}, "qd": {"q1": 0.1}},
}

BRANCHED = {
    "version": 1,
    "name": "branched",
    "bodies": [
        {
            "name": "base",
            "parent": "world",
            "joint": {"name": "float", "type": "free"},
            "mass": 5.0,
            "inertia": [[0.2, 0, 0], [0, 0.3, 0], [0, 0, 0.4]],
            "wheels": [{"name": "rw1", "axis": [1, 0, 0], "inertia": 0.05, "position": [0, 0.1, 0]}],
        },
        {"name": "mount", "parent": "base", "joint": {"type": "fixed", "origin": {"xyz": [0, 0, 0.1]}}},
        {
            "name": "ball",
            "parent": "mount",
            "joint": {"name": "shoulder", "type": "spherical", "actuated": False},
            "mass": 1.0,
            "com": [0, 0, 0.2],
            "inertia": {"Ixx": 0.01, "Iyy": 0.01, "Izz": 0.01},
        },
        {
            "name": "slider",
            "parent": "base",
            "joint": {"name": "slide", "type": "prismatic", "axis": [1, 0, 0], "origin": {"rpy": [0, 0.5, 0]}},
            "mass": 0.5,
            "inertia": {"Ixx": 0.001, "Iyy": 0.001, "Izz": 0.001, "Ixy": 0.0001},
            "frames": {"pad": [0.1, 0, 0]},
        },
    ],
    "forces": [
        {
            "type": "spring",
            "name": "s1",
            "a": {"body": "ball", "point": [0, 0, 0.3]},
            "b": {"body": "world"},
            "k": 10.0,
            "d": 0.1,
            "l0": 0.5,
        },
        {"type": "thruster", "name": "thr1", "body": "base", "point": [0, 0, 1], "direction": [0, 0, 1]},
        {"type": "wrench", "name": "push", "body": "slider", "axes": "body"},
    ],
    "initial": {"q": {"float": [0, 0, 1, 1, 0, 0, 0], "shoulder": [1, 0, 0, 0]}, "qd": {"rw1": 2.0}},
}

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=6),
    st.integers(-3, 3),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1.0, -1e-9, 0.0, 1e308, -1e308, 10**400]),
    st.lists(st.floats(-2, 2), max_size=5),
    st.lists(st.integers(-2, 2), max_size=3).map(lambda x: [x]),
    st.dictionaries(
        st.sampled_from(["name", "xyz", "Ixx", "k", "q", "type", "body", "zz"]), st.integers(-1, 1), max_size=2
    ),
    st.sampled_from(
        [
            "world",
            "link1",
            "base",
            "ball",
            "rw1",
            "revolute",
            "free",
            "spring",
            "thruster",
            ".nan",
            "1e-3",
            "2001-02-30",
        ]
    ),
)
OPS = ("replace", "delete", "add_key", "resize", "nest", "duplicate_body", "reorder_bodies", "parent", "joint_type")


def _slots(node, out):
    """Every (container, key) in the document, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.append((node, key))
        _slots(value, out)
    return out


def _mutate(doc, draw) -> None:
    op = draw(st.sampled_from(OPS))
    bodies = doc.get("bodies") if isinstance(doc.get("bodies"), list) else None
    if op in ("duplicate_body", "reorder_bodies", "parent", "joint_type") and bodies:
        k = draw(st.integers(0, len(bodies) - 1))
        if op == "duplicate_body":
            bodies.insert(draw(st.integers(0, len(bodies))), copy.deepcopy(bodies[k]))
        elif op == "reorder_bodies":
            bodies[:] = draw(st.permutations(bodies))
        elif isinstance(bodies[k], dict):
            names = [b.get("name") for b in bodies if isinstance(b, dict)]
            if op == "parent":
                bodies[k]["parent"] = draw(st.sampled_from([*names, "world", "nowhere", "World"]))
            elif isinstance(bodies[k].get("joint"), dict):
                bodies[k]["joint"]["type"] = draw(
                    st.sampled_from(["fixed", "revolute", "prismatic", "spherical", "free", "revolut", "hinge"])
                )
        return
    slots = _slots(doc, [])
    if not slots:
        return
    node, key = slots[draw(st.integers(0, len(slots) - 1))]
    value = node[key]
    if op == "delete":
        del node[key]
    elif op == "add_key" and isinstance(value, dict):
        value[draw(st.sampled_from(["mas", "Name", "parnet", "typ", "inertia", "extra", "axes", "q0"]))] = draw(JUNK)
    elif op == "resize" and isinstance(value, list):
        if draw(st.booleans()) and value:
            value.pop()
        else:
            value.append(draw(JUNK))
    elif op == "nest":
        node[key] = draw(st.sampled_from([[value], {"value": value}, [value, value]]))
    else:
        node[key] = draw(JUNK)


def _mutated(data) -> dict:
    doc = copy.deepcopy(data.draw(st.sampled_from([SCARA, BRANCHED])))
    for _ in range(data.draw(st.integers(1, 4))):
        _mutate(doc, data.draw)
    return doc


def _text(doc, fmt: str) -> str:
    return json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc, sort_keys=False)


@given(data=st.data(), fmt=st.sampled_from(["yaml", "yaml", "json"]))
def test_mutated_file_raises_only_model_error(tmp_path_factory, data, fmt):
    path = tmp_path_factory.mktemp("fuzz") / f"model.{fmt}"
    path.write_text(_text(_mutated(data), fmt), encoding="utf-8")
    try:
        model = mbsfmu.load_model(path)
    except mbsfmu.ModelError as e:
        assert e.problems and all(p.message for p in e.problems)
        assert str(path) in str(e)
    else:
        assert isinstance(model, mbsfmu.Model)


@given(data=st.data())
def test_mutated_dict_raises_only_model_error(data):
    try:
        mbsfmu.Model(spec_from_dict(_mutated(data), source="fuzz"), source="fuzz")
    except mbsfmu.ModelError as e:
        assert e.problems and all(p.message for p in e.problems)


@given(data=st.data())
def test_mutated_text_raises_only_model_error(tmp_path_factory, data):
    lines = yaml.safe_dump(data.draw(st.sampled_from([SCARA, BRANCHED])), sort_keys=False).splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        k = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["delete", "duplicate", "indent", "dedent", "insert"]))
        if op == "delete":
            del lines[k]
        elif op == "duplicate":
            lines.insert(k, lines[k])
        elif op in ("indent", "dedent"):
            lines[k] = "  " + lines[k] if op == "indent" else lines[k][2:]
        else:
            at = data.draw(st.integers(0, len(lines[k])))
            token = data.draw(
                st.sampled_from(
                    [
                        "[",
                        "]",
                        "{",
                        "}",
                        ":",
                        "- ",
                        "&a ",
                        "*a",
                        "!!float ",
                        "!!int ",
                        "!!timestamp ",
                        "!!binary ",
                        "<<: ",
                        "? ",
                        "'",
                        '"',
                        "#",
                        "\t",
                        "\x07",
                        "2001-02-30",
                        ".nan",
                        "~",
                        "1e999",
                        "---\n",
                    ]
                )
            )
            lines[k] = lines[k][:at] + token + lines[k][at:]
    path = tmp_path_factory.mktemp("fuzz") / "model.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        mbsfmu.load_model(path)
    except mbsfmu.ModelError as e:
        assert e.problems
