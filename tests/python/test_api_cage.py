"""Coupled cages and skeletons in Python (issue #21): springskin.Cage (from
arrays and from a file), reshape, pose, fit, and bake(cage=, cage_edit=).

The cage is a box around BCN_Epileptic.X built from the rig's own rest
positions (mapped to rig space by the object matrices) and bone heads, so
the references are independent of the feature under test: a box cage's
mean value coordinates are exact for affine maps, so an affine edit of its
corners moves every rest vertex and bone head by that map.
"""

import gc
import os
import weakref

import numpy as np
import pytest

import springskin
from api_helpers import BCN, limb_arrays, needs_models

pytestmark = needs_models

GROWTH = 1.08             # the box: the bounding box grown by 8% about its center
AFFINE_TOLERANCE = 1e-5   # of the box diagonal
STRETCH = np.array([[1.3, 0.0, 0.0], [0.1, 0.9, 0.0], [0.0, 0.0, 1.2]])
SHIFT = np.array([0.5, -1.0, 2.0])
# corner k has bit r set for the high side of axis r; faces outward
# (counter-clockwise seen from outside), as tests/c/test_cage_rig.c
QUADS = [(0, 4, 6, 2), (1, 3, 7, 5), (0, 1, 5, 4), (2, 6, 7, 3), (0, 2, 3, 1), (4, 5, 7, 6)]
TRIANGLES = np.array([t for a, b, c, d in QUADS for t in ((a, b, c), (a, c, d))], dtype=np.int64)


def _rig_space(rig, positions):
    """Whole-rig positions (each mesh in its object space) -> rig space."""
    out = np.empty_like(np.asarray(positions, dtype=np.float64))
    for mesh in rig.meshes:
        m = mesh.object_matrix.astype(np.float64)
        out[mesh.rows] = positions[mesh.rows] @ m[:3, :3].T + m[:3, 3]
    return out


def _box(rig):
    points = np.vstack([_rig_space(rig, rig.rest_positions()), rig.bones.heads])
    lo, hi = points.min(axis=0), points.max(axis=0)
    center, half = 0.5 * (lo + hi), 0.5 * (hi - lo) * GROWTH
    corners = np.array([[center[r] + (half[r] if k >> r & 1 else -half[r]) for r in range(3)]
                        for k in range(8)])
    return corners


@pytest.fixture(scope="module")
def bcn():
    rig = springskin.load(BCN)
    corners = _box(rig)
    cage = springskin.Cage(rig, corners, TRIANGLES)
    return rig, cage, corners


def _diagonal(corners):
    return float(np.linalg.norm(np.ptp(corners, axis=0)))


def _affine(points):
    return points @ STRETCH.T + SHIFT


def _write_obj(path, corners):
    with open(path, "w") as f:
        for p in corners:
            f.write("v %.9g %.9g %.9g\n" % tuple(p))
        for q in QUADS:
            f.write("f %d %d %d %d\n" % tuple(i + 1 for i in q))


def test_box_triangles_face_outward(bcn):
    _, _, corners = bcn
    center = corners.mean(axis=0)
    for a, b, c in TRIANGLES:
        normal = np.cross(corners[b] - corners[a], corners[c] - corners[a])
        assert normal @ (corners[a] - center) > 0.0


def test_cage_attributes(bcn):
    rig, cage, corners = bcn
    assert cage.vertex_count == 8 and cage.triangle_count == 12
    assert cage.rig is rig
    assert cage.vertices.dtype == np.float32 and cage.vertices.shape == (8, 3)
    assert not cage.vertices.flags.writeable
    np.testing.assert_array_equal(cage.vertices, corners.astype(np.float32))
    assert cage.triangles.dtype == np.int32 and not cage.triangles.flags.writeable
    np.testing.assert_array_equal(cage.triangles, TRIANGLES)
    assert "8 vertices" in repr(cage)
    assert "Cage" in springskin.__all__


def test_given_arrays_are_copied_not_frozen(bcn):
    rig, _, corners = bcn
    mine = corners.astype(np.float32)
    cage = springskin.Cage(rig, mine, TRIANGLES)
    assert mine.flags.writeable
    mine[0] += 1.0
    np.testing.assert_array_equal(cage.vertices, corners.astype(np.float32))


