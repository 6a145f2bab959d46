"""Loose vertices (in no triangle; issue #37, item 6): every method binds a
mesh that has them, moves them by their skin weights alone (within 1e-4
of an edge of LBS: rigid and IRS with the default attachment, the
spring's first stage and implicit skinning's DQS are LBS there to
rounding), and leaves every other vertex as it was without them. They
used to stop rigid, IRS, spring and CoR at the binding ("vertex N is
isolated").

BCN_Epileptic.X's meshes as one rig built from arrays, with one vertex
added near vertex 100 with its weights and in no triangle; frame 40 of
the file's animation. The reference for the loose vertex: LBS of the
same rig (Blender's Armature modifier gives the same:
tests/blender/test_addon_basics.py).
"""
import os

import numpy as np
import pytest

import springskin as ss

from test_spring_density import BCN, array_rig, mean_edge, merged

METHODS = ("lbs", "dqs", "rigid", "irs", "spring", "cor", "implicit")

pytestmark = pytest.mark.skipif(not os.path.exists(BCN), reason="assimp-testmodels not installed")


@pytest.fixture(scope="module")
def rigs():
    source = ss.load(BCN)
    p, t, i, w = merged(source)
    k = 100
    loose = array_rig(source, np.concatenate([p, p[k:k + 1] + 0.01]), t,
                      np.concatenate([i, i[k:k + 1]]), np.concatenate([w, w[k:k + 1]]))
    return source, array_rig(source, p, t, i, w), loose


@pytest.mark.parametrize("backend", ["cpu", "gl"])
def test_every_method_moves_loose_vertices_by_their_weights(rigs, backend):
    source, base, loose = rigs
    f = 40
    skin = source.skinning_matrices(f)
    h = mean_edge(base)
    try:
        lbs = ss.Deformer(loose, method="lbs", backend=backend).deform(skin, frame=f)[-1].copy()
    except ss.SpringSkinError as e:
        pytest.skip("no %s here: %s" % (backend, e))
    rest = loose.meshes[0].positions[-1]
    assert np.linalg.norm(lbs - rest) > 0.1 * h, "the pose moves the loose vertex"
    for method in METHODS:
        a = ss.Deformer(base, method=method, backend=backend).deform(skin, frame=f).copy()
        b = ss.Deformer(loose, method=method, backend=backend).deform(skin, frame=f).copy()
        assert np.isfinite(b).all(), method
        others = np.abs(a - b[:-1]).max() / h
        assert others <= 1e-4, (method, others)
        away = np.linalg.norm(b[-1] - lbs) / h
        assert away <= 1e-4, (method, away)
