"""Tests of the addon's deformer-graph node tree (addon/springskin_blender/nodes.py).

Run headless:

    blender -b --factory-startup --python tests/blender/test_nodes.py -- REPO [BUILD]

REPO is the source tree; BUILD the CMake build directory whose python/
holds the compiled springskin package (default REPO/build, or
$SSK_BUILD_DIR). When that package cannot be imported, the cross-checks
against the core's parser (springskin.Graph) are skipped with a message.
Prints "N passed, M failed"; exits 1 on a failure, 77 when Blender's
Python cannot run the tests at all.

nodes.py is loaded as a submodule of a stand-in package (without running
the addon's __init__.py), with a stand-in ``runtime`` module that records
``graph_changed`` calls. The save/load test runs two more Blender
processes on a saved .blend.
"""

import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import traceback
import types

import bpy

SKIP = 77
PKG = "ssk_nodes_under_test"


def _arguments():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.abspath(argv[0]) if argv and not argv[0].startswith("--") else \
        os.path.abspath(os.path.join(here, "..", ".."))
    rest = argv[1:] if argv and not argv[0].startswith("--") else argv
    build = None
    if rest and not rest[0].startswith("--"):
        build, rest = os.path.abspath(rest[0]), rest[1:]
    build = build or os.environ.get("SSK_BUILD_DIR") or os.path.join(repo, "build")
    return repo, build, rest


REPO, BUILD, EXTRA = _arguments()
ADDON_DIR = os.path.join(REPO, "addon", "springskin_blender")


# --- loading nodes.py without the rest of the addon ---------------------------------

class FakeRuntime(types.ModuleType):
    def __init__(self):
        super().__init__(PKG + ".runtime")
        self.calls = []

    def graph_changed(self, tree):
        self.calls.append(tree.name)


def load_nodes():
    """nodes.py as PKG.nodes, PKG a package over the addon folder whose
    __init__ is not run; the recording stand-in of the runtime listens to
    the tree's changes (nodes.add_change_listener, as runtime.register
    does)."""
    if PKG + ".nodes" in sys.modules:
        return sys.modules[PKG + ".nodes"], sys.modules[PKG + ".runtime"]
    pkg = types.ModuleType(PKG)
    pkg.__path__ = [ADDON_DIR]
    pkg.__package__ = PKG
    sys.modules[PKG] = pkg
    runtime = FakeRuntime()
    sys.modules[PKG + ".runtime"] = runtime
    pkg.runtime = runtime
    module = importlib.import_module(PKG + ".nodes")
    module.add_change_listener(runtime.graph_changed)
    return module, runtime


def load_springskin():
    path = os.path.join(BUILD, "python")
    if not os.path.isdir(os.path.join(path, "springskin")):
        return None, "no springskin package in %s" % path
    sys.path.insert(0, path)
    try:
        import springskin
    except ImportError as exc:
        return None, "springskin in %s does not import: %s" % (path, exc)
    return springskin, None


# --- the test character: a 3-bone armature and a cylinder around it ---------------------

RINGS, SEGMENTS, RING_STEP, RADIUS = 13, 8, 0.25, 0.3
BONES = (("Root", None, 0.0, 1.0), ("Mid", "Root", 1.0, 2.0), ("Tip", "Mid", 2.0, 3.0))
BELLY_ROWS = [6 * SEGMENTS + k for k in range(3)]   # ring 6 (z = 1.5), segments 0-2
SCENE_FRAMES = (1, 20)


def ring_z(row):
    return (row // SEGMENTS) * RING_STEP


def soft_weight(row):
    """Weight of vertex `row` in group "Soft" (0 where absent)."""
    z = ring_z(row)
    return z / 3.0 if z >= 2.0 else 0.0


def bone_weights(z):
    hats = [max(0.0, 1.0 - abs(z - (a + b) / 2.0)) for _, _, a, b in BONES]
    total = sum(hats)
    return [h / total for h in hats]


def make_character():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = SCENE_FRAMES
    arm_data = bpy.data.armatures.new("Rig")
    arm = bpy.data.objects.new("Rig", arm_data)
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for name, parent, z0, z1 in BONES:
        bone = arm_data.edit_bones.new(name)
        bone.head, bone.tail = (0.0, 0.0, z0), (0.0, 0.0, z1)
        if parent:
            bone.parent = arm_data.edit_bones[parent]
            bone.use_connect = True
    bpy.ops.object.mode_set(mode="OBJECT")

    verts, faces = [], []
    for r in range(RINGS):
        for s in range(SEGMENTS):
            a = 2.0 * math.pi * s / SEGMENTS
            verts.append((RADIUS * math.cos(a), RADIUS * math.sin(a), r * RING_STEP))
    for r in range(RINGS - 1):
        for s in range(SEGMENTS):
            t = (s + 1) % SEGMENTS
            faces.append((r * SEGMENTS + s, r * SEGMENTS + t, (r + 1) * SEGMENTS + t,
                          (r + 1) * SEGMENTS + s))
    mesh = bpy.data.meshes.new("Body")
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new("Body", mesh)
    scene.collection.objects.link(obj)
    obj.modifiers.new("Armature", "ARMATURE").object = arm
    groups = [obj.vertex_groups.new(name=name) for name, _, _, _ in BONES]
    for row in range(len(verts)):
        for group, w in zip(groups, bone_weights(ring_z(row))):
            if w > 0.0:
                group.add([row], w, "REPLACE")
    obj.vertex_groups.new(name="Belly").add(BELLY_ROWS, 1.0, "REPLACE")
    soft = obj.vertex_groups.new(name="Soft")
    for row in range(len(verts)):
        if soft_weight(row) > 0.0:
            soft.add([row], soft_weight(row), "REPLACE")
    obj.vertex_groups.new(name="Empty")
    obj.vertex_groups.new(name="Zero").add([0, 1], 0.0, "REPLACE")   # members, weight 0
    bpy.context.view_layer.objects.active = obj
    return obj, arm


def make_rig(springskin, obj, arm):
    """The core's rig of the test character (one mesh, rows = vertex indices)."""
    import numpy as np
    mesh = obj.data
    mesh.calc_loop_triangles()
    positions = np.array([v.co[:] for v in mesh.vertices], dtype=np.float64)
    triangles = np.array([t.vertices[:] for t in mesh.loop_triangles], dtype=np.int64)
    bones = list(arm.data.bones)
    names = [b.name for b in bones]
    parents = np.array([names.index(b.parent.name) if b.parent else -1 for b in bones])
    bind = np.array([[list(row) for row in b.matrix_local] for b in bones])
    heads = np.array([b.head_local[:] for b in bones])
    tails = np.array([b.tail_local[:] for b in bones])
    k = len(bones)
    indices = np.full((len(positions), k), -1, dtype=np.int64)
    values = np.zeros((len(positions), k))
    for row in range(len(positions)):
        for j, w in enumerate(bone_weights(ring_z(row))):
            indices[row, j], values[row, j] = j, w
    return springskin.Rig(positions, triangles, parents, bind, indices, values, heads=heads,
                          tails=tails, bone_names=names, mesh_name="Body")


# --- harness ----------------------------------------------------------------------------

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Ctx:
    nodes = None
    runtime = None
    obj = None
    arm = None
    springskin = None
    rig = None


def check(cond, message="check failed"):
    if not cond:
        raise AssertionError(message)


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(b))


