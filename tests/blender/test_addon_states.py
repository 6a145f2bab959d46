"""The addon's wrong states of issue #17, each met the way a rigger meets it
and checked against Blender itself (its Armature modifier on a reference
copy of the mesh, the mesh's own coordinates):

- skin weights edited in Object mode (Vertex Groups > Limit Total): the
  binding is marked stale (or rebound at once with Auto Rebind);
- the Spring Skin modifier applied with Blender's Apply, or deleted with
  its X: the mesh is handed back to its Armature modifier, with a note;
- the addon disabled and enabled again: the rig keeps deforming the mesh
  (Blender's modifier while disabled), Spring Skin takes over again;
- spring solves that stop at the iteration cap: named in the panel.

    blender -b --factory-startup --python tests/blender/test_addon_states.py -- REPO [BUILD]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_testlib as T  # noqa: E402

#: Parity tolerance: a fraction of the rest mesh's bounding-box diagonal.
PARITY = 1e-4


def _armature_mod(obj):
    return next(m for m in obj.modifiers if m.type == "ARMATURE")


def _reference(mesh, arm):
    """A copy of `mesh` deformed by Blender's own Armature modifier (the
    copy's modifier gets the armature back and is enabled)."""
    ref = T.reference_copy(mesh)
    mod = _armature_mod(ref)
    mod.object = arm
    mod.show_viewport = mod.show_render = True
    for m in [m for m in ref.modifiers if m.type != "ARMATURE"]:
        ref.modifiers.remove(m)
    return ref


def _err(a, b, mesh):
    return float(np.abs(T.evaluated(a) - T.evaluated(b)).max()) / T.diagonal(mesh)


def _limit_total(obj, limit):
    T.activate(obj)
    assert bpy.ops.object.vertex_group_limit_total(limit=limit) == {"FINISHED"}


def test_weights_edited_in_object_mode_mark_the_binding_stale():
    mesh, arm, (first, last) = T.fbx_character()
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="LBS") == {"FINISHED"}
    runtime = T.submodule("runtime")
    scene = bpy.context.scene
    scene.frame_set(first + 5)
    before = T.evaluated(mesh).copy()
    _limit_total(mesh, 1)
    bpy.context.evaluated_depsgraph_get().update()
    state = runtime.state_of(mesh)
    assert state.stale and "Rebind" in state.stale, state.stale
    np.testing.assert_array_equal(T.evaluated(mesh), before)  # the old weights, until Rebind
    ref = _reference(mesh, arm)  # Blender with the limited weights
    assert _err(mesh, ref, mesh) > 10 * PARITY, "Limit Total changed nothing on this rig"
    T.activate(mesh)
    assert bpy.ops.object.springskin_bind() == {"FINISHED"}
    assert runtime.state_of(mesh).stale is None
    scene.frame_set(first + 6)
    err = _err(mesh, ref, mesh)
    assert err <= PARITY, "after Rebind: %.3g of the diagonal" % err


def test_weights_edited_with_rebind_automatically():
    mesh, arm, (first, last) = T.fbx_character()
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="DQS") == {"FINISHED"}
    mesh.springskin.auto_rebind = True
    scene = bpy.context.scene
    scene.frame_set(first + 5)
    _limit_total(mesh, 2)
    bpy.context.evaluated_depsgraph_get().update()
    runtime = T.submodule("runtime")
    assert runtime.state_of(mesh).stale is None
    ref = _reference(mesh, arm)
    _armature_mod(ref).use_deform_preserve_volume = True
    err = _err(mesh, ref, mesh)
    assert err <= PARITY, "rebound automatically: %.3g of the diagonal" % err


def test_apply_leaves_the_shape_and_a_disabled_armature_modifier():
    mesh, arm, (first, last) = T.fbx_character()
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="IRS") == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(first + 7)
    posed = T.evaluated(mesh).copy()
    with bpy.context.temp_override(object=mesh, active_object=mesh):
        assert bpy.ops.object.modifier_apply(modifier="Spring Skin") == {"FINISHED"}
    bpy.context.evaluated_depsgraph_get().update()
    np.testing.assert_allclose(T.coords(mesh.data), posed, atol=1e-5 * T.diagonal(mesh))
    mod = _armature_mod(mesh)
    assert mod.object == arm, "the armature was not given back"
    assert not mod.show_viewport, "enabled, it would deform the applied shape again"
    assert not mesh.springskin.bound and mesh.springskin.armature is None
    note = T.submodule("runtime").note_of(mesh)
    assert note and "applied" in note, note
    np.testing.assert_allclose(T.evaluated(mesh), posed, atol=1e-5 * T.diagonal(mesh))


