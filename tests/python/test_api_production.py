"""Issue #17's Python items, as a technical artist scripting a batch met
them: a stack of poses in one deform call, bones looked up by name, a bake
into a missing folder raising FileNotFoundError, sampling refusing the
frames bake refuses, method names in either case, Binding.report() without
passing the rig again, and the threading settings.

References are independent of the feature under test: one deform call per
pose, the bone name list, errno and the filesystem, bake's own frame range.
"""

import errno
import os

import numpy as np
import pytest

import springskin
from api_helpers import BCN, limb_arrays, needs_models


@pytest.fixture(scope="module")
def bcn():
    return springskin.load(BCN)


# --- a stack of poses ----------------------------------------------------------

@needs_models
def test_deform_a_stack_equals_one_call_per_pose(bcn):
    poses = [bcn.sample(f) for f in range(0, 40, 8)]
    stack = np.stack([p[0] for p in poses])
    objects = np.stack([p[1] for p in poses])
    one = springskin.Deformer(bcn, method="dqs", backend="cpu")
    expected = np.stack([one.deform(s, o).copy() for s, o in poses])
    stacked = springskin.Deformer(bcn, method="dqs", backend="cpu")
    out = stacked.deform(stack, objects)
    assert out.shape == (len(poses), bcn.vertex_count, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)
    # one (M, 4, 4) for every pose, and a caller's out array
    buf = np.empty_like(out)
    assert stacked.deform(stack, poses[0][1], out=buf) is buf
    np.testing.assert_array_equal(buf[0], expected[0])