def same(actual, expected, path="doc"):
    """Deep comparison with float tolerance (float32 properties)."""
    if isinstance(expected, float):
        check(isinstance(actual, (int, float)) and not isinstance(actual, bool)
              and close(actual, expected), "%s: %r != %r" % (path, actual, expected))
    elif isinstance(expected, dict):
        check(isinstance(actual, dict) and set(actual) == set(expected),
              "%s: keys %s != %s" % (path, sorted(actual) if isinstance(actual, dict) else actual,
                                      sorted(expected)))
        for key in expected:
            same(actual[key], expected[key], "%s.%s" % (path, key))
    elif isinstance(expected, list):
        check(isinstance(actual, list) and len(actual) == len(expected),
              "%s: %r != %r" % (path, actual, expected))
        for i, (a, e) in enumerate(zip(actual, expected)):
            same(a, e, "%s[%d]" % (path, i))
    else:
        check(type(actual) is type(expected) and actual == expected,
              "%s: %r != %r" % (path, actual, expected))


def raises(fn, node_name, *phrases):
    """fn() raises nodes.GraphError naming `node_name`, its message holding
    every phrase; returns the message."""
    try:
        fn()
    except Ctx.nodes.GraphError as exc:
        message = str(exc)
        check(exc.node == node_name, "error names node %r, expected %r: %s"
              % (exc.node, node_name, message))
        if node_name is not None:
            check("'%s'" % node_name in message, "message lacks the node name: " + message)
        for phrase in phrases:
            check(phrase in message, "message lacks %r: %s" % (phrase, message))
        return message
    raise AssertionError("no GraphError (expected one about %r)" % (phrases,))


def core_accepts(doc):
    """Parse with the core; returns the canonical dict (None when skipped)."""
    if Ctx.springskin is None:
        return None
    return Ctx.springskin.Graph(doc, Ctx.rig).to_dict()


def core_rejects(doc, phrase):
    if Ctx.springskin is None:
        return
    try:
        Ctx.springskin.Graph(doc, Ctx.rig)
    except ValueError as exc:
        check(phrase in str(exc), "core message lacks %r: %s" % (phrase, exc))
        return
    raise AssertionError("the core accepted a graph it should refuse")


def fresh():
    for tree in list(bpy.data.node_groups):
        bpy.data.node_groups.remove(tree)
    for action in list(bpy.data.actions):
        bpy.data.actions.remove(action)
    Ctx.runtime.calls.clear()


def new_tree(name="G"):
    return bpy.data.node_groups.new(name, Ctx.nodes.TREE_IDNAME)


def add(tree, kind, name, **props):
    node = tree.nodes.new("SpringSkin%sNode" % kind)
    node.name = name
    for key, value in props.items():
        setattr(node, key, value)
    return node


def link(tree, a, b, out=0, inp=0):
    return tree.links.new(a.outputs[out], b.inputs[inp])


def compile_(tree):
    return Ctx.nodes.compile_tree(tree, Ctx.obj)


# --- tests ------------------------------------------------------------------------------

DEFAULT_SPRING = {
    "id": "Spring", "type": "spring",
    "stiffness": {"surface": 6.0, "length": 18.0, "torsion": 18.0, "bone": 0.2, "edit": 5.0,
                  "detail": 200.0, "twist": 0.0},
    "stiffness_maps": {}, "dt": 1.0 / 30.0, "integrator": "explicit", "damping": 0.1,
    "max_iterations": 100, "convergence": "relative", "threshold": 0.0,
    "mode": "frame_independent", "solver": "auto", "chebyshev_rho": 0.96,
    "attachment": "weights", "edits": []}

#: ssk_implicit_params_default (core/graph/graph_implicit.c)
DEFAULT_IMPLICIT = {
    "id": "Implicit", "type": "implicit", "operator": "contact", "operators": {},
    "iterations": 20, "sigma": 0.35, "contact_angle": 55.0, "smoothing_iterations": 3,
    "diffusion_iterations": 3, "bulge": 1.0, "tracking": "independent", "substep_angle": 15.0,
    "relaxation_iterations": 3}


def default_doc(method):
    skin = {"id": "Skinning", "type": "skinning", "method": method}
    if method in ("rigid", "irs", "spring"):
        skin["attachment"] = "weights"
    if method == "irs":
        skin.update(parent_influence=0.5, child_influence=0.5, length_adjust=False)
    last = "Skinning"
    nodes = [skin]
    edges = []
    if method == "spring":
        skin["method"] = "irs"
        skin.update(parent_influence=0.5, child_influence=0.5, length_adjust=False)
        nodes.append(DEFAULT_SPRING)
        edges.append({"from": "Skinning", "to": "Spring", "input": "positions"})
        last = "Spring"
    if method == "implicit":
        skin["method"] = "dqs"
        nodes.append(DEFAULT_IMPLICIT)
        edges.append({"from": "Skinning", "to": "Implicit", "input": "positions"})
        last = "Implicit"
    nodes += [{"id": "Normals", "type": "normals"}, {"id": "Output", "type": "output"}]
    edges += [{"from": last, "to": "Normals", "input": "positions"},
              {"from": last, "to": "Output", "input": "positions"},
              {"from": "Normals", "to": "Output", "input": "normals"}]
    return {"version": 1, "nodes": nodes, "edges": edges}


@test
def registration_is_idempotent():
    nodes = Ctx.nodes
    nodes.register()                      # second time: no error
    for cls in nodes.classes:
        check(cls.is_registered, cls.__name__ + " not registered")
    import nodeitems_utils
    check("SPRINGSKIN_GRAPH_NODES" in nodeitems_utils._node_categories, "no Add menu categories")
    items = {item.nodetype for cat in nodes._categories for item in cat.items(None)}
    for idname in ("SpringSkinSkinningNode", "SpringSkinRadialNode", "SpringSkinSpringNode",
                   "SpringSkinImplicitNode", "SpringSkinSurfaceEditNode", "SpringSkinNormalsNode",
                   "SpringSkinOutputNode"):
        check(idname in items, idname + " missing from the Add menu")
    check(bpy.app.handlers.load_post.count(nodes._on_load_post) == 1, "one load handler")
    nodes.unregister()
    nodes.unregister()                    # second time: no error
    check(not any(cls.is_registered for cls in nodes.classes), "classes left registered")
    check(bpy.types.NodeTree.bl_rna_get_subclass_py("SpringSkinGraphTree") is None,
          "tree type left")
    check("SPRINGSKIN_GRAPH_NODES" not in nodeitems_utils._node_categories, "categories left")
    check(nodes._on_load_post not in bpy.app.handlers.load_post, "load handler left")
    nodes.register()
    # a reload of the module (Reload Scripts): new classes replace the old
    old_classes = nodes.classes
    importlib.reload(nodes)
    nodes.register()
    # the reloaded module starts without listeners; the addon's
    # runtime.register adds its own again, as here the stand-in's
    check(nodes._change_listeners == [], "a reload keeps no stale listener")
    nodes.add_change_listener(Ctx.runtime.graph_changed)
    check(all(cls.is_registered for cls in nodes.classes), "reloaded classes registered")
    check(not any(cls.is_registered for cls in old_classes), "stale classes left registered")
    check(sum(1 for h in bpy.app.handlers.load_post if h.__name__ == "_on_load_post") == 1,
          "one load handler after reload")
    check(bpy.types.NodeTree.bl_rna_get_subclass_py("SpringSkinGraphTree").bl_label ==
          "Spring Skin Graph", "tree label")