def test_unedited_reshape_gives_the_rest_shape(bcn):
    rig, cage, _ = bcn
    reshaped = cage.reshape(cage.vertices)
    assert isinstance(reshaped, springskin.Rig)
    assert reshaped.vertex_count == rig.vertex_count and reshaped.bone_count == rig.bone_count
    assert reshaped.animations == () and reshaped.path is None
    np.testing.assert_array_equal(reshaped.rest_positions(), rig.rest_positions())
    np.testing.assert_array_equal(reshaped.bones.heads, rig.bones.heads)
    assert reshaped.bones.names == rig.bones.names
    # poses carried over unchanged (up to rounding)
    skinning = rig.skinning_matrices(frame=10)
    np.testing.assert_allclose(cage.pose(skinning), skinning, atol=1e-5 * _diagonal(_box(rig)))


def test_affine_edit_moves_rest_positions_and_heads(bcn):
    rig, cage, corners = bcn
    diagonal = _diagonal(corners)
    edited = _affine(corners)
    reshaped = cage.reshape(edited)
    want = _affine(_rig_space(rig, rig.rest_positions()))
    got = _rig_space(reshaped, reshaped.rest_positions())
    assert np.abs(got - want).max() <= AFFINE_TOLERANCE * diagonal
    heads = reshaped.bones.heads.astype(np.float64)
    assert np.abs(heads - _affine(rig.bones.heads.astype(np.float64))).max() \
        <= AFFINE_TOLERANCE * diagonal
    cage.reshape(cage.vertices)  # back to the rest heads for the other tests


def test_fit_at_rest_gives_the_edited_cage(bcn):
    rig, cage, corners = bcn
    edited = _affine(corners)
    reshaped = cage.reshape(edited)
    deformer = springskin.Deformer(reshaped, method="lbs", backend="cpu")
    rest = deformer.deform(reshaped.rest_pose())
    fitted = cage.fit(_rig_space(reshaped, rest))
    assert fitted.shape == (8, 3) and fitted.dtype == np.float32
    assert np.abs(fitted - edited).max() <= AFFINE_TOLERANCE * _diagonal(corners)
    cage.reshape(cage.vertices)


def test_pose_of_a_stack_is_each_pose(bcn):
    rig, cage, corners = bcn
    cage.reshape(_affine(corners))
    poses = np.stack([rig.skinning_matrices(frame=f) for f in (0, 5, 10)])
    stacked = cage.pose(poses)
    assert stacked.shape == (3, rig.bone_count, 4, 4) and stacked.dtype == np.float32
    for k in range(3):
        np.testing.assert_array_equal(stacked[k], cage.pose(poses[k]))
    # float64 and a non-contiguous view convert
    np.testing.assert_array_equal(cage.pose(poses[::2].astype(np.float64)),
                                  cage.pose(np.ascontiguousarray(poses[::2])))
    cage.reshape(cage.vertices)


def test_reshaped_rig_outlives_the_cage_and_the_rig():
    rig = springskin.load(BCN)
    corners = _box(rig)
    cage = springskin.Cage(rig, corners, TRIANGLES)
    reshaped = cage.reshape(_affine(corners))
    want = reshaped.rest_positions().copy()
    rig_ref = weakref.ref(rig)
    del cage, rig
    gc.collect()
    assert rig_ref() is None
    np.testing.assert_array_equal(reshaped.rest_positions(), want)
    deformer = springskin.Deformer(reshaped, method="dqs", backend="cpu")
    assert np.isfinite(deformer.deform(reshaped.rest_pose())).all()


def test_cage_keeps_its_rig_alive():
    rig = springskin.load(BCN)
    corners = _box(rig)
    cage = springskin.Cage(rig, corners, TRIANGLES)
    core_ref = weakref.ref(rig._core)
    del rig
    gc.collect()
    assert core_ref() is not None
    reshaped = cage.reshape(cage.vertices)
    assert reshaped.vertex_count == cage.rig.vertex_count


