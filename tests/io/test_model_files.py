"""Bad model files: one test per validation rule, each checking the file line and field path."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

import mbsfmu
from mbsfmu.io import model_file as mf
from mbsfmu.io.model_file import spec_from_dict
from mbsfmu.scenario.spec import ScenarioError, load_scenario

GOOD = """\
version: 1
name: arm
gravity: [0, 0, -9.81]
bodies:
  - name: link1
    parent: world
    joint: {name: q1, type: revolute, axis: [0, 0, 1]}
    mass: 2.0
    com: [0.5, 0, 0]
    inertia: {Ixx: 0.01, Iyy: 0.17, Izz: 0.17}
    frames: {elbow: [1.0, 0, 0]}
  - name: link2
    parent: link1
    joint:
      name: q2
      type: revolute
      axis: [0, 1, 0]
      origin: {xyz: [1.0, 0, 0], rpy: [0, 0, 0]}
      spring: {k: 10.0, d: 0.5, q0: 0.0}
    mass: 1.5
    com: [0.4, 0, 0]
    inertia:  # of link2
      Ixx: 0.005
      Iyy: 0.08
      Izz: 0.08
    frames: {tip: [0.8, 0, 0]}
  - name: hand
    parent: link2
    joint: {name: wrist, type: spherical, origin: {xyz: [0.8, 0, 0]}}
    mass: 0.5
    inertia: [[0.001, 0, 0], [0, 0.001, 0], [0, 0, 0.001]]
initial:
  q: {q1: 0.3, q2: -0.5, wrist: [1, 0, 0, 0]}
  qd: {q1: 0.1}
