"""Shared by the springskin Python API tests (tests/python/test_api_*.py).

Paths come from the environment CTest sets (PYTHONPATH=<build>/python,
SSK_CLI, SSK_MODELS_DIR); run by hand:
  PYTHONPATH=build/python SSK_CLI=build/springskin /usr/bin/python3 -m pytest tests/python
"""

import os
import struct

import numpy as np
import pytest

MODELS = os.environ.get("SSK_MODELS_DIR", "/usr/share/assimp/models")
BCN = os.path.join(MODELS, "X", "BCN_Epileptic.X")
CLI = os.environ.get("SSK_CLI", "")
SOURCE_DIR = os.environ.get(
    "SSK_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

needs_models = pytest.mark.skipif(not os.path.exists(BCN),
                                  reason=f"{BCN} missing (Debian package assimp-testmodels)")
needs_cli = pytest.mark.skipif(not CLI or not os.path.exists(CLI),
                               reason="SSK_CLI is not set to the springskin CLI (CTest sets it)")


def limb_arrays(rings=8, segments=12, bones=3, length=3.0, radius=0.4):
    """A tube along +Y of `rings` rings of `segments` vertices, skinned to a
    chain of `bones` bones (bone b from y = b L/B to (b+1) L/B) with linear
    weights between the two nearest bone centers. Returns the Rig
    arguments as a dict of float64 / int64 arrays (the Rig converts)."""
    ys = np.linspace(0.0, length, rings)
    angles = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    positions = np.array([[radius * np.cos(a), y, radius * np.sin(a)]
                          for y in ys for a in angles])
    triangles = []
    for r in range(rings - 1):
        for s in range(segments):
            a = r * segments + s
            b = r * segments + (s + 1) % segments
            c = a + segments
            d = b + segments
            triangles += [[a, c, b], [b, c, d]]
    bone_length = length / bones
    parents = np.arange(-1, bones - 1)
    bind = np.tile(np.eye(4), (bones, 1, 1))
    bind[:, 1, 3] = np.arange(bones) * bone_length
    centers = (np.arange(bones) + 0.5) * bone_length
    index = np.zeros((len(positions), 2), dtype=np.int64)
    weight = np.zeros((len(positions), 2))
    for i, y in enumerate(positions[:, 1]):
        k = int(np.clip(np.searchsorted(centers, y) - 1, 0, bones - 2))
        u = float(np.clip((y - centers[k]) / bone_length, 0.0, 1.0))
        index[i] = (k, k + 1)
        weight[i] = (1.0 - u, u)
    heads = bind[:, :3, 3].copy()
    tails = heads + np.array([0.0, bone_length, 0.0])
    return dict(positions=positions, triangles=np.array(triangles), parents=parents,
                bind_matrices=bind, weight_indices=index, weight_values=weight, heads=heads,
                tails=tails, bone_names=[f"b{i}" for i in range(bones)])


def rotation(axis, angle):
    """3x3 rotation matrix (Rodrigues)."""
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def bend_pose(args, angle=0.6):
    """Skinning matrices bending each joint of the limb by `angle` about Z
    (forward kinematics over the chain): S_b = G_b inverse(bind_b)."""
    bind = args["bind_matrices"]
    world = []
    for b in range(len(bind)):
        local = np.eye(4)
        local[:3, :3] = rotation([0, 0, 1], angle)
        if b == 0:
            local[:3, 3] = bind[0][:3, 3]
            world.append(local)
        else:
            offset = np.linalg.inv(bind[b - 1]) @ bind[b]
            world.append(world[b - 1] @ offset @ local)
    return np.array([w @ np.linalg.inv(bnd) for w, bnd in zip(world, bind)], dtype=np.float32)


def read_pc2(path):
    """(start_frame, sample_rate, frames (S, P, 3) float32) of a .pc2 file."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:12] == b"POINTCACHE2\0"
    version, points, start, rate, samples = struct.unpack("<iiffi", data[12:32])
    assert version == 1
    frames = np.frombuffer(data[32:], dtype="<f4")
    assert frames.size == samples * points * 3
    return start, rate, frames.reshape(samples, points, 3)
