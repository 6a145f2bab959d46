"""springskin.PointCacheWriter and springskin.AlembicWriter (the core's
streaming writers for frames computed by the caller), and Rig.bind(cor=True).

Files are read back with readers that share no code with the writers: the
.pc2 with struct/numpy (api_helpers.read_pc2), the .abc with the
independent Alembic reader of test_abc_reader.py."""

import os

import numpy as np
import pytest

import springskin
from api_helpers import bend_pose, limb_arrays, read_pc2
from test_abc_reader import Archive, meshes_of


def leftovers(directory):
    return sorted(n for n in os.listdir(directory) if ".tmp-" in n)


# --- PointCacheWriter ---------------------------------------------------------

def test_pc2_round_trip_header_and_samples(tmp_path):
    rng = np.random.default_rng(3)
    samples = rng.normal(size=(4, 7, 3)).astype(np.float32)
    path = tmp_path / "a.pc2"
    writer = springskin.PointCacheWriter(path, 7, start_frame=12, sample_rate=0.5)
    assert writer.point_count == 7 and writer.frames == 0 and not writer.closed
    for i, s in enumerate(samples):
        # float64, Fortran order and a byte-swapped array are all converted
        source = [s.astype(np.float64), np.asfortranarray(s), s.astype(">f4"), s][i]
        writer.write(source)
    assert not path.exists(), "the final name appears only on finish"
    assert len(leftovers(tmp_path)) == 1
    writer.finish()
    assert writer.closed and writer.frames == 4
    start, rate, frames = read_pc2(path)
    assert (start, rate) == (12.0, 0.5)
    np.testing.assert_array_equal(frames, samples)
    assert leftovers(tmp_path) == []


def test_pc2_context_manager_finishes_or_aborts(tmp_path):
    ok = tmp_path / "ok.pc2"
    with springskin.PointCacheWriter(ok, 2) as w:
        w.write(np.zeros((2, 3)))
    assert w.closed and read_pc2(ok)[2].shape == (1, 2, 3)
    bad = tmp_path / "bad.pc2"
    with pytest.raises(RuntimeError, match="boom"):
        with springskin.PointCacheWriter(bad, 2) as w:
            w.write(np.zeros((2, 3)))
            raise RuntimeError("boom")
    assert not bad.exists() and leftovers(tmp_path) == []


def test_pc2_abort_and_drop_leave_nothing(tmp_path):
    w = springskin.PointCacheWriter(tmp_path / "x.pc2", 3)
    w.write(np.ones((3, 3)))
    w.abort()
    w.abort()  # a second abort is a no-op
    assert os.listdir(tmp_path) == []
    w = springskin.PointCacheWriter(tmp_path / "y.pc2", 3)
    w.write(np.ones((3, 3)))
    del w
    assert os.listdir(tmp_path) == []