def test_load_from_a_file(bcn, tmp_path):
    rig, cage, corners = bcn
    path = tmp_path / "cage.obj"
    _write_obj(path, corners)
    loaded = springskin.Cage.load(path, rig)
    assert loaded.vertex_count == 8 and loaded.triangle_count == 12
    assert loaded.rig is rig
    # BCN's scene root is its rig space: the corners come back as written
    order = np.lexsort(loaded.vertices.T)
    np.testing.assert_allclose(loaded.vertices[order], corners[np.lexsort(corners.T)],
                               atol=1e-6 * _diagonal(corners))
    reshaped = loaded.reshape(loaded.vertices)
    np.testing.assert_array_equal(reshaped.rest_positions(), rig.rest_positions())


def test_load_errors(bcn, tmp_path):
    rig, _, _ = bcn
    with pytest.raises(FileNotFoundError):
        springskin.Cage.load(tmp_path / "missing.obj", rig)
    tet = tmp_path / "tet.obj"
    tet.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    with pytest.raises(ValueError, match="at least 4"):
        springskin.Cage.load(tet, rig)
    with pytest.raises(TypeError, match=r"^rig: expected a springskin.Rig, got str$"):
        springskin.Cage.load(tet, "rig")


def test_bad_arguments(bcn):
    rig, cage, corners = bcn
    with pytest.raises(TypeError, match=r"^rig: expected a springskin.Rig, got NoneType$"):
        springskin.Cage(None, corners, TRIANGLES)
    with pytest.raises(ValueError, match=r"^vertices: expected shape \(c, 3\), got \(8, 2\)$"):
        springskin.Cage(rig, corners[:, :2], TRIANGLES)
    with pytest.raises(TypeError, match=r"^vertices: expected"):
        springskin.Cage(rig, corners.astype(np.int64), TRIANGLES)
    with pytest.raises(TypeError, match=r"^triangles: expected"):
        springskin.Cage(rig, corners, TRIANGLES.astype(np.float64))
    with pytest.raises(ValueError, match=r"^triangles: expected shape \(t, 3\), got \(12,\)$"):
        springskin.Cage(rig, corners, TRIANGLES[:, 0])
    with pytest.raises(ValueError, match=r"^vertices: expected 4 to \d+ cage vertices \(a "
                                         r"closed cage\), got shape \(3, 3\)$"):
        springskin.Cage(rig, corners[:3], TRIANGLES)
    bad = TRIANGLES.copy()
    bad[5, 1] = 8
    with pytest.raises(ValueError, match=r"^triangles: entry \[5, 1\] = 8 is out of range: "
                                         r"expected a cage vertex index in \[0, c\) = \[0, 8\)$"):
        springskin.Cage(rig, corners, bad)
    nan = corners.copy()
    nan[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"^vertices: non-finite"):
        springskin.Cage(rig, nan, TRIANGLES)
    # an open cage, and a cage not around the skeleton: the core's checks
    with pytest.raises(ValueError, match=r"^Cage: .*not closed") as info:
        springskin.Cage(rig, corners, TRIANGLES[:-2])
    assert info.value.status == "SSK_ERROR_INVALID_ARGUMENT"
    with pytest.raises(ValueError, match=r"^Cage: .*bone 0 \(B_Finger3_Left\).*inside the cage"):
        springskin.Cage(rig, corners * 0.01 + 100.0, TRIANGLES)
    flipped = TRIANGLES[:, ::-1].copy()
    flipped[:2] = TRIANGLES[:2]
    with pytest.raises(ValueError, match=r"inconsistently oriented"):
        springskin.Cage(rig, corners, flipped)

    with pytest.raises(ValueError, match=r"^edited_vertices: expected shape \(c, 3\) = "
                                         r"\(8, 3\), got \(7, 3\)$"):
        cage.reshape(corners[:7])
    with pytest.raises(TypeError, match=r"^edited_vertices: expected"):
        cage.reshape(np.ones((8, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"^edited_vertices: non-finite"):
        cage.reshape(np.full((8, 3), np.inf))
    B = rig.bone_count
    with pytest.raises(ValueError, match=rf"^skinning_matrices: expected shape \(B, 4, 4\) = "
                                         rf"\({B}, 4, 4\), got \({B}, 4\)$"):
        cage.pose(np.zeros((B, 4)))
    with pytest.raises(ValueError, match=rf"^skinning_matrices: expected shape \(F, B, 4, 4\) = "
                                         rf"\(F, {B}, 4, 4\), got \(2, {B - 1}, 4, 4\)$"):
        cage.pose(np.zeros((2, B - 1, 4, 4)))
    with pytest.raises(TypeError, match=r"^skinning_matrices: expected"):
        cage.pose(np.zeros((B, 4, 4), dtype=np.int32))
    V = rig.vertex_count
    with pytest.raises(ValueError, match=rf"^positions: expected shape \(V, 3\) = \({V}, 3\), "
                                         rf"got \({V - 1}, 3\)$"):
        cage.fit(np.zeros((V - 1, 3)))
    with pytest.raises(TypeError, match=r"^positions: expected"):
        cage.fit(np.zeros((V, 3), dtype=np.complex64))


def test_array_rig_cage():
    args = limb_arrays(rings=12, segments=12, bones=3)
    rig = springskin.Rig(**args)
    corners = _box(rig)
    cage = springskin.Cage(rig, corners, TRIANGLES)
    reshaped = cage.reshape(_affine(corners))
    assert np.abs(reshaped.rest_positions() - _affine(np.asarray(args["positions"]))).max() \
        <= AFFINE_TOLERANCE * _diagonal(corners)


def _bake(rig, path, **kwargs):
    springskin.bake(rig, path, method=kwargs.pop("method", "lbs"), backend="cpu",
                    frames=(0, 12), **kwargs)
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_bake_with_an_unedited_cage_is_the_plain_bake(bcn, tmp_path, method):
    rig, cage, _ = bcn
    plain = _bake(rig, tmp_path / "plain.pc2", method=method)
    caged = _bake(rig, tmp_path / "caged.pc2", method=method, cage=cage,
                  cage_edit=cage.vertices)
    assert plain == caged


def test_bake_with_an_edit_matches_reshape_and_pose(bcn, tmp_path):
    rig, cage, corners = bcn
    edited = _affine(corners)
    path = tmp_path / "edit.pc2"
    springskin.bake(rig, path, method="lbs", backend="cpu", frames=(4, 4), cage=cage,
                    cage_edit=edited)
    with open(path, "rb") as f:
        data = f.read()
    frame = np.frombuffer(data[32:], dtype="<f4").reshape(rig.vertex_count, 3)
    reshaped = cage.reshape(edited)
    skinning, objects = rig.sample(frame=4)
    want = springskin.Deformer(reshaped, method="lbs", backend="cpu").deform(
        cage.pose(skinning), objects)
    np.testing.assert_allclose(frame, want, atol=1e-5 * _diagonal(corners))
    cage.reshape(cage.vertices)


def _cage_graph(cage, edited, method):
    """The graph {cage node, skinning with `method`, output} as a dict with
    numpy arrays (docs/deformer-graph.md: the cage node)."""
    return {"version": 1,
            "nodes": [{"id": "reshape", "type": "cage", "vertices": cage.vertices,
                       "triangles": cage.triangles, "edited": edited},
                      {"id": "skin", "type": "skinning", "method": method},
                      {"id": "out", "type": "output"}],
            "edges": [{"from": "skin", "to": "out"}]}


@pytest.mark.parametrize("method", ["lbs", "cor"])
def test_graph_cage_node(bcn, method):
    """A cage node in a graph dict: unedited, the plain deformer's bytes;
    edited, the reshaped rig deformed with the carried matrices (and, for
    CoR, Eq. 14's centers, as bake(cage=) uses them) exactly."""
    rig, cage, corners = bcn
    skinning, objects = rig.sample(frame=4)
    plain = springskin.Deformer(rig, method=method, backend="cpu").deform(skinning, objects)
    unedited = springskin.Deformer(rig, graph=_cage_graph(cage, cage.vertices, method),
                                   backend="cpu").deform(skinning, objects)
    assert np.array_equal(plain, unedited)
    edited = _affine(corners)
    got = springskin.Deformer(rig, graph=_cage_graph(cage, edited, method),
                              backend="cpu").deform(skinning, objects)
    assert not np.allclose(got, plain)
    if method == "lbs":
        want = springskin.Deformer(cage.reshape(edited), method="lbs", backend="cpu").deform(
            cage.pose(skinning), objects)
        cage.reshape(cage.vertices)
        assert np.array_equal(got, want)


def test_graph_cage_node_errors(bcn):
    rig, cage, corners = bcn
    with pytest.raises(ValueError, match=r"keeps the cage's topology\), got 7$"):
        springskin.Graph(_cage_graph(cage, corners[:7], "lbs"), rig)
    graph = _cage_graph(cage, corners, "lbs")
    graph["nodes"].reverse()
    with pytest.raises(ValueError, match=r"node 'reshape' \(cage\) comes after skinning "
                                         r"node 'skin'"):
        springskin.Graph(graph, rig)
    graph = _cage_graph(cage, corners, "lbs")
    graph["nodes"][0]["triangles"] = cage.triangles[:-1]
    with pytest.raises(ValueError, match=r"not a valid cage: .*not closed"):
        springskin.Graph(graph, rig)


def test_bake_cage_errors(bcn, tmp_path):
    rig, cage, corners = bcn
    out = tmp_path / "x.pc2"
    with pytest.raises(ValueError, match=r"^cage, cage_edit: give both"):
        springskin.bake(rig, out, cage=cage)
    with pytest.raises(ValueError, match=r"^cage, cage_edit: give both"):
        springskin.bake(rig, out, cage_edit=corners)
    with pytest.raises(TypeError, match=r"^cage: expected a springskin.Cage, got ndarray$"):
        springskin.bake(rig, out, cage=corners, cage_edit=corners)
    with pytest.raises(ValueError, match=r"^cage_edit: expected shape \(c, 3\) = \(8, 3\), "
                                         r"got \(8, 2\)$"):
        springskin.bake(rig, out, cage=cage, cage_edit=corners[:, :2])
    other = springskin.load(BCN)
    with pytest.raises(ValueError, match=r"^cage: bound to another rig"):
        springskin.bake(other, out, cage=cage, cage_edit=corners)
    assert not os.path.exists(out)


def test_no_leaks_over_many_calls():
    """Success and error paths of the Cage calls keep no arrays or objects
    (as tests/python/test_api_refcount.py)."""
    import sys
    import tracemalloc
    rig = springskin.Rig(**limb_arrays(rings=4, segments=4))
    corners = _box(rig)
    edited = _affine(corners)
    rest = rig.rest_positions()
    pose = np.repeat(np.eye(4)[None], rig.bone_count, axis=0)
    poses = np.stack([pose, pose])

    def loop():
        cage = springskin.Cage(rig, corners, TRIANGLES)
        for _ in range(500):
            cage.reshape(edited)
            cage.pose(pose)
            cage.pose(poses)
            cage.fit(rest)
            for bad in (lambda: cage.reshape(corners[:3]), lambda: cage.pose(pose[:, :3]),
                        lambda: cage.fit(rest.astype(np.int32)),
                        lambda: springskin.Cage(rig, corners, TRIANGLES[:-2])):
                try:
                    bad()
                except (TypeError, ValueError):
                    pass

    watched = (rig._core, corners, edited, rest, pose, poses)
    counts = [sys.getrefcount(x) for x in watched]
    loop()
    gc.collect()
    assert [sys.getrefcount(x) for x in watched] == counts
    tracemalloc.start()
    try:
        objects = len(gc.get_objects())
        before = tracemalloc.get_traced_memory()[0]
        loop()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
        assert len(gc.get_objects()) - objects <= 100
        assert grown <= 256 * 1024
    finally:
        tracemalloc.stop()


LOOP_TOLERANCE = 1e-5     # of the box diagonal: C' -> C -> S -> S' -> C' with LBS


def _posed_cage(rig, cage, edited, skinning):
    """fit(LBS of the rig `edited` describes, posed by `skinning` carried over)."""
    reshaped = cage.reshape(edited)
    deformer = springskin.Deformer(reshaped, method="lbs", backend="cpu")
    posed = deformer.deform(cage.pose(skinning))
    return cage.fit(_rig_space(reshaped, posed)).astype(np.float64)


def test_reverse_at_rest_is_the_offset(bcn):
    rig, cage, corners = bcn
    offset = np.random.default_rng(3).uniform(-0.05, 0.05, (8, 3)) * _diagonal(corners)
    identity = np.tile(np.eye(4, dtype=np.float32), (rig.bone_count, 1, 1))
    back = cage.reverse(identity, offset)
    assert back.shape == (8, 3) and back.dtype == np.float32
    assert np.abs(back - offset).max() <= AFFINE_TOLERANCE * _diagonal(corners)


def test_reverse_closes_the_loop_with_lbs(bcn):
    """A posed-cage edit dC' mapped back (CageRev, Eq. 19) and played
    forward moves the fitted posed cage by dC' (the core's test_cage_rev
    on BCN through the Python API)."""
    rig, cage, corners = bcn
    skinning = rig.skinning_matrices(frame=10)
    before = _posed_cage(rig, cage, cage.vertices, skinning)
    posed_offset = np.random.default_rng(5).uniform(-0.03, 0.03, (8, 3)) * _diagonal(corners)
    rest_offset = cage.reverse(skinning, posed_offset)
    after = _posed_cage(rig, cage, cage.vertices + rest_offset, skinning)
    miss = np.abs(after - before - posed_offset).max() / _diagonal(corners)
    assert miss <= LOOP_TOLERANCE, miss
    # not the identity away from the rest pose (else the test proves nothing)
    assert np.abs(rest_offset - posed_offset).max() > 100 * LOOP_TOLERANCE * _diagonal(corners)
    cage.reshape(cage.vertices)


def test_reverse_bad_arguments(bcn):
    rig, cage, corners = bcn
    skinning = rig.skinning_matrices(frame=0)
    with pytest.raises(ValueError, match=r"^posed_offset: expected shape \(c, 3\) = "
                                         r"\(8, 3\), got \(7, 3\)$"):
        cage.reverse(skinning, np.zeros((7, 3)))
    with pytest.raises(ValueError, match=r"^skinning_matrices: expected shape"):
        cage.reverse(skinning[:-1], np.zeros((8, 3)))
    bad = np.zeros((8, 3))
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"non-finite|not finite"):
        cage.reverse(skinning, bad)
    with pytest.raises(TypeError, match=r"^posed_offset: expected"):
        cage.reverse(skinning, np.zeros((8, 3), dtype=np.int64))


def test_cage_binding_kept_in_the_binding(bcn, tmp_path):
    """Cage(..., binding=): bound once and stored in the attachment binding;
    from the saved and loaded file the cage is not bound again and reshapes
    bit for bit as a freshly bound one; another cage is bound again."""
    rig, fresh, corners = bcn
    binding = rig.bind()
    first = springskin.Cage(rig, corners, TRIANGLES, binding=binding)
    assert first.from_binding is False and fresh.from_binding is False
    assert springskin.Cage(rig, corners, TRIANGLES, binding=binding).from_binding is True
    path = tmp_path / "cage.sskbind"
    binding.save(path)
    loaded = springskin.load_binding(path, rig)
    cage = springskin.Cage(rig, corners, TRIANGLES, binding=loaded)
    assert cage.from_binding is True
    edited = corners.copy()
    edited[0] -= 0.2 * (corners[7] - corners[0])  # one handle moved: not affine
    a, b = fresh.reshape(edited), cage.reshape(edited)
    np.testing.assert_array_equal(a.rest_positions(), b.rest_positions())
    np.testing.assert_array_equal(a.bones.heads, b.bones.heads)
    fresh.reshape(fresh.vertices)  # back to the rest heads for the other tests
    bigger = corners.mean(axis=0) + 1.2 * (corners - corners.mean(axis=0))
    assert springskin.Cage(rig, bigger, TRIANGLES, binding=loaded).from_binding is False
    assert springskin.Cage(rig, bigger, TRIANGLES, binding=loaded).from_binding is True
    with pytest.raises(TypeError, match="binding"):
        springskin.Cage(rig, corners, TRIANGLES, binding="cage.sskbind")
