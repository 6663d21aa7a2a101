"""World files (mbsfmu_ros.world) without ROS: the bundled world, defaults, and every problem of a
bad file in one WorldError naming its line and field."""

import textwrap

import pytest

from mbsfmu_ros.world import WorldError, load_world, name_problem, namespace_problem
from tests.support.paths import MODELS, ROOT

WORLDS = ROOT / "scenarios" / "worlds"


def write(tmp_path, text: str, name: str = "w.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_bundled_world_has_the_three_robots():
    w = load_world(WORLDS / "three_robots.yaml")
    assert w.name == "three_robots"
    assert [r.name for r in w.robots] == ["scara", "arm7", "spacecraft"]
    assert [r.model for r in w.robots] == [str(MODELS / f) for f in ("scara.yaml", "urdf_arm7.urdf", "spacecraft.yaml")]
    assert [r.namespace for r in w.robots] == ["scara", "arm7", "spacecraft"]  # default: the name
    assert [r.frame_prefix for r in w.robots] == ["scara/", "arm7/", "spacecraft/"]  # default: name + /
    assert w.robots[1].position == (2.0, 0.0, 0.0) and w.robots[1].orientation == (0.0, 0.0, 0.0, 1.0)
    assert w.robots[2].orientation[2] == pytest.approx(2**-0.5, rel=1e-15, abs=0)


def test_model_paths_are_relative_to_the_world_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.yaml").write_text((MODELS / "scara.yaml").read_text())
    path = write(
        tmp_path,
        """
        robots:
          - {name: a, model: sub/m.yaml, namespace: /fleet/a, frame_prefix: fa_}
        """,
    )
    (r,) = load_world(path).robots
    assert r.model == str((tmp_path / "sub" / "m.yaml").resolve())
    assert (r.namespace, r.frame_prefix) == ("/fleet/a", "fa_")
    assert load_world(path).name == "w"  # no 'world' key: the file's stem


def test_every_problem_in_one_error_with_line_and_field(tmp_path):
    model = MODELS / "scara.yaml"
    path = write(
        tmp_path,
        f"""
        world: bad
        robots:
          - name: a
            model: {model}
          - name: a
            model: {model}
            namespace: a
          - name: 2b
            model: missing.yaml
            pose: {{position: [0, 0], orientation: [0, 0, 0, 2]}}
          - name: c
            model: {model}
            colour: red
            frame_prefix: ""
        """,
    )
    with pytest.raises(WorldError) as e:
        load_world(path)
    text = str(e.value)
    lines = text.splitlines()
    assert lines[0] == f"8 problem(s) in world {path}:"  # every one of them, in file order
    expected = [
        (6, "robots[1].name", "'a' is taken by robots[0]"),  # (not again for its default prefix, a/)
        (8, "robots[1].namespace", "'a' is taken by robots[0]"),
        (9, "robots[2].name", "is no entity name"),
        (10, "robots[2].model", "no model file 'missing.yaml'"),
        (11, "robots[2].pose.position", "expected a list of 3 numbers"),
        (11, "robots[2].pose", "orientation is no unit quaternion"),
        (14, "robots[3].colour", "unknown key 'colour'"),
        (15, "robots[3].frame_prefix", "needs a non-empty frame prefix"),
    ]
    for line, field, what in expected:
        assert any(f"{path}:{line}: {field}: " in x and what in x for x in lines), (line, field, text)
    assert [int(x.split(":")[1]) for x in lines[1:]] == sorted(line for line, *_ in expected)


def test_pose_and_prefix_problems(tmp_path):
    model = MODELS / "scara.yaml"
    path = write(
        tmp_path,
        f"""
        robots:
          - name: a
            model: {model}
            frame_prefix: ""
            pose: {{orientation: [0, 0, 0, 2]}}
        """,
    )
    with pytest.raises(WorldError) as e:
        load_world(path)
    text = str(e.value)
    assert f"{path}:5: robots[0].frame_prefix: " in text and "non-empty frame prefix" in text
    assert f"{path}:6: robots[0].pose: orientation is no unit quaternion" in text and "norm 2" in text


@pytest.mark.parametrize(
    "text, what",
    [
        ("robots: []\n", "robots: expected a list of one robot or more"),
        ("name: x\n", "unknown key 'name'"),
        ("robots:\n  - 3\n", "robots[0]: expected a mapping"),
        ("robots: [\n", "broken"),
    ],
)
def test_malformed_files(tmp_path, text, what):
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(WorldError) as e:
        load_world(path)
    assert what in str(e.value)


def test_a_model_file_given_as_a_world(tmp_path):
    with pytest.raises(WorldError) as e:
        load_world(MODELS / "scara.yaml")
    assert "this is a model file, not a world file" in str(e.value)
    with pytest.raises(WorldError) as e:
        load_world(tmp_path / "none.yaml")
    assert "cannot read the file" in str(e.value)


def test_names_and_namespaces():
    assert name_problem("scara_2") is None and name_problem("2scara") and name_problem("a/b") and name_problem("")
    assert namespace_problem("/a/b_1") is None and namespace_problem("a") is None
    assert namespace_problem("a//b") and namespace_problem("/") and namespace_problem("a b")


def test_node_parameters_of_a_world():
    from mbsfmu_ros.config import ConfigError, node_config

    assert node_config({"world": "w.yaml"}).world == "w.yaml"  # no model needed
    with pytest.raises(ConfigError) as e:
        node_config({"world": "w.yaml", "model": "m.yaml", "lock_step": True})
    text = str(e.value)
    assert "world = 'w.yaml': give a model (m.yaml) or a world, not both" in text
    assert "lock_step = True: lock-step follows one robot's commands: not with a world" in text
    with pytest.raises(ConfigError) as e:
        node_config({})
    assert "(or a world file as world:=PATH)" in str(e.value)