def test_pc2_bad_samples_are_refused_without_writing(tmp_path):
    path = tmp_path / "n.pc2"
    w = springskin.PointCacheWriter(path, 2)
    w.write([[0, 0, 0], [1, 1, 1.0]])
    with pytest.raises(ValueError, match=r"positions: expected shape \(N, 3\) = \(2, 3\)"):
        w.write(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"non-finite"):
        w.write([[0, np.nan, 0], [1, 1, 1.0]])
    with pytest.raises(TypeError, match="floating-point"):
        w.write(np.zeros((2, 3), dtype=np.int32))
    w.write([[2, 2, 2], [3, 3, 3.0]])
    w.finish()
    _, _, frames = read_pc2(path)
    np.testing.assert_array_equal(frames[:, :, 0], [[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="closed"):
        w.write(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="closed"):
        w.finish()


def test_pc2_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="point_count"):
        springskin.PointCacheWriter(tmp_path / "a.pc2", 0)
    with pytest.raises(ValueError, match="sample_rate"):
        springskin.PointCacheWriter(tmp_path / "a.pc2", 1, sample_rate=0)
    with pytest.raises(ValueError, match="start_frame"):
        springskin.PointCacheWriter(tmp_path / "a.pc2", 1, start_frame=float("nan"))
    with pytest.raises(OSError):
        springskin.PointCacheWriter(tmp_path / "missing_dir" / "a.pc2", 1)
    assert os.listdir(tmp_path) == []


def test_pc2_streams_a_deformer(tmp_path):
    args = limb_arrays()
    rig = springskin.Rig(**args)
    deformer = springskin.Deformer(rig, method="dqs", backend="cpu")
    poses = [bend_pose(args, a) for a in (0.0, 0.3, 0.9)]
    path = tmp_path / "limb.pc2"
    with springskin.PointCacheWriter(path, rig.vertex_count, start_frame=1) as w:
        for pose in poses:
            w.write(deformer.deform(pose))
    _, _, frames = read_pc2(path)
    for pose, frame in zip(poses, frames):
        np.testing.assert_array_equal(frame, deformer.deform(pose))
    np.testing.assert_allclose(frames[0], args["positions"], atol=1e-6)


# --- AlembicWriter --------------------------------------------------------------

def two_meshes():
    tri = dict(name="tri", vertex_count=3, triangles=[[0, 1, 2]])
    quad_matrix = np.eye(4)
    quad_matrix[:3, 3] = (1, 2, 3)
    quad = dict(name="quad", vertex_count=4, triangles=np.array([[0, 1, 2], [0, 2, 3]]),
                object_matrix=quad_matrix, uvs=np.array([[0, 0], [1, 0], [1, 1], [0, 1.0]]))
    return [tri, quad], quad_matrix


def test_abc_round_trip_read_by_the_independent_reader(tmp_path):
    meshes, quad_matrix = two_meshes()
    rng = np.random.default_rng(5)
    frames = rng.normal(size=(3, 7, 3)).astype(np.float32)
    path = tmp_path / "a.abc"
    moved = np.tile(np.eye(4), (2, 1, 1))
    moved[1, 0, 3] = 5.0
    with springskin.AlembicWriter(path, meshes, fps=30, start_time=0.5,
                                  application="test", date_written="today") as w:
        assert (w.vertex_count, w.mesh_count, w.normals) == (7, 2, False)
        w.write(frames[0])
        w.write(frames[1], object_matrices=moved)
        w.write(frames[2])
    assert leftovers(tmp_path) == []
    archive = Archive(str(path))
    assert archive.metadata["_ai_Application"] == "test"
    assert archive.metadata["_ai_DateWritten"] == "today"
    _, tpc, times = archive.time_samplings[1]
    assert tpc == pytest.approx(1 / 30) and times[0] == pytest.approx(0.5)
    found = meshes_of(archive)
    assert [xf.name for xf, _ in found] == ["tri", "quad"]
    rows = [slice(0, 3), slice(3, 7)]
    for (xf, mesh), r in zip(found, rows):
        geom = mesh.properties.props[".geom"]
        for f in range(3):
            np.testing.assert_array_equal(geom.props["P"].value(f), frames[f][r])
    # triangles stored clockwise: read backwards, (0, 1, 2) up to rotation
    tri_geom = found[0][1].properties.props[".geom"]
    stored = tri_geom.props[".faceIndices"].value(0).tolist()[::-1]
    assert stored in ([0, 1, 2], [1, 2, 0], [2, 0, 1])
    assert "uv" in found[1][1].properties.props[".geom"].props
    # Xform of the quad: its object matrix (Alembic stores the transpose:
    # row vectors), and the per-frame matrix of frame 1.
    vals = found[1][0].properties.props[".xform"].props[".vals"]
    np.testing.assert_allclose(vals.value(0).reshape(4, 4).T, quad_matrix)
    np.testing.assert_allclose(vals.value(1).reshape(4, 4).T, moved[1])


def test_abc_normals_are_required_exactly_when_asked(tmp_path):
    meshes, _ = two_meshes()
    w = springskin.AlembicWriter(tmp_path / "n.abc", meshes, fps=24, normals=True)
    with pytest.raises(ValueError, match="normals=True"):
        w.write(np.zeros((7, 3)))
    w.write(np.zeros((7, 3)), normals=np.tile([0, 0, 1.0], (7, 1)))
    w.finish()
    geom = meshes_of(Archive(str(tmp_path / "n.abc")))[0][1].properties.props[".geom"]
    np.testing.assert_array_equal(geom.props["N"].value(0), np.tile([0, 0, 1.0], (3, 1)))
    w = springskin.AlembicWriter(tmp_path / "m.abc", meshes, fps=24)
    with pytest.raises(ValueError, match="normals=False"):
        w.write(np.zeros((7, 3)), normals=np.zeros((7, 3)))
    w.abort()
    assert not (tmp_path / "m.abc").exists() and leftovers(tmp_path) == []


def test_abc_bad_descriptions_and_frames(tmp_path):
    path = tmp_path / "b.abc"
    with pytest.raises(ValueError, match=r"meshes\[0\]\.triangles: entry \[0, 2\] = 3"):
        springskin.AlembicWriter(path, [dict(vertex_count=3, triangles=[[0, 1, 3]])], fps=24)
    with pytest.raises(ValueError, match="unknown field"):
        springskin.AlembicWriter(path, [dict(vertex_count=3, colour=1)], fps=24)
    with pytest.raises(ValueError, match="vertex_count"):
        springskin.AlembicWriter(path, [dict(name="a")], fps=24)
    with pytest.raises(ValueError, match="fps"):
        springskin.AlembicWriter(path, [dict(vertex_count=3)], fps=0)
    with pytest.raises(ValueError, match="at least one mesh"):
        springskin.AlembicWriter(path, [], fps=24)
    w = springskin.AlembicWriter(path, [dict(vertex_count=3)], fps=24)
    with pytest.raises(ValueError, match=r"\(V, 3\) = \(3, 3\)"):
        w.write(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        w.write(np.full((3, 3), np.inf))
    with pytest.raises(ValueError):  # no frame written: finish fails, no file
        w.finish()
    assert os.listdir(tmp_path) == []


def test_abc_accepts_a_rigs_meshes(tmp_path):
    rig = springskin.Rig(**limb_arrays())
    path = tmp_path / "rig.abc"
    with springskin.AlembicWriter(path, rig.meshes, fps=24) as w:
        w.write(rig.rest_positions())
    (xf, mesh), = meshes_of(Archive(str(path)))
    assert xf.name == "mesh_0"
    geom = mesh.properties.props[".geom"]
    np.testing.assert_array_equal(geom.props["P"].value(0), rig.rest_positions())
    assert len(geom.props[".faceIndices"].value(0)) == 3 * rig.meshes[0].triangle_count


# --- Rig.bind(cor=True) -------------------------------------------------------------

def test_bind_with_cor_stores_the_centers_a_cor_deformer_would_compute():
    args = limb_arrays()
    rig = springskin.Rig(**args)
    plain = rig.bind()
    with_cor = rig.bind(cor=True)
    assert not plain.has_cor and plain.cor_seconds == 0
    assert with_cor.has_cor and with_cor.cor_seconds > 0
    pose = bend_pose(args, 1.2)
    own = springskin.Deformer(rig, method="cor", backend="cpu").deform(pose)
    stored = springskin.Deformer(rig, method="cor", backend="cpu", binding=with_cor).deform(pose)
    np.testing.assert_array_equal(stored, own)
    lbs = springskin.Deformer(rig, method="lbs", backend="cpu").deform(pose)
    assert np.abs(own - lbs).max() > 1e-3, "CoR differs from LBS at a 1.2 rad bend"
    with pytest.raises(TypeError, match="cor"):
        rig.bind(cor=1)
