"""A general serial arm as URDF text (issue 37 item 10): n revolute joints whose axes lie along no
coordinate axis, joint origins with xyz and rpy, links with full inertia tensors and rotated
inertial frames; deterministic for a seed. n = 7 is the general 7-DoF arm, n = 30 the 30-body chain."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _axis(rng: np.random.Generator) -> np.ndarray:
    """A unit vector with every component at least 0.2 in magnitude (along no coordinate axis)."""
    while True:
        a = rng.normal(size=3)
        a /= np.linalg.norm(a)
        if np.all(np.abs(a) >= 0.2):
            return a


def _inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """R diag(I) R^T [kg m^2] with triangle-valid principal moments and a random rotation (every entry
    non-zero)."""
    a, b = rng.uniform(0.002, 0.02, 2) * mass
    moments = np.array([a, b, rng.uniform(abs(a - b) + 1e-4, a + b)])
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q @ np.diag(moments) @ Q.T


def _f(v) -> str:
    return " ".join(f"{x:.6f}" for x in v)


def general_arm_urdf(n: int, seed: int = 7, name: str | None = None) -> str:
    """URDF of a serial chain of n revolute joints under a fixed ``world`` link (see the module doc)."""
    rng = np.random.default_rng(seed)
    name = name or f"general_arm{n}"
    lines = ['<?xml version="1.0"?>', f'<robot name="{name}">', '  <link name="world"/>']
    for k in range(n):
        mass = rng.uniform(0.5, 3.0)
        I = _inertia(rng, mass)
        lines += [
            f'  <link name="link{k + 1}">',
            "    <inertial>",
            f'      <origin xyz="{_f(rng.uniform(-0.1, 0.1, 3))}" rpy="{_f(rng.uniform(-np.pi, np.pi, 3))}"/>',
            f'      <mass value="{mass:.6f}"/>',
            f'      <inertia ixx="{I[0, 0]:.8f}" ixy="{I[0, 1]:.8f}" ixz="{I[0, 2]:.8f}" iyy="{I[1, 1]:.8f}" '
            f'iyz="{I[1, 2]:.8f}" izz="{I[2, 2]:.8f}"/>',
            "    </inertial>",
            "  </link>",
        ]
    for k in range(n):
        parent = "world" if k == 0 else f"link{k}"
        lines += [
            f'  <joint name="j{k + 1}" type="revolute">',
            f'    <origin xyz="{_f(rng.uniform(-0.05, 0.05, 2).tolist() + [rng.uniform(0.1, 0.3)])}" '
            f'rpy="{_f(rng.uniform(-1.0, 1.0, 3))}"/>',
            f'    <parent link="{parent}"/>',
            f'    <child link="link{k + 1}"/>',
            f'    <axis xyz="{_f(_axis(rng))}"/>',
            '    <limit lower="-2.9" upper="2.9" effort="100" velocity="2"/>',
            "  </joint>",
        ]
    lines += ["</robot>", ""]
    return "\n".join(lines)


def write_general_arm(directory: Path, n: int, seed: int = 7) -> Path:
    """``general_arm_urdf(n, seed)`` written to directory/general_arm<n>.urdf; its path."""
    path = Path(directory) / f"general_arm{n}.urdf"
    path.write_text(general_arm_urdf(n, seed), encoding="utf-8")
    return path