"""

# rule: (edits of GOOD, field path named, text on the reported line, message fragment)
RULES = {
    "unknown parent": (
        [("parent: link1", "parent: lnk1")],
        "bodies[1].parent",
        "parent: lnk1",
        "unknown parent 'lnk1' of body 'link2' (did you mean 'link1'?)",
    ),
    "cycle": (
        [("parent: world", "parent: hand")],
        "bodies[0].parent",
        "parent: hand",
        "body 'link1' is on a cycle of parents (link1 -> hand -> link2 -> link1)",
    ),
    "own parent": (
        [("parent: link2", "parent: hand")],
        "bodies[2].parent",
        "parent: hand",
        "cycle of parents (hand -> hand)",
    ),
    "duplicate body": (
        [("name: hand", "name: link1")],
        "bodies[2].name",
        "name: link1\n    parent: link2",
        "duplicate body name 'link1' (also bodies[0].name)",
    ),
    "duplicate joint": (
        [("name: wrist", "name: q1")],
        "bodies[2].joint.name",
        "type: spherical",
        "duplicate joint name 'q1' (also bodies[0].joint.name)",
    ),
    "duplicate frame": (
        [("tip: [0.8", "elbow: [0.8")],
        "bodies[1].frames.elbow",
        "elbow: [0.8",
        "duplicate frame name 'elbow' (also bodies[0].frames.elbow)",
    ),
    "frame named like another body": (
        [("tip: [0.8", "hand: [0.8")],
        "bodies[1].frames.hand",
        "hand: [0.8",
        "frame name 'hand' names a body: only a body's own frame at its origin",
    ),
    "frame named like its body, off its origin": (
        [("tip: [0.8", "link2: [0.8")],
        "bodies[1].frames.link2",
        "link2: [0.8",
        "frame name 'link2' names a body",
    ),
    "world body": ([("name: hand", "name: world")], "bodies[2].name", "name: world", "'world' is the inertial frame"),
    "negative mass": ([("mass: 1.5", "mass: -1.5")], "bodies[1].mass", "mass: -1.5", "negative mass -1.5 kg"),
    "inertia not symmetric": (
        [("[0, 0.001, 0], [0, 0, 0.001]]", "[0.0005, 0.001, 0], [0, 0, 0.001]]")],
        "bodies[2].inertia",
        "[0.0005",
        "inertia is not symmetric",
    ),
    "inertia not PSD": (
        [("Ixx: 0.005", "Ixx: -0.005")],
        "bodies[1].inertia",
        "# of link2",
        "inertia is not positive semi-definite",
    ),
    "triangle inequality": (
        [("Ixx: 0.005", "Ixx: 0.2")],
        "bodies[1].inertia",
        "# of link2",
        "violate the triangle inequality I1 + I2 >= I3 (0.08 + 0.08 < 0.2)",
    ),
    "zero-length axis": (
        [("axis: [0, 1, 0]", "axis: [0, 0, 0]")],
        "bodies[1].joint.axis",
        "axis: [0, 0, 0]",
        "zero-length axis",
    ),
    "nan": ([("mass: 1.5", "mass: .nan")], "bodies[1].mass", "mass: .nan", "expected a finite number, got nan"),
    "inf in a vector": (
        [("com: [0.4, 0, 0]", "com: [0.4, .inf, 0]")],
        "bodies[1].com[1]",
        "com: [0.4, .inf",
        "expected a finite number, got inf",
    ),
    "-inf stiffness": ([("k: 10.0", "k: -.inf")], "bodies[1].joint.spring.k", "k: -.inf", "got -inf"),
    "beyond float range": (
        [("mass: 1.5", "mass: 1" + "0" * 400)],
        "bodies[1].mass",
        "mass: 1000",
        "beyond the float range",
    ),
    "boolean is not a number": (
        [("mass: 1.5", "mass: true")],
        "bodies[1].mass",
        "mass: true",
        "expected a number, got the boolean True",
    ),
    "text is not a number": (
        [("Iyy: 0.08", "Iyy: heavy")],
        "bodies[1].inertia.Iyy",
        "Iyy: heavy",
        "expected a number, got the text 'heavy'",
    ),
    "vector length": (
        [("com: [0.4, 0, 0]", "com: [0.4, 0]")],
        "bodies[1].com",
        "com: [0.4, 0]",
        "expected a list of 3 numbers, got 2 entries",
    ),
    "gravity length": (
        [("gravity: [0, 0, -9.81]", "gravity: [0, -9.81]")],
        "gravity",
        "gravity:",
        "expected a list of 3 numbers, got 2 entries",
    ),
    "inertia row length": (
        [("[0, 0, 0.001]]", "[0, 0.001]]")],
        "bodies[2].inertia[2]",
        "[[0.001",
        "expected a list of 3 numbers, got 2 entries",
    ),
    "null value": ([("Izz: 0.08", "Izz:")], "bodies[1].inertia.Izz", "Izz:\n", "expected a number, got nothing"),
    "unknown body key": (
        [("mass: 1.5", "mas: 1.5")],
        "bodies[1].mas",
        "mas: 1.5",
        "unknown key 'mas' (did you mean 'mass'?)",
    ),
    "unknown top key": (
        [("gravity:", "gravty:")],
        "gravty",
        "gravty:",
        "unknown key 'gravty' (did you mean 'gravity'?)",
    ),
    "unknown joint key": (
        [("axis: [0, 1, 0]", "axes: [0, 1, 0]")],
        "bodies[1].joint.axes",
        "axes:",
        "unknown key 'axes' (did you mean 'axis'?)",
    ),
    "missing joint": (
        [("    joint: {name: wrist, type: spherical, origin: {xyz: [0.8, 0, 0]}}\n", "")],
        "bodies[2].joint",
        "name: hand",
        "missing required key 'joint'",
    ),
    "unknown joint type": (
        [("type: spherical", "type: sphericl")],
        "bodies[2].joint.type",
        "sphericl",
        "unknown joint type 'sphericl'; expected one of fixed, revolute",
    ),
    "spring on 3-DoF joint": (
        [("type: spherical,", "type: spherical, spring: {k: 1},")],
        "bodies[2].joint.spring",
        "spring: {k: 1}",
        "a joint spring needs a 1-DoF joint, this one is spherical",
    ),
    "negative damping": ([("d: 0.5", "d: -0.5")], "bodies[1].joint.spring.d", "d: -0.5", "negative damping -0.5"),
    "actuated not boolean": (
        [("type: spherical,", "type: spherical, actuated: 1,")],
        "bodies[2].joint.actuated",
        "actuated: 1",
        "expected true or false, got the number 1",
    ),
    "name not text": (
        [("name: hand", "name: [hand]")],
        "bodies[2].name",
        "name: [hand]",
        "expected a non-empty name, got a list",
    ),
    "frames not a mapping": (
        [("{tip: [0.8, 0, 0]}", "[0.8, 0, 0]")],
        "bodies[1].frames",
        "frames: [0.8",
        "expected a mapping of frame name",
    ),
    "initial unknown joint": (
        [("qd: {q1: 0.1}", "qd: {q1: 0.1, q3: 0.2}")],
        "initial.qd.q3",
        "qd: {",
        "unknown joint 'q3'",
    ),
    "initial size": (
        [("q2: -0.5", "q2: [-0.5, 0.1]")],
        "initial.q.q2",
        "q2: [-0.5",
        "joint 'q2' (revolute) takes 1 value(s) for q, got 2",
    ),
    "initial quaternion": (
        [("wrist: [1, 0, 0, 0]", "wrist: [1, 1, 0, 0]")],
        "initial.q.wrist",
        "wrist: [1, 1",
        "has norm 1.41421356237, must be 1",
    ),
    "initial nan": ([("q1: 0.3", "q1: .nan")], "initial.q.q1", "q1: .nan", "expected a finite number, got nan"),
    "schema version": (
        [("version: 1", "version: 2")],
        "version",
        "version: 2",
        "unsupported model schema version: got the number 2, this mbsfmu reads version 1",
    ),
    "schema version boolean": ([("version: 1", "version: true")], "version", "version: true", "got the boolean True"),
    "missing version": ([("version: 1\n", "")], "version", "name: arm", "missing required key 'version'"),
}


def _error(tmp_path, text: str, name: str = "bad.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(mbsfmu.ModelError) as info:
        mbsfmu.load_model(path)
    return str(info.value)


def _line(text: str, snippet: str) -> int:
    """1-based line where ``snippet`` (possibly spanning lines) starts."""
    return text[: text.index(snippet)].count("\n") + 1


def _reported(message: str, where: str) -> list[str]:
    return [line for line in message.splitlines() if where in line]


def test_good_model_loads(tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(GOOD, encoding="utf-8")
    model = mbsfmu.load_model(path)
    assert model.body_names == ("link1", "link2", "hand")
    assert model.nq == 6 and model.nv == 5


@pytest.mark.parametrize("edits, field, at, fragment", RULES.values(), ids=RULES.keys())
def test_rule_reports_line_and_field(tmp_path, edits, field, at, fragment):
    text = GOOD
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    message = _error(tmp_path, text)
    hits = _reported(message, f"bad.yaml:{_line(text, at)}: {field}: ")
    assert hits and fragment in hits[0], message


def test_every_problem_reported_at_once_in_file_order(tmp_path):
    text = (
        GOOD.replace("mass: 1.5", "mass: -1.5")
        .replace("com: [0.5, 0, 0]", "cmo: [0.5, 0, 0]")
        .replace("parent: link1", "parent: hand")
        .replace("Iyy: 0.001", "Iyy: .inf")
        .replace("[0, 0.001, 0], [0, 0, 0.001]]", "[0, .inf, 0], [0, 0, 0.001]]")
    )
    message = _error(tmp_path, text)
    expected = [
        (_line(text, "cmo:"), "bodies[0].cmo", "unknown key 'cmo' (did you mean 'com'?)"),
        (_line(text, "parent: hand"), "bodies[1].parent", "cycle of parents (link2 -> hand -> link2)"),
        (_line(text, "mass: -1.5"), "bodies[1].mass", "negative mass"),
        (_line(text, "[[0.001"), "bodies[2].inertia[1][1]", "expected a finite number, got inf"),
    ]
    assert message.startswith(f"{len(expected) + 1} problem(s)"), message  # + the hand's cycle report
    positions = []
    for line, field, fragment in expected:
        hits = _reported(message, f"bad.yaml:{line}: {field}: ")
        assert hits and fragment in hits[0], message
        positions.append(message.index(hits[0]))
    assert positions == sorted(positions)


def test_problems_under_an_unreadable_field_are_not_repeated(tmp_path):
    message = _error(tmp_path, GOOD.replace("Ixx: 0.005", "Ixx: big"))
    assert message.startswith("1 problem(s)") and "bodies[1].inertia.Ixx: expected a number" in message


def test_bodies_hanging_from_a_cycle_are_not_reported(tmp_path):
    message = _error(tmp_path, GOOD.replace("parent: world", "parent: link2"))
    assert message.startswith("2 problem(s)"), message
    assert "link1 -> link2 -> link1" in message and "'hand'" not in message


@pytest.mark.parametrize(
    "first, second",
    [
        (
            "joint: {type: revolute, axis: [0, 0, 1]}",
            "joint: {type: revolute, axis: [0, 0, 1], origin: {xyz: [1, 0, 0]}}",
        ),
        ("joint: {type: fixed, origin: {xyz: [0, 0, 0.2]}}", "joint: {type: revolute, axis: [1, 0, 0]}"),
    ],
    ids=["revolute chain", "fixed URDF-style link"],
)
def test_massless_intermediate_body_is_legal(tmp_path, first, second):
    path = tmp_path / "massless.yaml"
    path.write_text(
        f"""\