@test
def sockets_have_distinct_colors():
    fresh()
    tree = new_tree()
    out = add(tree, "Output", "Output")
    edit = add(tree, "SurfaceEdit", "Edit")
    colors = {tuple(round(c, 3) for c in s.draw_color(bpy.context, n))
              for n, s in ((out, out.inputs[0]), (out, out.inputs[1]), (edit, edit.outputs[0]))}
    check(len(colors) == 3, "socket colors not distinct: %s" % colors)
    check([s.bl_idname for s in out.inputs] ==
          ["SpringSkinPositionsSocket", "SpringSkinNormalsSocket"], "output sockets")


@test
def default_trees_per_method():
    fresh()
    for method in ("LBS", "DQS", "RIGID", "IRS", "COR", "SPRING", "IMPLICIT"):
        tree = Ctx.nodes.new_graph_tree("Default " + method, method)
        check(Ctx.nodes.graph_method(tree) == method,
              "%s: graph_method %r" % (method, Ctx.nodes.graph_method(tree)))
        check(tree.bl_idname == "SpringSkinGraphTree" and tree.use_fake_user, method + " tree")
        doc = compile_(tree)
        same(doc, default_doc(method.lower()), method)
        core = core_accepts(doc)
        if core is not None:
            check([n["type"] for n in core["nodes"]] == [n["type"] for n in doc["nodes"]],
                  method + ": core node types")
            if method == "IMPLICIT":
                same(core["nodes"][1], DEFAULT_IMPLICIT, "core implicit defaults")
            if method == "SPRING":
                spring = core["nodes"][1]
                check(spring["stiffness"]["torsion"] == 18.0 and spring["max_iterations"] == 100,
                      "core spring defaults")
    try:
        Ctx.nodes.new_graph_tree("Bad", "SPRINGY")
    except ValueError as exc:
        check("SPRINGY" in str(exc), str(exc))
    else:
        raise AssertionError("unknown method accepted")


IMPLICIT_PROPS = ("operator", "iterations", "sigma", "contact_angle", "smoothing_iterations",
                  "diffusion_iterations", "bulge", "tracking", "substep_angle",
                  "relaxation_iterations", "joint_operators")


def _implicit_from_doc(node, entry):
    """Set an Implicit node's properties from a document's implicit entry
    (the reverse of the compilation, written here for the round trip)."""
    node.operator = entry["operator"].upper()
    node.tracking = entry["tracking"].upper()
    for key in ("iterations", "sigma", "contact_angle", "smoothing_iterations",
                "diffusion_iterations", "bulge", "substep_angle", "relaxation_iterations"):
        setattr(node, key, entry[key])
    node.joint_operators.clear()
    for bone, op in entry["operators"].items():
        row = node.joint_operators.add()
        row.bone, row.operator = bone, op.upper()


@test
def implicit_node_round_trips_through_the_graph_json():
    """Every Implicit property, and the per-joint operators, reach the
    document; the core parses it back to the same fields; a node set from
    the core's document compiles to the same document again."""
    fresh()
    nodes = Ctx.nodes
    tree = nodes.new_graph_tree("Implicit", "IMPLICIT")
    node = tree.nodes["Implicit"]
    check(node.bl_idname == "SpringSkinImplicitNode", node.bl_idname)
    for prop in IMPLICIT_PROPS:
        rna = node.bl_rna.properties[prop]
        check(rna.description.strip(), "Implicit.%s has no description" % prop)
        check(rna.name, "Implicit.%s has no name" % prop)
    row_rna = nodes.SpringSkinImplicitJointOperator.bl_rna.properties
    for prop in ("bone", "operator"):
        check(row_rna[prop].description.strip(), "per-joint %s has no description" % prop)
    check(all(item.description for item in node.bl_rna.properties["operator"].enum_items),
          "an operator without a tooltip")
    Ctx.runtime.calls.clear()
    node.operator = "BULGE"
    check(Ctx.runtime.calls == ["Implicit"], "property change not notified: %s"
          % Ctx.runtime.calls)
    node.iterations, node.sigma, node.contact_angle = 35, 0.5, 40.0
    node.smoothing_iterations, node.diffusion_iterations, node.bulge = 5, 7, 0.25
    node.tracking, node.substep_angle, node.relaxation_iterations = "ELASTIC", 10.0, 4
    assert bpy.ops.springskin.graph_implicit_joint_add(
        tree_name=tree.name, node_name=node.name) == {"FINISHED"}
    node.joint_operators[0].bone, node.joint_operators[0].operator = "Mid", "CONTACT"
    row = node.joint_operators.add()
    row.bone, row.operator = "Tip", "UNION"
    expected = {"id": "Implicit", "type": "implicit", "operator": "bulge",
                "operators": {"Mid": "contact", "Tip": "union"}, "iterations": 35,
                "sigma": 0.5, "contact_angle": 40.0, "smoothing_iterations": 5,
                "diffusion_iterations": 7, "bulge": 0.25, "tracking": "elastic",
                "substep_angle": 10.0, "relaxation_iterations": 4}
    doc = compile_(tree)
    check([n["type"] for n in doc["nodes"]] == ["skinning", "implicit", "normals", "output"],
          "node order %s" % [n["type"] for n in doc["nodes"]])
    check(doc["nodes"][0]["method"] == "dqs", "first stage %r" % doc["nodes"][0])
    same(doc["nodes"][1], expected, "implicit")
    check({"from": "Skinning", "to": "Implicit", "input": "positions"} in doc["edges"],
          "edge skinning -> implicit")
    text = json.dumps(doc, allow_nan=False)
    core = core_accepts(json.loads(text))
    if core is not None:
        same(core["nodes"][1], expected, "core implicit")
        # back into a fresh node: the same document again
        tree2 = nodes.new_graph_tree("Implicit Again", "IMPLICIT")
        _implicit_from_doc(tree2.nodes["Implicit"], core["nodes"][1])
        same(compile_(tree2)["nodes"][1], expected, "round trip")
        core_rejects(dict(doc, nodes=[doc["nodes"][0], dict(expected, operator="squash"),
                                      *doc["nodes"][2:]]), "operator")
    # remove a row with the node's operator
    assert bpy.ops.springskin.graph_implicit_joint_remove(
        tree_name=tree.name, node_name=node.name, index=1) == {"FINISHED"}
    same(compile_(tree)["nodes"][1]["operators"], {"Mid": "contact"}, "after remove")
    # bad rows
    node.joint_operators[0].bone = ""
    raises(lambda: compile_(tree), "Implicit", "has no bone")
    check("a per-joint operator has no bone" in nodes.node_problems(node, Ctx.obj),
          nodes.node_problems(node, Ctx.obj))
    node.joint_operators[0].bone = "Elbow"
    raises(lambda: compile_(tree), "Implicit", "unknown bone 'Elbow'")
    check("unknown bone: Elbow" in nodes.node_problems(node, Ctx.obj),
          nodes.node_problems(node, Ctx.obj))
    node.joint_operators[0].bone = "Mid"
    row = node.joint_operators.add()
    row.bone = "Mid"
    raises(lambda: compile_(tree), "Implicit", "bone 'Mid' is listed twice")
    node.joint_operators.remove(1)
    # a muted Implicit node passes its positions through
    node.mute = True
    doc = compile_(tree)
    check([n["type"] for n in doc["nodes"]] == ["skinning", "normals", "output"],
          "muted implicit: %s" % [n["type"] for n in doc["nodes"]])
    node.mute = False
    # unconnected: reported in the node and by the compiler
    for link_ in list(tree.links):
        if link_.to_node == node:
            tree.links.remove(link_)
    check("Positions input not connected" in nodes.node_problems(node, Ctx.obj),
          nodes.node_problems(node, Ctx.obj))
    raises(lambda: compile_(tree), "Implicit", "Positions input is not connected")


