"""What the modifier stack above Spring Skin gives it (issue #37, item 3):
shape keys (animated values, a vertex group) and deforming modifiers before
Spring Skin are deformed as Blender's Armature modifier deforms them; a
modifier that changes the vertex count above it is refused.

    blender -b --factory-startup --python tests/blender/test_addon_stack.py -- REPO [BUILD]

The reference is Blender: a copy of the mesh with the same shape keys and
modifiers and its own Armature modifier (Preserve Volume for DQS).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_testlib as T  # noqa: E402

#: Parity tolerance: a fraction of the rest mesh's bounding-box diagonal.
PARITY = 1e-4


def _shape_keys(mesh, diag):
    """Two relative keys: 'Brow' moves the upper third up by 3% of the
    diagonal (value keyed 0 -> 1 -> 0.4 over the animation), 'Side' moves
    every vertex sideways by 2%, weighted by a vertex group that fades
    along the mesh (value 0.7)."""
    co = T.coords(mesh.data).astype(np.float64)
    mesh.shape_key_add(name="Basis", from_mix=False)
    brow = mesh.shape_key_add(name="Brow", from_mix=False)
    side = mesh.shape_key_add(name="Side", from_mix=False)
    up = co[:, 2] > np.percentile(co[:, 2], 66)
    b = co.copy()
    b[up, 2] += 0.03 * diag
    brow.data.foreach_set("co", b.astype(np.float32).ravel())
    s = co.copy()
    s[:, 0] += 0.02 * diag
    side.data.foreach_set("co", s.astype(np.float32).ravel())
    group = mesh.vertex_groups.new(name="side_fade")
    z = co[:, 2]
    fade = (z - z.min()) / max(z.max() - z.min(), 1e-9)
    for i, w in enumerate(fade):
        if w > 0.05:
            group.add([i], float(w), "REPLACE")
    side.vertex_group = "side_fade"
    side.value = 0.7
    return brow


def _key_values(brow, first, last):
    brow.value = 0.0
    brow.keyframe_insert("value", frame=first)
    brow.value = 1.0
    brow.keyframe_insert("value", frame=(first + last) // 2)
    brow.value = 0.4
    brow.keyframe_insert("value", frame=last)


def _displace(obj, diag):
    """A Displace at the top of the stack (along the normals, no texture:
    a uniform push of strength x (1 - midlevel))."""
    mod = obj.modifiers.new("Displace", "DISPLACE")
    mod.strength = 0.02 * diag
    with bpy.context.temp_override(object=obj, active_object=obj):
        bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
    return mod


def _character(shape_keys, displace, preserve):
    mesh, arm, (first, last) = T.fbx_character()
    diag = T.diagonal(mesh)
    if shape_keys:
        brow = _shape_keys(mesh, diag)
    if displace:
        _displace(mesh, diag)
    ref = T.reference_copy(mesh)
    if shape_keys:  # the copy has its own Key: key both
        _key_values(brow, first, last)
        _key_values(ref.data.shape_keys.key_blocks["Brow"], first, last)
    next(m for m in ref.modifiers if m.type == "ARMATURE").use_deform_preserve_volume = preserve
    return mesh, ref, arm, diag, (first, last)


def _frames(first, last):
    return [first, first + (last - first) // 3, (first + last) // 2, last]


def _parity(mesh, ref, diag, first, last, what):
    moved = 0.0
    for f in _frames(first, last):
        bpy.context.scene.frame_set(f)
        got, want = T.evaluated(mesh), T.evaluated(ref)
        err = np.abs(got - want).max() / diag
        assert err <= PARITY, "%s, frame %d: %.3g of the diagonal" % (what, f, err)
        moved = max(moved, np.abs(got - T.coords(mesh.data)).max() / diag)
    assert moved > 0.01, "%s: nothing moved" % what


def test_shape_keys_are_deformed_as_the_armature_modifier_deforms_them():
    for method, preserve in (("LBS", False), ("DQS", True)):
        mesh, ref, arm, diag, (first, last) = _character(True, False, preserve)
        T.activate(mesh)
        assert bpy.ops.object.springskin_add(method=method) == {"FINISHED"}
        _parity(mesh, ref, diag, first, last, "%s with shape keys" % method)
        # the key's effect is there: without it the two differ
        key = mesh.data.shape_keys.key_blocks["Side"]
        key.value = 0.0
        bpy.context.view_layer.update()
        assert np.abs(T.evaluated(mesh) - T.evaluated(ref)).max() / diag > 1e-3
        # a value edited at the same frame shows (a depsgraph update)
        key.value = 0.7
        bpy.context.view_layer.update()
        err = np.abs(T.evaluated(mesh) - T.evaluated(ref)).max() / diag
        assert err <= PARITY, "%s after the value edit: %.3g" % (method, err)


def test_a_displace_above_is_deformed_as_the_armature_modifier_deforms_it():
    for method, preserve in (("LBS", False), ("DQS", True)):
        mesh, ref, arm, diag, (first, last) = _character(True, True, preserve)
        T.activate(mesh)
        assert bpy.ops.object.springskin_add(method=method) == {"FINISHED"}
        names = [m.name for m in mesh.modifiers]
        assert names.index("Displace") < names.index("Spring Skin"), names
        _parity(mesh, ref, diag, first, last, "%s with shape keys and a Displace" % method)
        # the frame change leaves the stack as the rigger set it
        flags = [(m.name, m.show_viewport, m.show_render) for m in mesh.modifiers]
        assert ("Spring Skin", True, True) in flags and ("Displace", True, True) in flags, flags


def test_a_modifier_below_keeps_working():
    mesh, ref, arm, diag, (first, last) = _character(False, True, False)
    for obj in (mesh, ref):
        smooth = obj.modifiers.new("Smooth", "SMOOTH")  # last in both stacks
        smooth.factor = 0.5
        smooth.iterations = 2
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="LBS") == {"FINISHED"}
    names = [m.name for m in mesh.modifiers]
    assert names.index("Spring Skin") < names.index("Smooth"), names
    _parity(mesh, ref, diag, first, last, "LBS with a Displace above and a Smooth below")


def test_a_modifier_changing_the_vertex_count_above_is_refused():
    mesh, arm, (first, last) = T.fbx_character()
    sub = mesh.modifiers.new("Subdivision", "SUBSURF")
    with bpy.context.temp_override(object=mesh, active_object=mesh):
        bpy.ops.object.modifier_move_to_index(modifier=sub.name, index=0)
    T.activate(mesh)
    try:  # the operator's error report (an exception in background mode)
        result = bpy.ops.object.springskin_add(method="LBS")
    except RuntimeError as exc:
        assert "Subdivision" in str(exc) and "below Spring Skin" in str(exc), exc
    else:
        raise AssertionError("Add with a Subdivision above: %s" % result)
    assert not any(m.name == "Spring Skin" for m in mesh.modifiers)
    # added after the binding: the panel says so and nothing is shown deformed
    mesh.modifiers.remove(sub)
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="LBS") == {"FINISHED"}
    runtime = T.submodule("runtime")
    sub = mesh.modifiers.new("Subdivision", "SUBSURF")
    with bpy.context.temp_override(object=mesh, active_object=mesh):
        bpy.ops.object.modifier_move_to_index(modifier=sub.name, index=0)
    bpy.context.scene.frame_set(last)
    state = runtime.state_of(mesh)
    assert state is not None and state.error and "Subdivision" in state.error, state.error
    assert "below Spring Skin" in state.error, state.error
    panel = T.draw_panel(mesh).replace(" | ", " ")
    assert "Not deforming" in panel and "Deforming with" not in panel, panel
    # moved below Spring Skin: deformed again, the message gone
    with bpy.context.temp_override(object=mesh, active_object=mesh):
        bpy.ops.object.modifier_move_to_index(modifier=sub.name, index=len(mesh.modifiers) - 1)
    bpy.context.scene.frame_set(first)
    assert not state.error, state.error
    assert "Deforming with" in T.draw_panel(mesh), "deforming again"
    assert len(T.evaluated(mesh)) > len(mesh.data.vertices), "subdivided below Spring Skin"


def main():
    T.require_addon()
    runner = T.Runner("test_addon_stack")
    T.enable_addon()
    for test in (test_shape_keys_are_deformed_as_the_armature_modifier_deforms_them,
                 test_a_displace_above_is_deformed_as_the_armature_modifier_deforms_it,
                 test_a_modifier_below_keeps_working,
                 test_a_modifier_changing_the_vertex_count_above_is_refused):
        runner.run(test)
    runner.finish()


if __name__ == "__main__":
    main()