version: 1
bodies:
  - name: carrier
    parent: world
    {first}
  - name: load
    parent: carrier
    {second}
    mass: 1.0
    com: [0.3, 0.1, 0.2]
    inertia: {{Ixx: 0.01, Iyy: 0.01, Izz: 0.01}}
""",
        encoding="utf-8",
    )
    model = mbsfmu.load_model(path)
    assert model.tree.mass[1] == 0.0
    M = model.mass_matrix(model.neutral())
    assert np.linalg.eigvalsh(M)[0] > 1e-4


@pytest.mark.parametrize(
    "load, field",
    [
        ("mass: 0.0", "bodies[1].joint"),
        ("mass: 2.0\n    com: [0, 0, 0.5]", "bodies[1].joint"),  # a point mass on its own axis
    ],
    ids=["massless leaf", "point mass on the axis"],
)
def test_joint_moving_no_mass_is_reported_by_name(tmp_path, load, field):
    text = f"""\
version: 1
bodies:
  - name: base
    parent: world
    joint: {{name: slide, type: prismatic, axis: [1, 0, 0]}}
    mass: 1.0
    inertia: {{Ixx: 0.01, Iyy: 0.01, Izz: 0.01}}
  - name: tip
    parent: base
    joint: {{name: spin, type: revolute, axis: [0, 0, 1]}}
    {load}