def build_full_tree():
    """IRS (with a joint override) -> Radial -> Spring (two edits, a map) ->
    Normals -> Output, every spring setting off its default."""
    tree = new_tree("Full")
    skin = add(tree, "Skinning", "Skin", method="IRS", parent_influence=0.25,
               child_influence=0.75, length_adjust=True)
    joint = skin.joint_influences.add()
    joint.bone, joint.parent_influence, joint.child_influence = "Mid", 0.3, 0.7
    radial = add(tree, "Radial", "Bulge", bones=" Mid ,Tip,", profile="CUBIC_OUT", amount=0.5)
    spring = add(tree, "Spring", "Relax", stiffness_surface=4.0, stiffness_length=10.0,
                 stiffness_torsion=12.0, stiffness_bone=0.5, stiffness_edit=3.0,
                 map_surface="Soft", dt=0.02, integrator="SEMI_IMPLICIT", damping=0.25,
                 max_iterations=80, convergence="FORCE", threshold=0.001,
                 mode="FRAME_DEPENDENT")
    belly = add(tree, "SurfaceEdit", "Belly Edit", vertex_group="Belly", push=0.02, grow=2,
                stiffness=0.4)
    soft = add(tree, "SurfaceEdit", "Soft Edit", vertex_group="Soft", push=-0.01, grow=0,
               stiffness=1.5, weight=0.5)
    normals = add(tree, "Normals", "N")
    out = add(tree, "Output", "Out")
    link(tree, skin, radial)
    link(tree, radial, spring)
    link(tree, belly, spring, 0, 1)
    link(tree, soft, spring, 0, 2)          # the free Edit input added by the first link
    link(tree, spring, out)
    link(tree, spring, normals)
    link(tree, normals, out, 0, 1)
    return tree


@test
def full_graph_compiles_to_every_field():
    fresh()
    tree = build_full_tree()
    doc = compile_(tree)
    soft_rows = [r for r in range(RINGS * SEGMENTS) if soft_weight(r) > 0.0]
    expected = {"version": 1, "nodes": [
        {"id": "Skin", "type": "skinning", "method": "irs", "attachment": "weights",
         "parent_influence": 0.25, "child_influence": 0.75, "length_adjust": True,
         "joint_influences": {"Mid": [0.3, 0.7]}},
        {"id": "Bulge", "type": "radial", "bones": ["Mid", "Tip"], "profile": "cubic_out",
         "amount": 0.5},
        {"id": "Relax", "type": "spring",
         "stiffness": {"surface": 4.0, "length": 10.0, "torsion": 12.0, "bone": 0.5, "edit": 3.0,
                       "detail": 200.0, "twist": 0.0},
         "stiffness_maps": {"surface": [soft_weight(r) for r in range(RINGS * SEGMENTS)]},
         "dt": 0.02, "integrator": "semi_implicit", "damping": 0.25, "max_iterations": 80,
         "convergence": "force", "threshold": 0.001, "mode": "frame_dependent",
         "solver": "jacobi", "chebyshev_rho": 0.0, "attachment": "weights",
         "edits": [
             {"kinematic": BELLY_ROWS, "push": 0.02, "grow": 2, "stiffness": 0.4},
             {"kinematic": soft_rows, "push": -0.01, "grow": 0, "stiffness": 1.5,
              "keys": [[SCENE_FRAMES[0], 0.5]]}]},
        {"id": "N", "type": "normals"},
        {"id": "Out", "type": "output"}],
        "edges": [{"from": "Skin", "to": "Bulge", "input": "positions"},
                  {"from": "Bulge", "to": "Relax", "input": "positions"},
                  {"from": "Relax", "to": "N", "input": "positions"},
                  {"from": "Relax", "to": "Out", "input": "positions"},
                  {"from": "N", "to": "Out", "input": "normals"}]}
    same(doc, expected)
    check(len(soft_rows) == 5 * SEGMENTS, "test setup: Soft has rings 8-12")
    json.dumps(doc, allow_nan=False)   # plain JSON
    core = core_accepts(doc)
    if core is not None:
        relax = core["nodes"][2]
        check(relax["edits"][0]["kinematic"] == BELLY_ROWS, "core kinematic rows")
        check(relax["integrator"] == "semi_implicit" and relax["mode"] == "frame_dependent",
              "core spring names")
        same(relax["stiffness_maps"]["surface"], [soft_weight(r) for r in range(RINGS * SEGMENTS)],
             "core map")
        check(core["nodes"][0]["joint_influences"] == {"Mid": [0.3, 0.7]} or
              same(core["nodes"][0]["joint_influences"], {"Mid": [0.3, 0.7]}) is None,
              "core joint influences")


def key_amount(node, prop, frames_values, interpolation):
    for frame, value in frames_values:
        setattr(node, prop, value)
        node.keyframe_insert(prop, frame=frame)
    fc = node.id_data.animation_data.action.fcurves.find(node.path_from_id(prop))
    for point in fc.keyframe_points:
        point.interpolation = interpolation


