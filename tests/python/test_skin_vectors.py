"""Rig.skin_vectors (ssk_rig_skin_vectors; issue #37, item 3): offsets added
to the rest positions before skinning (shape keys, correctives, the
modifiers above Blender's Armature modifier) carried through a frame's
LBS or DQS. The reference is independent of the function: the same rig
built from the offset rest positions and deformed (skinning is affine per
vertex, so skinned(p + d) = skinned(p) + J d exactly, up to rounding).

BCN_Epileptic.X's meshes as one rig built from arrays, frame 40 of the
file's animation; offsets of up to a tenth of the mean edge on a third of
the vertices, one vertex without weights.
"""
import os

import numpy as np
import pytest

import springskin as ss

from test_spring_density import BCN, array_rig, mean_edge, merged

pytestmark = pytest.mark.skipif(not os.path.exists(BCN), reason="assimp-testmodels not installed")

FRAME = 40


@pytest.fixture(scope="module")
def case():
    source = ss.load(BCN)
    p, t, i, w = merged(source)
    w = w.copy()
    w[7] = 0.0  # a vertex without weights keeps its offset, as its position
    base = array_rig(source, p, t, i, w)
    h = mean_edge(base)
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(len(p), len(p) // 3, replace=False))
    rows = np.union1d(rows, [7])
    d = np.zeros_like(p)
    d[rows] = rng.uniform(-0.1 * h, 0.1 * h, (len(rows), 3))
    shifted = array_rig(source, p + d, t, i, w)
    return source, base, shifted, rows, d, h


@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("moved", [False, True])
def test_offsets_skinned_as_the_offset_rest_positions(case, method, moved):
    source, base, shifted, rows, d, h = case
    skin = source.skinning_matrices(FRAME)
    objects = None
    if moved:  # the mesh moved against the armature since the bind
        c, s = np.cos(0.3), np.sin(0.3)
        turn = np.array([[c, -s, 0, 0.2], [s, c, 0, 0], [0, 0, 1, 0.1], [0, 0, 0, 1]])
        objects = (turn @ base.meshes[0].object_matrix)[None].astype(np.float32)
    a = ss.Deformer(base, method=method, backend="cpu").deform(skin, objects).astype(np.float64)
    b = ss.Deformer(shifted, method=method, backend="cpu").deform(skin, objects)
    got = base.skin_vectors(rows, d[rows], skin, objects, method=method)
    assert got.shape == (len(rows), 3) and got.dtype == np.float32
    err = np.abs(a[rows] + got - b[rows]).max() / h
    assert err <= 1e-4, err  # float32 rounding of the coordinates (1e-5 measured)
    assert np.abs(got - d[rows]).max() > 0.01 * h, "the pose turns the offsets"
    k = int(np.searchsorted(rows, 7))
    assert np.array_equal(got[k], d[7].astype(np.float32)), "no weights: the offset stays"


def test_bad_input_is_refused(case):
    source, base, shifted, rows, d, h = case
    skin = source.skinning_matrices(FRAME)
    with pytest.raises(ValueError, match="rows"):
        base.skin_vectors([base.vertex_count], [[0.0, 0.0, 0.0]], skin)
    with pytest.raises(ValueError, match="LBS or DQS"):
        base.skin_vectors([0], [[0.0, 0.0, 0.0]], skin, method="spring")
    with pytest.raises(ValueError, match="vectors"):
        base.skin_vectors([0, 1], [[0.0, 0.0, 0.0]], skin)
    with pytest.raises(ValueError):
        base.skin_vectors([0], [[np.nan, 0.0, 0.0]], skin)
    assert base.skin_vectors(np.zeros(0, np.int64), np.zeros((0, 3)), skin).shape == (0, 3)