"""
    message = _error(tmp_path, text)
    hits = _reported(message, f"bad.yaml:{_line(text, 'joint: {name: spin')}: {field}: ")
    assert message.startswith("1 problem(s)") and hits, message
    assert "joint 'spin' moves no mass or inertia" in hits[0] and "mass matrix is singular" in hits[0]


def test_coaxial_joints_with_massless_body_between_are_reported(tmp_path):
    # the disc turns about the common axis whichever joint moves: M = Izz [[1, 1], [1, 1]]
    text = """\
version: 1
bodies:
  - name: hub
    parent: world
    joint: {name: outer, type: revolute, axis: [0, 0, 1]}
  - name: disc
    parent: hub
    joint: {name: inner, type: revolute, axis: [0, 0, 1]}
    mass: 1.0
    com: [0, 0, 0.1]
    inertia: {Ixx: 0.1, Iyy: 0.1, Izz: 0.2}
"""
    message = _error(tmp_path, text)
    outer = _reported(message, f"bad.yaml:{_line(text, 'name: outer')}: bodies[0].joint: ")
    inner = _reported(message, f"bad.yaml:{_line(text, 'name: inner')}: bodies[1].joint: ")
    assert outer and "joint 'outer' combined with 'inner' moves no mass or inertia" in outer[0], message
    assert inner and "joint 'inner' combined with 'outer'" in inner[0], message


def test_bodies_listed_out_of_order_load(tmp_path):
    head, link1, link2, hand = GOOD.split("  - name: ")
    hand, initial = hand.split("initial:")
    path = tmp_path / "shuffled.yaml"
    path.write_text("  - name: ".join([head, hand, link2, link1]) + "initial:" + initial, encoding="utf-8")
    model = mbsfmu.load_model(path)
    assert [b.name for b in model.spec.bodies] == ["hand", "link2", "link1"]
    assert model.body_names == ("link1", "link2", "hand")
    assert model.L.tolist() == [-1, 0, 1, 2]
    assert model.supports("hand") == ["link1", "link2", "hand"]


def test_json_file_equivalent(tmp_path):
    doc = yaml.safe_load(GOOD)
    (tmp_path / "arm.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "arm.yaml").write_text(GOOD, encoding="utf-8")
    q = np.array([0.3, -0.5, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(
        mbsfmu.load_model(tmp_path / "arm.json").mass_matrix(q),
        mbsfmu.load_model(tmp_path / "arm.yaml").mass_matrix(q),
        rtol=0,
        atol=0,
    )
    doc["bodies"][1]["mass"] = -1.5
    doc["bodies"][2]["joint"]["typ"] = "spherical"
    message = _error(tmp_path, json.dumps(doc, indent=1), "bad.json")
    assert "bad.json: bodies[1].mass: negative mass -1.5 kg" in message
    assert "bad.json: bodies[2].joint.typ: unknown key 'typ' (did you mean 'type'?)" in message


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("version: 1\nbodies:\n  - name: a\n    parent world\n    mass: 1\n", 5, "broken YAML"),
        ("version: 1\nbodies: [{name: a}\n", 3, "broken YAML"),
        ("version: 1\nname: 2001-02-30\n", 2, "cannot read the text '2001-02-30' as timestamp"),
        ("version: 1\nname: !!float ''\n", 2, "cannot read the text '' as float"),
        ("version: 1\n---\nversion: 1\n", 2, "broken YAML"),
        ("version: 1\nname: \"a\x07\"\n", 2, "character #x0007"),
    ],
    ids=[
        "missing colon",
        "unclosed flow",
        "bad date",
        "empty tagged float",
        "two documents",
        "control character",
    ],
)
def test_broken_yaml_reports_line(tmp_path, text, line, fragment):
    """One problem at the file's line; the parser's own words after "broken YAML: " belong to the
    installed PyYAML/libyaml and are not asserted (only our texts: duplicate key, cannot read ...)."""
    message = _error(tmp_path, text)
    assert f"bad.yaml:{line}: (top level): " in message and fragment in message, message


def test_duplicate_keys_come_with_the_files_other_problems_in_one_round(tmp_path):
    """Every duplicate key (its field, line and the first one's line) with every other problem of
    the file: they came one stage at a time (the first duplicate alone, then the rest; issue 37)."""
    text = (
        "version: 1\nname: a\nname: b\nbodies:\n  - name: arm\n    parent: world\n    parent: world\n"
        "    joint: {type: revolute}\n    mass: -1\n    inertia: {Ixx: 1, Iyy: 1, Izz: 1}\n"
    )
    message = _error(tmp_path, text)
    assert "3 problem(s)" in message, message
    assert "bad.yaml:3: name: duplicate key 'name' (also line 2)" in message
    assert "bad.yaml:7: bodies[0].parent: duplicate key 'parent' (also line 6)" in message
    assert "bad.yaml:9: bodies[0].mass: negative mass -1.0 kg" in message
    (tmp_path / "s.yaml").write_text("version: 1\nmodel: bad.yaml\nduration: 1\nduration: 2\ndt: 0\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(tmp_path / "s.yaml")
    assert "s.yaml:4: duration: duplicate key 'duration' (also line 3)" in str(err.value)
    assert "s.yaml:5: dt: dt must be a positive time [s], got 0.0" in str(err.value)
    assert "s.yaml:2: model: model file" in str(err.value)  # the model's problems too


def test_broken_json_reports_line(tmp_path):
    message = _error(tmp_path, '{"version": 1,\n "bodies": [\n  {"name": "a",}\n ]\n}\n', "bad.json")
    assert "bad.json:3: (top level): broken JSON: " in message
    message = _error(tmp_path, '{"version": 1, "version": 1}', "bad.json")
    assert "duplicate key 'version'" in message


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda d: d / "missing.yaml", "No such file or directory"),
        (lambda d: d, "a directory, not a regular file"),
        (lambda d: (d / "latin1.yaml").write_bytes(b"name: caf\xe9\n") and d / "latin1.yaml", "can't decode byte 0xe9"),
    ],
    ids=["missing", "directory", "not UTF-8"],
)
def test_unreadable_file(tmp_path, make, fragment):
    path = make(tmp_path)
    with pytest.raises(mbsfmu.ModelError, match=f"cannot read the file: .*{fragment}") as info:
        mbsfmu.load_model(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "text, fragment",
    [
        (
            "",
            "(top level): expected a mapping with keys version, name, gravity, bodies, forces, loops, initial, "
            "named_poses, repair_inertia, got nothing",
        ),
        ("- version: 1\n", "(top level): expected a mapping"),
        ("version: 1\nbodies: []\n", "bodies: expected a non-empty list of bodies, got a list"),
        ("version: 1\nbodies: &b [*b]\n", "bodies[0]: expected a mapping"),
    ],
    ids=["empty", "list", "no bodies", "recursive alias"],
)
def test_document_shape(tmp_path, text, fragment):
    assert fragment in _error(tmp_path, text)


@pytest.mark.parametrize("depth", [1500, 100_000])
def test_deep_nesting_is_one_problem(tmp_path, depth):
    """Lists nested deeper than a parser allows: one problem naming the file, never a traceback
    or a RecursionError. Which layer stops it (libyaml's depth limit, PyYAML's, or our own
    RecursionError guard) and its wording belong to the installed PyYAML, so only the behaviour
    is asserted: one problem, the file named, a line where the parser gives one."""
    path = tmp_path / "deep.yaml"
    path.write_text("version: 1\nbodies: " + "[" * depth + "]" * depth + "\n", encoding="utf-8")
    with pytest.raises(mbsfmu.ModelError) as info:
        mbsfmu.load_model(path)
    assert len(info.value.problems) == 1, str(info.value)
    assert str(path) in str(info.value)
    assert info.value.problems[0].message.strip()


def test_exponent_without_dot_is_a_number(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(GOOD.replace("mass: 1.5", "mass: 15e-1").replace("Ixx: 0.005", "Ixx: 5E-3"), encoding="utf-8")
    model = mbsfmu.load_model(path)
    assert model.tree.mass[2] == 1.5 and model.tree.I_c[2, 0, 0] == 0.005


def test_spec_from_dict_without_lines_names_fields():
    doc = yaml.safe_load(GOOD)
    doc["bodies"][0]["com"] = [0.5, float("nan"), 0]
    with pytest.raises(mbsfmu.ModelError) as info:
        spec_from_dict(doc, source="arm")
    assert "arm: bodies[0].com[1]: expected a finite number, got nan" in str(info.value)


def test_wheel_and_force_element_problems_carry_lines(tmp_path):
    text = """\
version: 1
bodies:
  - name: hub
    parent: world
    joint: {type: free}
    mass: 1.0
    inertia: {Ixx: 0.1, Iyy: 0.1, Izz: 0.1}
    wheels:
      - {name: rw1, axis: [1, 0, 0], inertia: -0.05}
forces:
  - {type: thruster, name: thr1, body: hbu, point: [0, 0, 1], direction: [0, 0, 1]}
"""
    message = _error(tmp_path, text)
    assert f"bad.yaml:{_line(text, 'rw1')}: bodies[0].wheels[0].inertia: " in message, message
    assert f"bad.yaml:{_line(text, 'hbu')}: forces[0].body: unknown body 'hbu' (did you mean 'hub'?)" in message


def test_thousands_of_problems_list_a_screenful_and_count_the_rest(tmp_path):
    """An alias repeated 1,500 times gives 4,500 problems (4,000 gave 12,000 lines): all are in .problems,
    the message lists the first 50 and says how many more."""
    from mbsfmu.errors import MAX_LISTED

    path = tmp_path / "bomb.yaml"
    path.write_text("version: 1\nx: &x {name: 1}\nbodies: [" + ", ".join(["*x"] * 1500) + "]\n", encoding="utf-8")
    with pytest.raises(mbsfmu.ModelError) as info:
        mbsfmu.load_model(path)
    n = len(info.value.problems)
    lines = str(info.value).splitlines()
    assert n >= 1500 and len(lines) == MAX_LISTED + 2
    assert lines[-1] == f"  ... and {n - MAX_LISTED} more (the first {MAX_LISTED} are listed)"


PLAIN = [  # documents the one-pass reader reads itself: every plain scalar type and layout
    "",
    "---\n",
    "a",
    "- 1\n- 2",
    "d: [1_000, 0x10, 0o17, 017, 0b11, 1:30, 1:30.5, yes, No, on, OFF, ~, null, '', .inf, -.Inf, .nan, 1e-3, 1E+3]\n",
    "e: [1.5e3, +1, -0, -0.0, 0.0, 1_0.5, 12., 0x_1F, 1__0, 1e400, -.nan, 0.1, 0.1]\n",
    "a: |\n  x\n  1\nb: >\n  1.5\n",
    "a: \"1.5\"\nb: '1'\n",
    "a: [[[[[]]]]]\n",
    "a: {b: {c: [1, {d: 2}]}}\n",
    "---\na: 1\n...\n",
    "? a\n",
    "a:\n  - b:\n    c: 1\n",
    "1.5: x\nnull: y\ntrue: z\n3: w\n",
    "a: 1 # c\n",
    "%YAML 1.1\n---\na: 1\n",
    "a: \"x\\ty\"\nb: 'it''s'\n",
]
FALLBACK = [  # documents left to PyYAML's composer and constructor, read or refused as it does
    "a: &x {k: 1.5e-3, s: '2'}\nb: *x\nc:\n  <<: *x\n  k: !!float 2\n",
    "<<: {a: 1}\nb: 2\n",
    "&a [1, *a]\n",
    "a: 2001-02-03\n",
    "a: !!str 1\n",
    "a: ! 1\n",
    "!!map {a: 1}\n",
    "- !!float 1\n",
    "version: 1\nbodies: " + "[" * 200 + "]" * 200 + "\n",
    "a: 1\na: 2\n",  # duplicate keys: read (the last value), each one a problem of _node_lines
    "1: a\n1.0: b\n",
    "true: 1\n1: 2\n",
]
REFUSED = [  # broken or unreadable documents: the same error, with the same line, as PyYAML's path
    "a: 2001-02-30\n",
    "a: =\n",
    "x: <<\n",
    "? [1]\n: 2\n",
    "a: 1\n---\nb: 2\n",
    "- [a\n",
    "a: 1\nb: [1, 2\n",
    "a: \"x\x07\"\n",
    "a: *nowhere\n",
]


def _pyyaml(text):
    """PyYAML's composer and constructor, and _node_lines on its nodes: what the one-pass reader must equal."""
    loader = mf._Loader(text)
    try:
        node = loader.get_single_node()
        data, lines, duplicates = (None if node is None else loader.construct_document(node)), {}, []
        mf._node_lines(node, (), lines, loader, set(), duplicates)  # (after constructing: it flattens merge keys)
        return data, lines, duplicates
    finally:
        loader.dispose()


def _outcome(read, text) -> str:
    """repr of what ``read`` gives (keys in order, nan compared as text) or of the error it raises, line included."""
    try:
        return repr(read(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        return f"{type(e).__name__} at line {mark.line if mark else None}: {e}"


def test_fast_yaml_reader_equals_pyyaml_on_every_bundled_file():
    from tests.support.paths import ROOT

    files = sorted((ROOT / "scenarios").rglob("*.yaml"))
    assert len(files) > 20
    for path in files:
        text = path.read_text()
        assert _outcome(mf._parse_yaml, text) == _outcome(_pyyaml, text), path


@pytest.mark.parametrize("text", PLAIN + FALLBACK + REFUSED)
def test_fast_yaml_reader_equals_pyyaml(text):
    """Documents, line maps (in order) and errors (type, line, wording) of parse_file's one-pass reader
    are PyYAML's on every scalar type, layout, and every case it leaves to PyYAML."""
    assert _outcome(mf._parse_yaml, text) == _outcome(_pyyaml, text)


@pytest.mark.parametrize("text, plain", [(t, True) for t in PLAIN] + [(t, False) for t in FALLBACK + REFUSED])
def test_fast_yaml_reader_leaves_to_pyyaml_only_what_it_must(text, plain):
    """The one-pass reader reads the plain documents itself (so the equality above tests it) and refuses the others."""
    loader = mf._Loader(text)
    try:
        if plain:
            mf._plain(loader)
        else:
            with pytest.raises((mf._NotPlain, yaml.YAMLError)):
                mf._plain(loader)
    finally:
        loader.dispose()


def test_fast_yaml_reader_reads_the_pure_python_parser_the_same(monkeypatch):
    """Where PyYAML has no libyaml, the reader runs on PyYAML's own parser, event for event the same."""

    class PureLoader(yaml.SafeLoader, mf._Loader):  # PyYAML's parser first, then our loader's overrides
        pass

    assert PureLoader.get_event is yaml.parser.Parser.get_event
    assert PureLoader.get_single_node is yaml.composer.Composer.get_single_node
    monkeypatch.setattr(mf, "_Loader", PureLoader)
    for text in PLAIN + FALLBACK + REFUSED:
        assert _outcome(mf._parse_yaml, text) == _outcome(_pyyaml, text), text


@pytest.mark.parametrize("enabled", [True, False])
def test_fast_yaml_reader_leaves_the_garbage_collector_as_it_found_it(enabled):
    """The reader pauses the cyclic collector while it builds the document: read, fallen back or refused."""
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        for text in ("a: [1, 2]\n", FALLBACK[0], REFUSED[0]):
            try:
                mf._parse_yaml(text)
            except yaml.YAMLError:
                pass
            assert gc.isenabled() is enabled, text
    finally:
        (gc.enable if was else gc.disable)()


def test_integers_read_as_floats_exactly_and_huge_ones_are_reported():
    from mbsfmu.io.reader import MAX_EXACT_INT, Reader

    r = Reader({})
    for n in (0, 1, -7, MAX_EXACT_INT, -MAX_EXACT_INT, MAX_EXACT_INT + 1, 10**300):
        x = r.number(n, ("x",))
        assert type(x) is float and x == float(n)
    assert not r.problems
    assert r.number(10**400, ("y",)) == 0.0 and "beyond the float range" in r.problems[0].message
    assert r.number(True, ("z",)) == 0.0 and "expected a number, got the boolean True" in r.problems[1].message