@test
def solver_menu_compiles():
    """The Solver menu (Auto by default: the multigrid on the CPU, Multigrid,
    Multilevel, Chebyshev, Jacobi) and the Acceleration property reach the
    document and the core keeps them; Semi-Implicit and Energy compile to
    Jacobi; Multigrid takes no Acceleration."""
    fresh()
    tree = Ctx.nodes.new_graph_tree("Accelerated", "SPRING")
    tree.nodes["Spring"].chebyshev_rho = 0.95
    doc = compile_(tree)
    spring = doc["nodes"][1]
    check(spring["solver"] == "auto", "compiled solver %r" % spring["solver"])
    check(abs(spring["chebyshev_rho"] - 0.95) < 1e-6, "compiled rho %r" % spring["chebyshev_rho"])
    core = core_accepts(doc)
    if core is not None:
        check(core["nodes"][1]["solver"] == "auto", "core solver")
        check(abs(core["nodes"][1]["chebyshev_rho"] - 0.95) < 1e-6, "core rho")
        spring["chebyshev_rho"] = 1.0
        core_rejects(doc, "chebyshev_rho")
    tree.nodes["Spring"].solver = "MULTIGRID"
    spring = compile_(tree)["nodes"][1]
    check(spring["solver"] == "multigrid" and spring["chebyshev_rho"] == 0.0,
          "multigrid %r" % spring)
    core = core_accepts(compile_(tree))
    if core is not None:
        check(core["nodes"][1]["solver"] == "multigrid", "core keeps multigrid")
    tree.nodes["Spring"].solver = "MULTILEVEL"
    spring = compile_(tree)["nodes"][1]
    check(spring["solver"] == "multilevel" and abs(spring["chebyshev_rho"] - 0.95) < 1e-6,
          "multilevel %r" % spring)
    tree.nodes["Spring"].solver = "CHEBYSHEV"
    spring = compile_(tree)["nodes"][1]
    check(spring["solver"] == "chebyshev" and abs(spring["chebyshev_rho"] - 0.95) < 1e-6,
          "chebyshev %r" % spring)
    core = core_accepts(compile_(tree))
    if core is not None:
        check(core["nodes"][1]["solver"] == "chebyshev", "core keeps chebyshev")
    tree.nodes["Spring"].solver = "JACOBI"
    spring = compile_(tree)["nodes"][1]
    check(spring["solver"] == "jacobi" and spring["chebyshev_rho"] == 0.0, "jacobi %r" % spring)
    for solver in ("AUTO", "MULTIGRID", "MULTILEVEL", "CHEBYSHEV"):
        tree.nodes["Spring"].solver = solver
        tree.nodes["Spring"].integrator = "SEMI_IMPLICIT"
        spring = compile_(tree)["nodes"][1]
        check(spring["solver"] == "jacobi" and spring["chebyshev_rho"] == 0.0,
              "semi-implicit compiles to jacobi %r" % spring)
        tree.nodes["Spring"].integrator = "EXPLICIT"


@test
def animated_amount_becomes_keys():
    fresh()
    tree = Ctx.nodes.new_graph_tree("Anim", "IRS")
    radial = add(tree, "Radial", "Breath", bones="Mid", amount=0.75)
    link(tree, tree.nodes["Skinning"], radial)
    link(tree, radial, tree.nodes["Output"])
    link(tree, radial, tree.nodes["Normals"])
    doc = compile_(tree)
    entry = doc["nodes"][1]
    same(entry, {"id": "Breath", "type": "radial", "bones": ["Mid"], "profile": "bulge",
                 "amount": 0.75}, "constant radial")
    key_amount(radial, "amount", [(1, 0.0), (11, 2.0)], "LINEAR")
    entry = compile_(tree)["nodes"][1]
    same(entry["keys"], [[1, 0.0], [11, 2.0], [20, 2.0]], "linear keys")
    key_amount(radial, "amount", [(1, 0.0), (11, 2.0)], "CONSTANT")
    same(compile_(tree)["nodes"][1]["keys"], [[1, 0.0], [10, 0.0], [11, 2.0], [20, 2.0]],
         "constant-interpolation keys")
    radial.name = "Renamed"                     # the F-curve follows the node
    doc = compile_(tree)
    check(doc["nodes"][1]["id"] == "Renamed" and "keys" in doc["nodes"][1], "keys after rename")
    core = core_accepts(doc)
    if core is not None:
        same(core["nodes"][1]["keys"], [[1.0, 0.0], [10.0, 0.0], [11.0, 2.0], [20.0, 2.0]],
             "core keys")


@test
def animated_edit_weight_becomes_keys():
    fresh()
    tree = Ctx.nodes.new_graph_tree("EditAnim", "SPRING")
    edit = add(tree, "SurfaceEdit", "Breathe", vertex_group="Belly", push=0.03)
    link(tree, edit, tree.nodes["Spring"], 0, 1)
    doc = compile_(tree)
    same(doc["nodes"][1]["edits"], [{"kinematic": BELLY_ROWS, "push": 0.03, "grow": 4,
                                     "stiffness": 1.0}], "unanimated edit: no keys")
    key_amount(edit, "weight", [(1, 0.0), (5, 1.0), (9, 0.0)], "LINEAR")
    doc = compile_(tree)
    same(doc["nodes"][1]["edits"][0]["keys"], [[1, 0.0], [5, 1.0], [9, 0.0], [20, 0.0]],
         "edit weight keys")
    core_accepts(doc)


@test
def graph_errors_name_the_node():
    fresh()
    # no output
    tree = new_tree("NoOut")
    add(tree, "Skinning", "Skin")
    raises(lambda: compile_(tree), None, "no Output node")
    # two outputs
    tree = Ctx.nodes.new_graph_tree("TwoOut", "LBS")
    second = add(tree, "Output", "Out2")
    link(tree, tree.nodes["Skinning"], second)
    raises(lambda: compile_(tree), "Out2", "second Output", "'Output'")
    # cycle: A -> B -> A, B -> Output (a skinning node standing by)
    tree = new_tree("Cycle")
    add(tree, "Skinning", "Skin")
    a, b = add(tree, "Radial", "A", bones="Mid"), add(tree, "Radial", "B", bones="Tip")
    out = add(tree, "Output", "Out")
    link(tree, b, a)
    link(tree, a, b)
    link(tree, b, out)
    try:
        compile_(tree)
    except Ctx.nodes.GraphError as exc:
        check(exc.node in ("A", "B") and ("cycle: 'A' -> 'B' -> 'A'" in str(exc) or
                                          "cycle: 'B' -> 'A' -> 'B'" in str(exc)), str(exc))
    else:
        raise AssertionError("cycle accepted")
    # unconnected required input (the label names the node)
    tree = Ctx.nodes.new_graph_tree("Unconnected", "LBS")
    radial = add(tree, "Radial", "R", bones="Mid")
    radial.label = "My Bulge"
    link(tree, radial, tree.nodes["Output"])          # replaces Skinning -> Output
    link(tree, tree.nodes["Skinning"], tree.nodes["Normals"])
    try:
        compile_(tree)
    except Ctx.nodes.GraphError as exc:
        check(exc.node == "R" and "'My Bulge'" in str(exc) and "not connected" in str(exc),
              str(exc))
    else:
        raise AssertionError("unconnected input accepted")
    # incompatible links: Normals -> Positions, Edit -> Positions, Positions -> Edit
    tree = Ctx.nodes.new_graph_tree("Kinds", "LBS")
    radial = add(tree, "Radial", "R", bones="Mid")
    link(tree, tree.nodes["Normals"], radial)
    link(tree, radial, tree.nodes["Output"])
    raises(lambda: compile_(tree), "R", "Positions input", "Normals output", "'Normals'")
    tree = Ctx.nodes.new_graph_tree("Kinds2", "LBS")
    edit = add(tree, "SurfaceEdit", "E", vertex_group="Belly")
    link(tree, edit, tree.nodes["Output"])
    raises(lambda: compile_(tree), "Output", "Positions input", "Edit output")
    tree = Ctx.nodes.new_graph_tree("Kinds3", "SPRING")
    link(tree, tree.nodes["Skinning"], tree.nodes["Spring"], 0, 1)
    raises(lambda: compile_(tree), "Spring", "Edit input", "Positions output")
    tree = Ctx.nodes.new_graph_tree("Kinds4", "LBS")
    link(tree, tree.nodes["Skinning"], tree.nodes["Output"], 0, 1)
    raises(lambda: compile_(tree), "Output", "Normals input", "Positions output")