def test_deleting_the_modifier_gives_the_mesh_back_to_blender():
    mesh, arm, (first, last) = T.fbx_character()
    ref = _reference(mesh, arm)
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="SPRING") == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(first + 3)
    mesh.modifiers.remove(mesh.modifiers["Spring Skin"])  # the modifier's X
    bpy.context.evaluated_depsgraph_get().update()
    mod = _armature_mod(mesh)
    assert mod.object == arm and mod.show_viewport and mod.show_render
    assert not mesh.springskin.bound
    assert "deleted" in T.submodule("runtime").note_of(mesh)
    for f in (first + 4, last):
        scene.frame_set(f)
        err = _err(mesh, ref, mesh)
        assert err <= PARITY, "frame %d: %.3g of the diagonal" % (f, err)


def test_addon_disable_gives_the_mesh_to_blender_and_enable_takes_it_back():
    mesh, arm, (first, last) = T.fbx_character()
    ref = _reference(mesh, arm)
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="LBS") == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(first + 2)
    T.disable_addon()
    try:
        scene.frame_set(first + 9)  # the rig moves on
        mod = _armature_mod(mesh)
        assert mod.object == arm and mod.show_viewport
        assert not mesh.modifiers["Spring Skin"].show_viewport
        err = _err(mesh, ref, mesh)
        assert err <= PARITY, "addon disabled, frame %d: %.3g" % (first + 9, err)
    finally:
        T.enable_addon()
    # the resume runs from a timer; run it as Blender's event loop would
    T.submodule("runtime").resume_all()
    scene.frame_set(first + 11)
    assert mesh.modifiers["Spring Skin"].show_viewport
    assert _armature_mod(mesh).object is None and not _armature_mod(mesh).show_viewport
    assert T.submodule("runtime").state_of(mesh).deformer is not None
    err = _err(mesh, ref, mesh)
    assert err <= PARITY, "addon enabled again: %.3g" % err


def test_unconverged_spring_frames_are_reported():
    mesh, arm, (first, last) = T.fbx_character()
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="SPRING") == {"FINISHED"}
    T.activate(mesh)
    assert bpy.ops.object.springskin_edit_graph() == {"FINISHED"}
    spring = next(n for n in mesh.springskin.graph.nodes if n.bl_idname == "SpringSkinSpringNode")
    spring.max_iterations = 2
    scene = bpy.context.scene
    for f in (first + 4, first + 8):
        scene.frame_set(f)
    runtime = T.submodule("runtime")
    line = runtime.unconverged_summary(runtime.state_of(mesh))
    assert line and "2 frame(s)" in line and "%d" % (first + 4) in line, line
    # the advice fits the solver in use (the Auto default is the multigrid
    # on the CPU: only Max Iterations is left to raise)
    assert "raise Max Iterations" in line and "Multilevel solver" not in line, line
    # the vertices that did not settle, for the viewport's marks: world
    # positions of the frame shown, some but not all of the mesh, where the
    # evaluated mesh is (6 passes: past the relative rule's first estimate;
    # after 2 every vertex that moved more than the tolerance is marked)
    spring.max_iterations = 6
    scene.frame_set(first + 8)
    assert runtime.state_of(mesh).deformer.spring_report["converged"] is False
    points = runtime.unsettled_points(mesh)
    nv = len(mesh.data.vertices)
    assert points is not None and 0 < len(points) < nv, (None if points is None else len(points))
    world = T.evaluated(mesh) @ np.array(mesh.matrix_world)[:3, :3].T + \
        np.array(mesh.matrix_world)[:3, 3]
    nearest = np.min(np.linalg.norm(world[None, :, :] - points[:, None, :], axis=2), axis=1)
    assert nearest.max() < 1e-4 * T.diagonal(mesh), nearest.max()
    # the viewport's marks (drawn by ui._draw_unsettled, which needs a
    # window: tests/gui), and the panel's toggle
    ui = T.submodule("ui")
    marks = ui.unsettled_marks(bpy.context)
    assert len(marks.get(mesh.name, ())) == len(points), marks.keys()
    mesh.springskin.show_unsettled = False
    assert mesh.name not in ui.unsettled_marks(bpy.context)
    mesh.springskin.show_unsettled = True
    # raised as the report advises: some frames of this character need more
    # than the default cap of 100 (13 of its 21 at 24 fps, before and after
    # the multilevel blend's shorter warm-up; `springskin bake FILE --method
    # spring` names them)
    spring.max_iterations = 400
    scene.frame_set(first + 8)
    line = runtime.unconverged_summary(runtime.state_of(mesh))
    assert line is None, line  # a new deformer: the earlier reports are gone
    assert runtime.unsettled_points(mesh) is None  # a converged frame: no marks


