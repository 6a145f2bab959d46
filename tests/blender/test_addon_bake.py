"""Bake to Mesh Cache (.pc2 + Blender's Mesh Cache modifier) and to Alembic.

    blender -b --factory-startup --python tests/blender/test_addon_bake.py -- REPO [BUILD]

- object.springskin_bake_mesh_cache writes a .pc2 (read back here with
  struct/numpy) equal to the evaluated mesh of every frame, adds a Mesh
  Cache modifier after the (now disabled) Spring Skin modifier, and that
  modifier alone reproduces every frame with the addon disabled;
- object.springskin_bake_alembic writes an .abc read back by the project's
  independent reader (tests/python/test_abc_reader.py) and, where Blender
  is built with Alembic (Debian's is not), by Blender's own importer: the
  same positions, normals and world matrices on every frame.
"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_testlib as T  # noqa: E402

#: The same positions through a file: float32 round off only.
SAME = 1e-6


def read_pc2(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:12] == b"POINTCACHE2\0", data[:12]
    version, points, start, rate, samples = struct.unpack("<iiffi", data[12:32])
    assert version == 1
    frames = np.frombuffer(data, dtype="<f4", offset=32)
    assert frames.size == samples * points * 3, "truncated or oversized .pc2"
    return start, rate, frames.reshape(samples, points, 3)


def _animated_character(method):
    mesh, arm, (first, last) = T.fbx_character()
    T.activate(mesh)
    result, err = T.call(bpy.ops.object.springskin_add, method=method)
    assert result == {"FINISHED"}, err
    expected = {}
    worlds = {}
    for f in range(first, last + 1):
        bpy.context.scene.frame_set(f)
        expected[f] = T.evaluated(mesh)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        worlds[f] = np.array(mesh.evaluated_get(depsgraph).matrix_world)
    return mesh, first, last, expected, worlds


def test_bake_mesh_cache_and_replay_without_the_addon():
    mesh, first, last, expected, _ = _animated_character("DQS")
    diag = T.diagonal(mesh)
    path = os.path.join(T.TMP, "character.pc2")
    bpy.context.scene.frame_set(first + 2)
    result, err = T.call(bpy.ops.object.springskin_bake_mesh_cache, filepath=path)
    assert result == {"FINISHED"}, err
    assert bpy.context.scene.frame_current == first + 2, "the frame was not restored"
    assert not [n for n in os.listdir(T.TMP) if ".tmp-" in n], "temporary file left"
    start, rate, frames = read_pc2(path)
    assert (start, rate) == (first, 1.0)
    assert frames.shape == (last - first + 1, len(mesh.data.vertices), 3)
    for i, f in enumerate(range(first, last + 1)):
        err = np.abs(frames[i] - expected[f]).max() / diag
        assert err <= SAME, "frame %d: .pc2 differs from the evaluated mesh by %.3g" % (f, err)
    names = [m.name for m in mesh.modifiers]
    cache = mesh.modifiers["Spring Skin Cache"]
    assert cache.type == "MESH_CACHE" and cache.cache_format == "PC2"
    assert names.index(cache.name) == names.index("Spring Skin") + 1, names
    assert not mesh.modifiers["Spring Skin"].show_viewport
    assert not mesh.modifiers["Spring Skin"].show_render
    assert bpy.path.abspath(cache.filepath) == path
    mesh_name = mesh.name
    T.disable_addon()
    try:
        assert not any(getattr(h, "__module__", "").startswith(T.ADDON)
                       for h in bpy.app.handlers.frame_change_post)
        mesh = bpy.data.objects[mesh_name]
        for f in range(last, first - 1, -1):  # backwards: nothing carried over
            bpy.context.scene.frame_set(f)
            err = np.abs(T.evaluated(mesh) - expected[f]).max() / diag
            assert err <= SAME, "frame %d replayed by Mesh Cache: %.3g" % (f, err)
    finally:
        T.enable_addon()


def test_bake_mesh_cache_bad_path_is_reported():
    mesh, first, last, _, _ = _animated_character("LBS")
    blocker = os.path.join(T.TMP, "a_file")
    with open(blocker, "w") as f:
        f.write("not a folder")
    path = os.path.join(blocker, "x.pc2")
    result, err = T.call(bpy.ops.object.springskin_bake_mesh_cache, filepath=path)
    assert result is None and "cannot write" in err, err
    assert mesh.modifiers.get("Spring Skin Cache") is None
    assert mesh.modifiers["Spring Skin"].show_viewport


def test_bake_defaults_to_the_scene_range_and_a_cache_folder():
    """Issue #17: the path defaults to //cache/<object>.<ext> (made when
    missing), the range to the scene's, and the report gives the time."""
    mesh, first, last, _, _ = _animated_character("SPRING")
    ops = T.submodule("operators")
    blend = os.path.join(T.TMP, "shot", "scene.blend")
    os.makedirs(os.path.dirname(blend), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=blend)
    mesh = bpy.data.objects[mesh.name]
    T.activate(mesh)
    default = ops.default_cache_path(mesh, ".pc2")
    assert default == "//cache/%s.pc2" % bpy.path.clean_name(mesh.name), default
    assert not os.path.exists(os.path.join(T.TMP, "shot", "cache"))
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first + 1, first + 4
    result, err = T.call(bpy.ops.object.springskin_bake_mesh_cache, filepath=default)
    assert result == {"FINISHED"}, err
    path = bpy.path.abspath(default)
    assert os.path.isfile(path), path
    with open(path, "rb") as f:
        header = f.read(32)
    import struct
    _sig, _ver, nv, start, _rate, samples = struct.unpack("<12siiffi", header)
    assert (nv, start, samples) == (len(mesh.data.vertices), first + 1, 4), (nv, start, samples)