@test
def graph_errors_of_node_settings():
    fresh()

    def edit_tree(group):
        tree = Ctx.nodes.new_graph_tree("Edit " + group, "SPRING")
        edit = add(tree, "SurfaceEdit", "E", vertex_group=group)
        link(tree, edit, tree.nodes["Spring"], 0, 1)
        return tree

    raises(lambda: compile_(edit_tree("")), "E", "no vertex group")
    raises(lambda: compile_(edit_tree("Nope")), "E", "no vertex group 'Nope'", "'Body'")
    raises(lambda: compile_(edit_tree("Empty")), "E", "'Empty' is empty")
    raises(lambda: compile_(edit_tree("Zero")), "E", "'Zero' is empty")   # weights 0 only
    check(compile_(edit_tree("Belly"))["nodes"][1]["edits"][0]["kinematic"] == BELLY_ROWS,
          "the Belly edit compiles")

    def radial_tree(bones):
        tree = Ctx.nodes.new_graph_tree("Radial " + bones, "LBS")
        radial = add(tree, "Radial", "R", bones=bones)
        link(tree, tree.nodes["Skinning"], radial)
        link(tree, radial, tree.nodes["Output"])
        link(tree, radial, tree.nodes["Normals"])
        return tree

    raises(lambda: compile_(radial_tree("Mid, Spine9")), "R", "unknown bone 'Spine9'", "'Rig'")
    raises(lambda: compile_(radial_tree("Mid,Mid")), "R", "'Mid' is listed twice")
    raises(lambda: compile_(radial_tree(" , ")), "R", "no bones")
    doc = compile_(radial_tree("Tip, Root"))
    check(doc["nodes"][1]["bones"] == ["Tip", "Root"], "radial bones")
    bad = json.loads(json.dumps(doc))
    bad["nodes"][1]["bones"] = ["Spine9"]
    core_rejects(bad, "unknown bone 'Spine9'")   # the core agrees on what is unknown

    tree = Ctx.nodes.new_graph_tree("Map", "SPRING")
    tree.nodes["Spring"].map_torsion = "Nope"
    raises(lambda: compile_(tree), "Spring", "torsion stiffness map", "'Nope'")

    tree = Ctx.nodes.new_graph_tree("Joint", "IRS")
    joint = tree.nodes["Skinning"].joint_influences.add()
    joint.bone = "Elbow"
    raises(lambda: compile_(tree), "Skinning", "unknown bone 'Elbow'")

    # a node whose result is unused; a Surface Edit feeding nothing
    tree = Ctx.nodes.new_graph_tree("Unused", "LBS")
    radial = add(tree, "Radial", "Stray", bones="Mid")
    link(tree, tree.nodes["Skinning"], radial)
    raises(lambda: compile_(tree), "Stray", "does not reach the Output")
    tree = Ctx.nodes.new_graph_tree("Unused edit", "SPRING")
    add(tree, "SurfaceEdit", "Loose", vertex_group="Belly")
    raises(lambda: compile_(tree), "Loose", "does not feed a Spring node")

    # a muted skinning node cannot be bypassed; not a mesh object
    tree = Ctx.nodes.new_graph_tree("Muted skin", "LBS")
    tree.nodes["Skinning"].mute = True
    raises(lambda: compile_(tree), "Skinning", "muted")
    tree = Ctx.nodes.new_graph_tree("Arm", "LBS")
    try:
        Ctx.nodes.compile_tree(tree, Ctx.arm)
    except Ctx.nodes.GraphError as exc:
        check("mesh object" in str(exc), str(exc))
    else:
        raise AssertionError("an armature object accepted")


@test
def muting_and_reroutes():
    fresh()
    tree = Ctx.nodes.new_graph_tree("Mute", "SPRING")
    spring = tree.nodes["Spring"]
    edit = add(tree, "SurfaceEdit", "E", vertex_group="Belly")
    link(tree, edit, spring, 0, 1)
    radial = add(tree, "Radial", "R", bones="Mid")
    link(tree, tree.nodes["Skinning"], radial)
    link(tree, radial, spring)
    check(len(compile_(tree)["nodes"]) == 5, "radial in the chain")
    radial.mute = True
    edit.mute = True
    tree.nodes["Normals"].mute = True
    doc = compile_(tree)
    check([n["id"] for n in doc["nodes"]] == ["Skinning", "Spring", "Output"],
          "muted nodes left out: %s" % [n["id"] for n in doc["nodes"]])
    check(doc["edges"] == [{"from": "Skinning", "to": "Spring", "input": "positions"},
                           {"from": "Spring", "to": "Output", "input": "positions"}],
          "bypass edges: %s" % doc["edges"])
    check(doc["nodes"][1]["edits"] == [], "muted edit left out")
    spring.mute = True                        # its (unmuted) edit goes with it
    edit.mute = False
    doc = compile_(tree)
    check([e["from"] for e in doc["edges"]] == ["Skinning"], "spring bypassed: %s" % doc["edges"])
    core_accepts(doc)
    # reroute between Skinning and Output
    tree = new_tree("Reroute")
    skin, out = add(tree, "Skinning", "Skin"), add(tree, "Output", "Out")
    reroute = tree.nodes.new("NodeReroute")
    tree.links.new(skin.outputs[0], reroute.inputs[0])
    tree.links.new(reroute.outputs[0], out.inputs[0])
    tree.nodes.new("NodeFrame")
    same(compile_(tree)["edges"], [{"from": "Skin", "to": "Out", "input": "positions"}],
         "through reroute")
    tree.links.remove(skin.outputs[0].links[0])
    raises(lambda: compile_(tree), "Out", "not connected")