def test_method_and_graph_are_one_control():
    mesh, arm, (first, last) = T.fbx_character()
    ref = _reference(mesh, arm)
    _armature_mod(ref).use_deform_preserve_volume = True
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="IRS") == {"FINISHED"}
    settings = mesh.springskin
    assert settings.graph is None, "Add makes no graph (Edit as Graph does)"
    assert bpy.ops.object.springskin_edit_graph() == {"FINISHED"}
    nodes = T.submodule("nodes")
    skin = nodes.skinning_node(settings.graph)
    assert skin.method == "IRS" and settings.method == "IRS"
    skin.method = "DQS"  # the graph editor's (or the panel's) Method
    assert settings.method == "DQS", "the Method field did not follow the graph"
    settings.graph = None  # clear the graph: the method is what the graph showed
    scene = bpy.context.scene
    scene.frame_set(first + 6)
    err = _err(mesh, ref, mesh)
    assert err <= PARITY, "graph cleared: deforms with %s, %.3g from Blender's DQS" % (
        T.submodule("runtime").state_of(mesh).what, err)
    # Remove + Add + Edit as Graph, three times: no orphan graphs
    for _ in range(3):
        T.activate(mesh)
        assert bpy.ops.object.springskin_remove() == {"FINISHED"}
        assert bpy.ops.object.springskin_add(method="SPRING") == {"FINISHED"}
        assert bpy.ops.object.springskin_edit_graph() == {"FINISHED"}
    trees = [t.name for t in bpy.data.node_groups if t.bl_idname == nodes.TREE_IDNAME]
    assert trees == ["%s Spring Skin" % mesh.name], trees
    assert nodes.graph_method(settings.graph) == "SPRING" == settings.method


def test_each_method_of_the_add_menu_has_its_own_tooltip():
    import types
    ops = T.submodule("operators")
    props = T.submodule("properties")
    seen = set()
    for ident, name, text in props.METHOD_ITEMS:
        tip = ops.OBJECT_OT_springskin_add.description(bpy.context,
                                                       types.SimpleNamespace(method=ident))
        assert name in tip and text in tip, (ident, tip)
        seen.add(tip)
    assert len(seen) == len(props.METHOD_ITEMS)


def test_weight_paint_updates_the_centers_of_rotation():
    """Issue #18: after a weight-paint session only the centers the edit
    changes are recomputed (CorState.update), and they equal a full
    precomputation of the edited weights."""
    mesh, arm, (first, last) = T.fbx_character()
    T.activate(mesh)
    assert bpy.ops.object.springskin_add(method="COR") == {"FINISHED"}
    runtime = T.submodule("runtime")
    scene = bpy.context.scene
    scene.frame_set(first + 5)
    state = runtime.state_of(mesh)
    assert state.cor_state is not None and "computed" in state.cor_note, state.cor_note
    before = T.evaluated(mesh).copy()
    # a "stroke": ten vertices with two or more bones get more of their
    # first bone (their bone sets unchanged)
    names = {b.name for b in arm.data.bones if b.use_deform}
    edited = []
    for v in mesh.data.vertices:
        groups = [g for g in v.groups
                  if mesh.vertex_groups[g.group].name in names and g.weight > 0.05]
        if len(groups) >= 2 and v.index % 3 == 0:
            edited.append((v.index, groups[0].group, min(1.0, groups[0].weight * 1.5 + 0.1)))
        if len(edited) == 10:
            break
    assert len(edited) == 10
    assert bpy.ops.object.mode_set(mode="WEIGHT_PAINT") == {"FINISHED"}
    scene.frame_set(first + 5)
    for index, group, weight in edited:
        mesh.vertex_groups[group].add([index], weight, "REPLACE")
    assert bpy.ops.object.mode_set(mode="OBJECT") == {"FINISHED"}
    scene.frame_set(first + 6)
    scene.frame_set(first + 5)
    state = runtime.state_of(mesh)
    assert "10 edited vertices" in state.cor_note, state.cor_note
    ssk = T.submodule("native").require()
    full = ssk.CorState(state.rig)
    diag = T.diagonal(mesh)
    diff = float(np.abs(state.cor_state.centers - full.centers).max()) / diag
    assert diff <= 1e-5, "updated vs full centers: %.3g of the diagonal" % diff
    np.testing.assert_array_equal(state.cor_state.flags, full.flags)
    moved = float(np.abs(T.evaluated(mesh) - before).max()) / diag
    assert moved > 1e-5, "the weight edit changed nothing in the deformed mesh"
    print("weight paint: %s; |update - full| = %.2g diagonal; the edit moved the pose by %.2g"
          % (state.cor_note, diff, moved))


def main():
    runner = T.Runner("test_addon_states")
    T.enable_addon()
    for test in (test_weights_edited_in_object_mode_mark_the_binding_stale,
                 test_weights_edited_with_rebind_automatically,
                 test_apply_leaves_the_shape_and_a_disabled_armature_modifier,
                 test_deleting_the_modifier_gives_the_mesh_back_to_blender,
                 test_addon_disable_gives_the_mesh_to_blender_and_enable_takes_it_back,
                 test_unconverged_spring_frames_are_reported,
                 test_method_and_graph_are_one_control,
                 test_each_method_of_the_add_menu_has_its_own_tooltip,
                 test_weight_paint_updates_the_centers_of_rotation):
        runner.run(test)
    runner.finish()


main()