def _abc_reader():
    sys.path.insert(0, os.path.join(T.REPO, "tests", "python"))
    try:
        import test_abc_reader
    except ImportError as exc:  # pytest missing from Blender's Python
        raise AssertionError("cannot import tests/python/test_abc_reader.py: %s" % exc)
    return test_abc_reader


def test_bake_alembic_read_back_by_two_readers():
    mesh, first, last, expected, worlds = _animated_character("LBS")
    diag = T.diagonal(mesh)
    path = os.path.join(T.TMP, "character.abc")
    result, err = T.call(bpy.ops.object.springskin_bake_alembic, filepath=path, normals=True)
    assert result == {"FINISHED"}, err
    size = os.path.getsize(path)
    per_frame = len(mesh.data.vertices) * 12
    assert size > 2 * (last - first + 1) * per_frame, "%d bytes for %d frames" % (
        size, last - first + 1)
    reader = _abc_reader()
    archive = reader.Archive(path)
    (xform, shape), = reader.meshes_of(archive)
    assert xform.name == mesh.name
    geom = shape.properties.props[".geom"]
    to_yup = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    _, tpc, times = archive.time_samplings[1]
    assert abs(tpc - 1 / fps) < 1e-9 and abs(times[0] - first / fps) < 1e-9
    vals = xform.properties.props[".xform"].props[".vals"]
    for i, f in enumerate(range(first, last + 1)):
        p = geom.props["P"].value(i)
        err = np.abs(p - expected[f] @ to_yup.T).max() / diag
        assert err <= SAME, "frame %d: P differs by %.3g" % (f, err)
        n = geom.props["N"].value(i)
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-4)
        m = vals.value(i).reshape(4, 4).T  # Alembic stores row-vector matrices
        world_yup = np.eye(4)
        world_yup[:3, :3] = to_yup
        np.testing.assert_allclose(m, world_yup @ worlds[f] @ world_yup.T, atol=1e-5)
    # Blender's own importer (Y-up -> Z-up) gives back the world positions;
    # Debian's Blender 3.4 is built without Alembic, others have it
    try:
        bpy.ops.wm.alembic_import.get_rna_type()
    except (AttributeError, KeyError):
        print("     (this Blender has no Alembic importer: the second reader is not run)")
        return
    bpy.ops.wm.alembic_import(filepath=path)
    imported = next(o for o in bpy.data.objects if o.type == "MESH" and o.name != mesh.name
                    and any(m.type == "MESH_SEQUENCE_CACHE" for m in o.modifiers))
    checked = 0
    for f in (first, (first + last) // 2, last):
        bpy.context.scene.frame_set(f)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        ob = imported.evaluated_get(depsgraph)
        co = T.coords(ob.data).astype(np.float64)
        mw = np.array(ob.matrix_world)
        world = co @ mw[:3, :3].T + mw[:3, 3]
        ours = expected[f].astype(np.float64) @ worlds[f][:3, :3].T + worlds[f][:3, 3]
        assert world.shape == ours.shape, "imported %s vs %s" % (world.shape, ours.shape)
        err = np.abs(world - ours).max() / diag
        assert err <= 1e-5, "frame %d: Blender's Alembic import differs by %.3g" % (f, err)
        checked += 1
    assert checked == 3


def main():
    T.enable_addon()
    runner = T.Runner("test_addon_bake")
    runner.run(test_bake_mesh_cache_and_replay_without_the_addon)
    runner.run(test_bake_mesh_cache_bad_path_is_reported)
    runner.run(test_bake_defaults_to_the_scene_range_and_a_cache_folder)
    runner.run(test_bake_alembic_read_back_by_two_readers)
    runner.finish()


main()