@test
def edit_inputs_grow_and_shrink():
    fresh()
    tree = Ctx.nodes.new_graph_tree("Edits", "SPRING")
    spring = tree.nodes["Spring"]

    def edit_sockets():
        return [(s.bl_idname == "SpringSkinEditSocket", s.is_linked) for s in spring.inputs[1:]]

    check(edit_sockets() == [(True, False)], "one free Edit input: %s" % edit_sockets())
    a = add(tree, "SurfaceEdit", "A", vertex_group="Belly")
    b = add(tree, "SurfaceEdit", "B", vertex_group="Soft")
    link(tree, a, spring, 0, 1)
    check(edit_sockets() == [(True, True), (True, False)], "grown: %s" % edit_sockets())
    link(tree, b, spring, 0, 2)
    check(edit_sockets() == [(True, True), (True, True), (True, False)], str(edit_sockets()))
    doc = compile_(tree)
    check([e["kinematic"][0] for e in doc["nodes"][1]["edits"]] == [BELLY_ROWS[0], 64],
          "edits in socket order")
    tree.links.remove(spring.inputs[1].links[0])
    check(edit_sockets() == [(True, True), (True, False)], "shrunk: %s" % edit_sockets())
    check(spring.inputs[1].links[0].from_node.name == "B", "B kept")
    raises(lambda: compile_(tree), "A", "does not feed a Spring node")   # A is loose now
    tree.nodes.remove(a)
    doc = compile_(tree)
    check([e["kinematic"][0] for e in doc["nodes"][1]["edits"]] == [64], "B alone")
    core_accepts(doc)


@test
def invalid_links_marked_and_reported():
    fresh()
    tree = Ctx.nodes.new_graph_tree("Red", "LBS")
    radial = add(tree, "Radial", "R", bones="Mid")
    bad = link(tree, tree.nodes["Normals"], radial)
    reroute = tree.nodes.new("NodeReroute")
    tree.links.new(tree.nodes["Normals"].outputs[0], reroute.inputs[0])
    bad2 = tree.links.new(reroute.outputs[0], tree.nodes["Output"].inputs[0])
    marked = Ctx.nodes.validate_links(tree)
    check({(l.from_node.name, l.to_node.name) for l in marked} ==
          {("Normals", "R"), (reroute.name, "Output")}, "marked: %s" %
          [(l.from_node.name, l.to_node.name) for l in marked])
    check(not bad.is_valid and not bad2.is_valid, "bad links drawn red")
    good = [l for l in tree.links if l not in marked]
    check(good and all(l.is_valid for l in good), "good links stay valid")
    # the deferred pass (timer) after a tree update marks them again
    tree.links.new(tree.nodes["Skinning"].outputs[0], tree.nodes["Normals"].inputs[0])
    Ctx.nodes._validate_later(tree.name)
    check(not radial.inputs[0].links[0].is_valid, "re-marked after update")
    problems = Ctx.nodes.node_problems(radial, Ctx.obj)
    check(any("cannot feed Positions" in p for p in problems), "node warning: %s" % problems)
    check(Ctx.nodes.node_problems(tree.nodes["Skinning"], Ctx.obj) == [], "no warning on skin")
    edit = add(tree, "SurfaceEdit", "E", vertex_group="Nope")
    problems = Ctx.nodes.node_problems(edit, Ctx.obj)
    check("no vertex group 'Nope'" in problems and "not connected to a Spring node" in problems,
          str(problems))
    radial2 = add(tree, "Radial", "R2", bones="Spine9")
    check(any("Spine9" in p for p in Ctx.nodes.node_problems(radial2, Ctx.obj)),
          "unknown bone warning")
    check(any("not connected" in p for p in Ctx.nodes.node_problems(radial2, Ctx.obj)),
          "unconnected warning")


@test
def changes_notify_the_runtime():
    fresh()
    tree = Ctx.nodes.new_graph_tree("Notify", "SPRING")
    check(Ctx.runtime.calls == ["Notify"], "one call for a new tree: %s" % Ctx.runtime.calls)
    Ctx.runtime.calls.clear()
    tree.nodes["Spring"].stiffness_surface = 3.0
    check(Ctx.runtime.calls == ["Notify"], "property change: %s" % Ctx.runtime.calls)
    Ctx.runtime.calls.clear()
    tree.nodes["Skinning"].method = "DQS"
    check(Ctx.runtime.calls == ["Notify"], "method change: %s" % Ctx.runtime.calls)
    Ctx.runtime.calls.clear()
    tree.links.remove(tree.nodes["Normals"].outputs[0].links[0])
    check("Notify" in Ctx.runtime.calls, "link change: %s" % Ctx.runtime.calls)


class FakeLayout:
    """Stands in for bpy.types.UILayout (no UI in background mode): checks
    that every drawn property exists and records the labels."""

    def __init__(self, labels):
        self.labels = labels

    def _sub(self, *_args, **_kwargs):
        return FakeLayout(self.labels)

    column = row = box = split = _sub

    def label(self, text="", icon="NONE"):
        self.labels.append((text, icon))

    def prop(self, data, name, **_kwargs):
        check(name in data.bl_rna.properties, "drawn property %r missing on %r" % (name, data))

    def prop_search(self, data, name, search_data, search_name, **_kwargs):
        self.prop(data, name)
        check(search_name in search_data.bl_rna.properties, "search collection " + search_name)

    def operator(self, idname, **_kwargs):
        module, name = idname.split(".")
        check(hasattr(getattr(bpy.ops, module), name), "operator %s not registered" % idname)
        return types.SimpleNamespace()

    def separator(self):
        pass


@test
def nodes_draw_their_settings_and_warnings():
    fresh()
    tree = build_full_tree()
    tree.nodes["Skin"].method = "IRS"
    for obj in (Ctx.obj, None):
        context = types.SimpleNamespace(object=obj)
        for node in tree.nodes:
            for draw in (node.draw_buttons, node.draw_buttons_ext):
                labels = []
                draw(context, FakeLayout(labels))
                check(not [t for t, icon in labels if icon == "ERROR"],
                      "%s warns: %s" % (node.name, labels))
    tree.nodes["Belly Edit"].vertex_group = "Nope"
    labels = []
    tree.nodes["Belly Edit"].draw_buttons(types.SimpleNamespace(object=Ctx.obj), FakeLayout(labels))
    check(("no vertex group 'Nope'", "ERROR") in labels, "warning drawn: %s" % labels)
    # the bone picker appends to the list
    radial = tree.nodes["Bulge"]
    radial.bones = "Mid"
    radial.bone_pick = "Root"
    radial.bone_pick = "Mid"                  # already there: unchanged
    check(radial.bones == "Mid, Root" and radial.bone_pick == "", radial.bones)
    # the joint override operators
    skin = tree.nodes["Skin"]
    check(bpy.ops.springskin.graph_joint_add(tree_name=tree.name, node_name="Skin") ==
          {"FINISHED"} and len(skin.joint_influences) == 2, "joint added")
    check(bpy.ops.springskin.graph_joint_remove(tree_name=tree.name, node_name="Skin", index=0)
          == {"FINISHED"} and [j.bone for j in skin.joint_influences] == [""], "joint removed")
    # the Implicit node with a per-joint operator (drawn with its bone picker)
    implicit = Ctx.nodes.new_graph_tree("Drawn", "IMPLICIT").nodes["Implicit"]
    implicit.joint_operators.add().bone = "Mid"
    for obj in (Ctx.obj, None):
        for draw in (implicit.draw_buttons, implicit.draw_buttons_ext):
            labels = []
            draw(types.SimpleNamespace(object=obj), FakeLayout(labels))
            check(not [t for t, icon in labels if icon == "ERROR"], "Implicit warns: %s" % labels)
    implicit.joint_operators[0].bone = "Nope"
    labels = []
    implicit.draw_buttons_ext(types.SimpleNamespace(object=Ctx.obj), FakeLayout(labels))
    check(("unknown bone: Nope", "ERROR") in labels, "warning drawn: %s" % labels)