@needs_models
def test_deform_a_stack_of_frame_dependent_springs_continues(bcn):
    """F poses in one call are F calls at frames f, f + 1, ...: the
    frame-dependent springs start each pose from the previous result."""
    graph = {"version": 1, "nodes": [
        {"id": "skin", "type": "skinning", "method": "irs"},
        {"id": "relax", "type": "spring", "mode": "frame_dependent"},
        {"id": "out", "type": "output"}],
        "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}]}
    stack = np.stack([bcn.sample(f)[0] for f in range(10, 14)])
    a = springskin.Deformer(bcn, graph=graph, backend="cpu")
    expected = np.stack([a.deform(stack[k], frame=10 + k).copy() for k in range(4)])
    b = springskin.Deformer(bcn, graph=graph, backend="cpu")
    np.testing.assert_array_equal(b.deform(stack, frame=10), expected)


def test_deform_stack_errors_name_the_mismatch():
    rig = springskin.Rig(**limb_arrays())
    d = springskin.Deformer(rig, method="lbs", backend="cpu")
    stack = np.tile(np.eye(4, dtype=np.float32), (3, rig.bone_count, 1, 1))
    with pytest.raises(ValueError, match=r"frame: 2 frames for a stack of 3 poses"):
        d.deform(stack, frame=[0, 1])
    with pytest.raises(ValueError, match=r"out: expected shape \(F, V, 3\)"):
        d.deform(stack, out=np.empty((2, rig.vertex_count, 3), np.float32))
    with pytest.raises(ValueError, match=r"object_matrices: a stack of 2 poses for 3"):
        d.deform(stack, np.tile(np.eye(4, dtype=np.float32), (2, 1, 1, 1)))
    with pytest.raises(ValueError, match=r"skinning_matrices"):
        d.deform(np.zeros((3, rig.bone_count, 4, 3), np.float32))


# --- bones by name ---------------------------------------------------------------

@needs_models
def test_bones_by_name(bcn):
    names = list(bcn.bones.names)
    for i in (0, 7, len(names) - 1):
        assert bcn.bones[names[i]] == i == bcn.bones.index(names[i])
        assert bcn.bones[i] == names[i]
    assert names[3] in bcn.bones and "no such bone" not in bcn.bones
    with pytest.raises(KeyError, match="no bone named 'no such bone'"):
        bcn.bones["no such bone"]


# --- files -----------------------------------------------------------------------

@needs_models
def test_bake_into_a_missing_folder_is_file_not_found(bcn, tmp_path):
    for ext in ("pc2", "abc"):
        path = tmp_path / "missing" / ("out." + ext)
        with pytest.raises(FileNotFoundError) as e:
            springskin.bake(bcn, path, frames=(0, 2), method="lbs")
        assert e.value.errno == errno.ENOENT and e.value.filename == str(path)
        assert not (tmp_path / "missing").exists()


@needs_models
def test_bake_into_a_file_as_folder_is_not_a_directory(bcn, tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(NotADirectoryError):
        springskin.bake(bcn, tmp_path / "plain" / "out.pc2", frames=(0, 2), method="lbs")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only folders")
@needs_models
def test_bake_into_a_read_only_folder_is_permission_error(bcn, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            springskin.bake(bcn, folder / "out.pc2", frames=(0, 2), method="lbs")
    finally:
        folder.chmod(0o700)


def test_writer_into_a_missing_folder_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        springskin.PointCacheWriter(tmp_path / "missing" / "a.pc2", 10)


# --- frames: sample and bake agree ----------------------------------------------

@needs_models
def test_sample_refuses_the_frames_bake_refuses(bcn, tmp_path):
    last = bcn.animations[0].frame_count(24) - 1
    bcn.sample(last)
    bcn.sample(last - 0.5)
    with pytest.raises(ValueError, match=r"bake: frames 0\.\.%d" % (last + 1)):
        springskin.bake(bcn, tmp_path / "a.pc2", frames=(0, last + 1), method="lbs")
    for frame in (last + 1, 10000, -1):
        with pytest.raises(ValueError, match=r"frame .* is outside animation 0 .*"
                                             r"0 <= frame <= %d" % last):
            bcn.sample(frame)
    with pytest.raises(ValueError, match="outside animation"):
        springskin.Deformer(bcn, method="lbs", backend="cpu").deform_frame(10000)


# --- names in either case ---------------------------------------------------------

@needs_models
def test_method_names_in_either_case(bcn, tmp_path):
    lower = springskin.Deformer(bcn, method="irs", backend="cpu").deform(bcn.sample(20)[0])
    upper = springskin.Deformer(bcn, method="IRS", backend="CPU").deform(bcn.sample(20)[0])
    np.testing.assert_array_equal(lower, upper)
    springskin.bake(bcn, tmp_path / "a.pc2", frames=(0, 1), method="DQS", backend="Cpu")
    graph = {"version": 1, "nodes": [{"id": "s", "type": "skinning", "method": "IRS"},
                                     {"id": "o", "type": "output"}],
             "edges": [{"from": "s", "to": "o"}]}
    via_graph = springskin.Deformer(bcn, graph=graph, backend="cpu").deform(bcn.sample(20)[0])
    np.testing.assert_array_equal(via_graph, lower)
    assert springskin.Graph.from_method("Lbs", bcn) is not None
    assert bcn.bind(method="AUTO").vertex_count == bcn.vertex_count
    with pytest.raises(ValueError, match=r"unknown value 'lbx' \(expected .*; any case\)"):
        springskin.Deformer(bcn, method="lbx")


# --- Binding.report without the rig -------------------------------------------------

@needs_models
def test_binding_report_knows_its_rig(bcn, tmp_path):
    binding = bcn.bind()
    assert binding.report() == binding.report(bcn)
    path = tmp_path / "b.sskb"
    binding.save(path)
    assert springskin.load_binding(path, bcn).report() == binding.report()
    alone = springskin.load_binding(path)
    with pytest.raises(ValueError, match="loaded without its rig"):
        alone.report()
    assert alone.report(bcn) == binding.report()


# --- threading --------------------------------------------------------------------------

@needs_models
def test_configure_threads_same_bits_and_errors(bcn):
    before = springskin.configure_threads()
    try:
        results = []
        for threads, spin in ((1, 0), (3, 50), (2, 0)):
            assert springskin.configure_threads(threads, spin) == (threads, spin)
            d = springskin.Deformer(bcn, method="spring", backend="cpu")
            results.append(d.deform(bcn.sample(40)[0]).copy())
        for r in results[1:]:
            np.testing.assert_array_equal(r, results[0])
        with pytest.raises(ValueError, match="threads = 300 is above 256"):
            springskin.configure_threads(300)
        with pytest.raises(ValueError, match="spin_microseconds"):
            springskin.configure_threads(spin_microseconds=-1)
        with pytest.raises(TypeError, match="threads must be an int"):
            springskin.configure_threads(2.0)
    finally:
        springskin.configure_threads(*before)


# --- CoR progress (issue #18) ----------------------------------------------------------

def test_bind_cor_reports_progress():
    rig = springskin.Rig(**limb_arrays(rings=40, segments=16))
    seen = []
    plain = rig.bind(cor=True)
    with_progress = rig.bind(cor=True, progress=seen.append)
    assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] == 1.0, seen
    assert with_progress.has_cor and plain.has_cor
    with pytest.raises(TypeError, match="progress: expected a callable"):
        rig.bind(cor=True, progress=3)



# --- CoR incremental updates (issue #18) ------------------------------------------------

def test_cor_state_update_equals_a_new_state():
    args = limb_arrays(rings=40, segments=16, bones=3)
    rig = springskin.Rig(**args)
    state = springskin.CorState(rig)
    full = springskin.CorState(rig)
    np.testing.assert_array_equal(state.centers, full.centers)
    assert state.flags.dtype == bool and state.flags.sum() > 0
    w = np.array(args["weight_values"], dtype=np.float32, copy=True)
    blended = np.flatnonzero((w[:, 0] > 0.05) & (w[:, 1] > 0.05))
    rows = blended[::7][:10]
    assert len(rows) == 10
    w[rows, 0] += 0.1 * w[rows, 1]
    w[rows, 1] *= 0.9
    edited = springskin.Rig(**dict(args, weight_values=w))
    stats = state.update(edited, rows)
    assert stats["cor_count"] > 0 and stats["seconds"] >= 0.0
    ref = springskin.CorState(edited)
    diag = np.linalg.norm(np.ptp(np.asarray(args["positions"]), axis=0))
    assert np.abs(state.centers - ref.centers).max() <= 1e-5 * diag
    np.testing.assert_array_equal(state.flags, ref.flags)
    assert np.abs(state.centers - full.centers).max() > 1e-6 * diag, "nothing moved"
    with pytest.raises(ValueError, match="rows: expected indices"):
        state.update(edited, [rig.vertex_count])
    with pytest.raises(TypeError, match="rows: expected integer"):
        state.update(edited, [0.5])
    with pytest.raises(ValueError, match="the state was made for"):
        state.update(springskin.Rig(**limb_arrays(rings=20, segments=16, bones=3)), [0])


def test_deformer_takes_the_updated_centers():
    """Deformer(cor=state) after an update deforms as a deformer of the edited
    rig whose centers are computed from scratch."""
    args = limb_arrays(rings=40, segments=16, bones=3)
    rig = springskin.Rig(**args)
    seen = []
    state = springskin.CorState(rig, progress=seen.append)
    assert seen and seen[-1] == 1.0
    w = np.array(args["weight_values"], dtype=np.float32, copy=True)
    rows = np.flatnonzero((w[:, 0] > 0.05) & (w[:, 1] > 0.05))[::5][:10]
    w[rows, 0] += 0.3 * w[rows, 1]
    w[rows, 1] *= 0.7
    edited = springskin.Rig(**dict(args, weight_values=w))
    pose = np.repeat(np.eye(4, dtype=np.float32)[None], rig.bone_count, axis=0)
    c, s = np.cos(1.1), np.sin(1.1)
    pose[1:, :3, :3] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
    stale = springskin.Deformer(edited, method="cor", backend="cpu", cor=state).deform(pose)
    state.update(edited, rows)
    updated = springskin.Deformer(edited, method="cor", backend="cpu", cor=state).deform(pose)
    fresh = springskin.Deformer(edited, method="cor", backend="cpu").deform(pose)
    diag = np.linalg.norm(np.ptp(np.asarray(args["positions"]), axis=0))
    assert np.abs(updated - fresh).max() <= 1e-5 * diag
    assert np.abs(stale - fresh).max() > 1e-4 * diag, "the edit changed no deformed vertex"
    with pytest.raises(TypeError, match="cor: expected a springskin.CorState"):
        springskin.Deformer(edited, method="cor", cor=state.centers)
    with pytest.raises(ValueError, match="centers of rotation are for"):
        springskin.Deformer(springskin.Rig(**limb_arrays(rings=20, segments=16, bones=3)),
                            method="cor", cor=state)
    with pytest.raises(TypeError, match="progress: expected a callable"):
        springskin.CorState(rig, progress=1)


# --- isolated imports (issue #19) -------------------------------------------------------

def _deeply_nested_x(path, depth=200_000):
    """An .x file of `depth` nested frames: Assimp's X parser recurses once
    per level and overflows its stack (a crash, not an error)."""
    with open(path, "w") as f:
        f.write("xof 0303txt 0032\n")
        f.write("Frame a {\n" * depth)
        f.write("}\n" * depth)


@needs_models
def test_isolated_load_turns_an_importer_crash_into_import_error(tmp_path):
    deep = tmp_path / "deep.x"
    _deeply_nested_x(deep)
    with pytest.raises(ImportError, match="isolated process") as e:
        springskin.load(deep, isolate=True)
    assert e.value.path == str(deep)
    # a good file: the same rig as without isolation
    plain = springskin.load(BCN)
    isolated = springskin.load(BCN, isolate=True)
    assert isolated.vertex_count == plain.vertex_count
    assert list(isolated.bones) == list(plain.bones)
    np.testing.assert_array_equal(isolated.rest_positions(), plain.rest_positions())
    # an import error keeps its type and message
    garbage = tmp_path / "garbage.x"
    garbage.write_text("hello")
    with pytest.raises(springskin.SpringSkinError) as direct:
        springskin.load(garbage)
    with pytest.raises(springskin.SpringSkinError) as through:
        springskin.load(garbage, isolate=True)
    assert str(through.value) == str(direct.value)
    assert through.value.status == direct.value.status == "SSK_ERROR_IMPORT"
    # the limits
    with pytest.raises(ImportError, match="did not finish within"):
        springskin.load(BCN, isolate=True, timeout=0.001)
    from springskin import _isolate
    if not _isolate.under_address_sanitizer():  # no address-space limit under ASan
        with pytest.raises(ImportError, match="memory limit"):
            springskin.load(BCN, isolate=True, memory_limit=50 * 2**20)
    with pytest.raises(ValueError, match="memory_limit"):
        springskin.load(BCN, isolate=True, memory_limit=-1)


def test_remove_temporary_files(tmp_path):
    """Issue #19: what a SIGTERM handler calls: the temporary file of a cache
    being written goes; finishing it then fails cleanly."""
    out = tmp_path / "cache.pc2"
    writer = springskin.PointCacheWriter(out, 4)
    writer.write(np.zeros((4, 3), dtype=np.float32))
    temporary = list(tmp_path.glob("cache.pc2.tmp-*"))
    assert len(temporary) == 1
    springskin.remove_temporary_files()
    assert not list(tmp_path.glob("cache.pc2.tmp-*"))
    with pytest.raises(OSError):
        writer.finish()
    assert not out.exists()