@test
def keyframe_edits_notify_the_runtime():
    fresh()
    tree = Ctx.nodes.new_graph_tree("Keys", "IRS")
    radial = add(tree, "Radial", "R", bones="Mid")
    link(tree, tree.nodes["Skinning"], radial)
    link(tree, radial, tree.nodes["Output"])
    key_amount(radial, "amount", [(1, 0.0), (11, 2.0)], "LINEAR")
    # the tree in the depsgraph, as when an object's property points at it
    bpy.types.Object.ssk_test_graph = bpy.props.PointerProperty(type=bpy.types.NodeTree)
    try:
        Ctx.obj.ssk_test_graph = tree
        bpy.context.view_layer.update()
        Ctx.runtime.calls.clear()
        action = tree.animation_data.action
        action.fcurves[0].keyframe_points[1].co.y = 3.0
        action.update_tag()
        bpy.context.view_layer.update()
        check("Keys" in Ctx.runtime.calls, "keyframe edit: %s" % Ctx.runtime.calls)
        radial_doc = [n for n in compile_(tree)["nodes"] if n["id"] == "R"][0]
        same(radial_doc["keys"], [[1, 0.0], [11, 3.0], [20, 3.0]], "new keys")
    finally:
        Ctx.obj.ssk_test_graph = None
        del bpy.types.Object.ssk_test_graph


# --- save / load without the addon -------------------------------------------------------

def child_main(mode, blend, result_path, save_path=None):
    """In a fresh Blender: 'bare' opens `blend` without the addon (and
    re-saves it to save_path); 'addon' registers nodes.py after opening and
    compiles the tree."""
    result = {}
    bpy.ops.wm.open_mainfile(filepath=blend)
    tree = bpy.data.node_groups.get("Saved")
    result["tree_idname"] = tree.bl_idname if tree else None
    if mode == "bare":
        result["nodes"] = sorted(n.bl_idname for n in tree.nodes)
        radial = tree.nodes.get("Bulge")
        result["bones_idprop"] = radial.get("bones") if radial is not None else None
        result["links"] = len(tree.links)
        if save_path:
            bpy.ops.wm.save_as_mainfile(filepath=save_path)
    else:
        nodes, _ = load_nodes()
        nodes.register()
        tree = bpy.data.node_groups.get("Saved")
        result["tree_idname"] = tree.bl_idname
        result["nodes"] = sorted(n.bl_idname for n in tree.nodes)
        result["doc"] = nodes.compile_tree(tree, bpy.data.objects["Body"], bpy.context.scene)
    with open(result_path, "w") as f:
        json.dump(result, f)


def run_child(args, tmp):
    cmd = [bpy.app.binary_path, "-b", "--factory-startup", "--python", os.path.abspath(__file__),
           "--", REPO, BUILD] + args
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("child blender failed (%d): %s %s" % (proc.returncode,
                                                                  proc.stdout[-2000:],
                                                                  proc.stderr[-2000:]))
    return proc


@test
def saved_file_loads_without_the_addon():
    fresh()
    tree = build_full_tree()
    tree.name = "Saved"
    tree.use_fake_user = True
    key_amount(tree.nodes["Bulge"], "amount", [(1, 0.0), (11, 2.0)], "LINEAR")
    expected = compile_(tree)
    with tempfile.TemporaryDirectory() as tmp:
        blend = os.path.join(tmp, "graph.blend")
        resaved = os.path.join(tmp, "resaved.blend")
        bpy.ops.wm.save_as_mainfile(filepath=blend, copy=True)
        bare = os.path.join(tmp, "bare.json")
        proc = run_child(["--child", "bare", blend, bare, resaved], tmp)
        with open(bare) as f:
            got = json.load(f)
        check(got["tree_idname"] == "NodeTreeUndefined", "without the addon: %s" % got)
        check(got["nodes"] == ["NodeUndefined"] * 7, "undefined nodes: %s" % got["nodes"])
        check(got["bones_idprop"] == " Mid ,Tip,", "property kept as ID property: %s" % got)
        check(got["links"] == len(tree.links), "links kept")
        check("Traceback" not in proc.stderr + proc.stdout, "errors loading: " + proc.stderr)
        for path in (blend, resaved):          # also after a save without the addon
            out = os.path.join(tmp, "addon.json")
            run_child(["--child", "addon", path, out], tmp)
            with open(out) as f:
                got = json.load(f)
            check(got["tree_idname"] == "SpringSkinGraphTree", "type restored: %s" % got)
            check(sorted(got["nodes"]) == sorted(n.bl_idname for n in tree.nodes),
                  "node types restored: %s" % got["nodes"])
            same(got["doc"], expected, os.path.basename(path))


# --- main ----------------------------------------------------------------------------------

def main():
    if "--child" in EXTRA:
        i = EXTRA.index("--child")
        mode, blend, result = EXTRA[i + 1:i + 4]
        save = EXTRA[i + 4] if len(EXTRA) > i + 4 else None
        child_main(mode, blend, result, save)
        return 0
    if not os.path.isfile(os.path.join(ADDON_DIR, "nodes.py")):
        print("no %s/nodes.py" % ADDON_DIR)
        return SKIP
    Ctx.obj, Ctx.arm = make_character()
    Ctx.nodes, Ctx.runtime = load_nodes()
    Ctx.nodes.register()
    Ctx.springskin, why = load_springskin()
    if Ctx.springskin is None:
        print("SKIP core cross-checks: %s" % why)
    else:
        Ctx.rig = make_rig(Ctx.springskin, Ctx.obj, Ctx.arm)
    passed = failed = 0
    for fn in TESTS:
        try:
            fn()
        except Exception:
            failed += 1
            print("FAIL %s\n%s" % (fn.__name__, traceback.format_exc()))
        else:
            passed += 1
            print("ok   %s" % fn.__name__)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    os._exit(code)
