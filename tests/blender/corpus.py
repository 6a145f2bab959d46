"""A corpus of skinned, animated rigs written by Blender's own exporters.

    blender -b --factory-startup --python tests/blender/corpus.py -- OUTDIR

builds every rig below in Blender, exports each one with Blender's FBX
exporter (four settings) and glTF exporter, writes the files into OUTDIR
and prints their list. Importable from other Blender test scripts
(tests/blender/test_conformance.py): :func:`write_corpus` returns the
files, :data:`RIGS` and :data:`EXPORTS` name the cases.

Rigs (each built in an empty scene, animated on FRAMES = 1..10: poses
keyed at frames 1 (rest), 4, 7 and 10 with Blender's Bezier in-betweens;
the uneven thirds keep the FBX exporter's curve simplification from
dropping in-between keys):

- ``rigify_body``: Rigify's human metarig (159 bones, face included) with
  a metaball body around its limb and spine bones (2738 vertices,
  ``blender_testlib.rigify_body``), automatic weights (bone heat); poses:
  a knee bent 120 degrees, an elbow bent 100 degrees, the spine twisted
  90 degrees about its own axis (and -90 at another vertebra), a raised
  arm, the root bone (``spine``) translated;
- ``scaled_limb``: a 3-bone chain in an armature object with a uniform
  scale of 2.5, a rotation and a translation; a capped tube (16 x 25
  rings, 402 vertices) around it, automatic weights, parented to the
  armature; the bones bend 60 and 90 degrees and the tip twists 90;
- ``seams_sharp``: a capped tube (158 vertices) on 2 bones with UV seams
  (one lengthwise line and the cap borders; unwrapped, so exporters split
  vertices there), flat-shaded caps and a ring of edges marked sharp
  (auto smooth on), weights painted here (a smoothstep across the
  joint); the joint bends 80 degrees and twists 70 and -90, the root
  bone moves;
- ``two_meshes``: one capped tube on 3 bones weighted by bone heat, then
  split into two mesh objects ``Lower`` (241 vertices) and ``Upper``
  (177) at the ring at z = 0.7 (weights assigned before the split, so the
  16 border vertices, of which both objects keep a copy, have identical
  weights), both deformed by Armature modifiers on the same armature.

Exports (:data:`EXPORTS`, files ``<rig>_<export>.fbx`` / ``<rig>_gltf.glb``):

- ``fbx_default``: ``bpy.ops.export_scene.fbx(filepath=...)``, nothing
  else (bake_anim on, all actions, apply_unit_scale on, FBX_SCALE_NONE,
  axis -Z forward / Y up, leaf bones added);
- ``fbx_no_unit``: ``apply_unit_scale=False`` (the default flipped);
- ``fbx_scale_all``: ``apply_scale_options='FBX_SCALE_ALL'``;
- ``fbx_bake_space``: ``bake_space_transform=True`` ("Apply Transform",
  experimental in Blender);
- ``gltf``: ``bpy.ops.export_scene.gltf(filepath=..., export_format='GLB')``
  (Y up, skins and animations on, every frame sampled).

What the files hold, as Assimp 5.2.5 sees them (node tree and transforms
from ``assimp export FILE x.assxml``, Blender 3.4.1):

- ``fbx_default``: GlobalSettings say Y up, UnitScaleFactor 1 (cm); the
  metre-to-centimetre factor 100 and the Z-up to Y-up rotation are put
  into the transforms of the root nodes: the armature node is
  ``Rx(-90) S(100) W`` (W: the armature object's Blender world matrix;
  for ``scaled_limb`` the node's scale is 250) and every skinned mesh node
  is a child of the scene root, not of the armature node (the exporter
  moves meshes parented to an armature up), holding ``Rx(-90) S(100)``
  times its Blender world matrix (Lcl Rotation (-90, 0, 0), Lcl Scaling
  100 for the identity). Bones (children of the armature node) keep their
  local transforms in metres (the first bone of a chain along +Z has
  Rx(+90): Blender's bone Y axis), each chain ends in an "_end" leaf
  node; vertices are in mesh object space (metres, Blender's axes); the
  armature node is animated (constant keys) besides the bones. Assimp
  adds no $AssimpFbx$ pivot nodes for these files. Skinning matrices in
  the scene root's space therefore carry the 100x scale and the -90
  degree X rotation in the mesh->root part, and a scaled armature object
  adds its own scale: dual quaternions must be blended in the armature
  node's space, as Blender does.
- ``fbx_no_unit``: byte-identical to ``fbx_default`` but for the creation
  time stamp: for a scene in metres (unit scale 1) Blender's exporter
  uses the factor 100 whether apply_unit_scale is on or off (the option
  only matters for other scene unit scales).
- ``fbx_scale_all``: UnitScaleFactor 100 in GlobalSettings; root nodes
  carry the rotation only (``Rx(-90) W``, scale 1, translations in
  metres); Assimp does not apply the unit factor (its FBX unit conversion
  is off by default), so springskin works in metres.
- ``fbx_bake_space``: the mesh nodes are the identity, the axis
  conversion and the 100x scale being baked into their vertices, but
  the armature node is still
  ``Rx(-90) S(100) W`` (Blender does not bake the space transform into
  armatures).
- ``gltf``: the armature node holds W converted to Y up (no unit scale),
  with the mesh nodes as its children with the identity transform; the
  skinned vertices are stored in world coordinates (Y up) and the
  inverse bind matrices map world to bone space (glTF ignores a skinned
  mesh node's own transform).

The corpus is deterministic (no random numbers), small (the whole corpus,
20 files, takes some seconds to write) and uses only Blender's bundled
add-ons (Rigify, io_scene_fbx, io_scene_gltf2).
"""

import math
import os
import sys

import bpy
import numpy as np
from mathutils import Euler, Matrix, Vector

np.bool = bool  # Blender 3.4's glTF add-on uses the alias numpy 1.24 removed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blender_testlib as T  # noqa: E402

#: First and last frame of every rig's animation (Blender frames).
FRAMES = (1, 10)

#: Metaball resolution of the Rigify body (about 2.9k vertices).
BODY_RESOLUTION = 0.035

#: export name -> (file extension, operator keyword arguments besides filepath)
EXPORTS = {
    "fbx_default": ("fbx", {}),
    "fbx_no_unit": ("fbx", {"apply_unit_scale": False}),
    "fbx_scale_all": ("fbx", {"apply_scale_options": "FBX_SCALE_ALL"}),
    "fbx_bake_space": ("fbx", {"bake_space_transform": True}),
    "gltf": ("glb", {"export_format": "GLB"}),
}


# --- helpers ----------------------------------------------------------------------

def _key_pose(arm, frame, pose, root=None, root_location=(0.0, 0.0, 0.0)):
    """Keys every pose bone's Euler rotation (pose: bone -> radians, the
    others at rest) and the root bone's location at `frame`."""
    for pb in arm.pose.bones:
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = Euler(pose.get(pb.name, (0.0, 0.0, 0.0)))
        pb.keyframe_insert("rotation_euler", frame=frame)
    if root is not None:
        pb = arm.pose.bones[root]
        pb.location = root_location
        pb.keyframe_insert("location", frame=frame)


def _chain_armature(name, length, count, matrix=Matrix()):
    """An armature object `name` with a connected chain of `count` bones
    along +Z (each `length` long), bones "<name>_0".."<name>_<count-1>"."""
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    arm.matrix_world = matrix
    T.activate(arm)
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i in range(count):
        eb = data.edit_bones.new("%s_%d" % (name, i))
        eb.head, eb.tail = (0.0, 0.0, i * length), (0.0, 0.0, (i + 1) * length)
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def _tube(name, radius, length, rings, segments, matrix=Matrix()):
    """A capped tube along +Z from 0 to `length` (rings + 1 rings of
    `segments` vertices and one centre vertex per cap), its vertices
    transformed by `matrix`, as a new mesh object with an identity object
    transform. Side faces smooth, cap faces flat."""
    verts, faces = [], []
    for r in range(rings + 1):
        z = length * r / rings
        for s in range(segments):
            a = 2.0 * math.pi * s / segments
            verts.append(matrix @ Vector((radius * math.cos(a), radius * math.sin(a), z)))
    for r in range(rings):
        for s in range(segments):
            a, b = r * segments + s, r * segments + (s + 1) % segments
            faces.append((a, b, b + segments, a + segments))
    bottom, top = len(verts), len(verts) + 1
    verts.append(matrix @ Vector((0.0, 0.0, 0.0)))
    verts.append(matrix @ Vector((0.0, 0.0, length)))
    side_faces = len(faces)
    for s in range(segments):
        faces.append((bottom, (s + 1) % segments, s))
        t0 = rings * segments
        faces.append((top, t0 + s, t0 + (s + 1) % segments))
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(v) for v in verts], [], faces)
    me.update()
    for p in me.polygons:
        p.use_smooth = p.index < side_faces
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _auto_weights(mesh, arm):
    """Parent `mesh` to `arm` with automatic weights (bone heat); asserts
    that every vertex got a weight."""
    T.activate(arm)
    mesh.select_set(True)
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    assert any(m.type == "ARMATURE" and m.object == arm for m in mesh.modifiers)
    unweighted = sum(1 for v in mesh.data.vertices if not any(g.weight > 0 for g in v.groups))
    assert unweighted == 0, "%s: bone heat left %d vertices unweighted" % (mesh.name, unweighted)


def _frame_range():
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.frame_set(FRAMES[0])


# --- rigs -------------------------------------------------------------------------

def _key_rigify(arm):
    """Knee bent 120 degrees, elbow 100, a 90-degree spine twist, a raised
    arm and a translated root over FRAMES."""
    poses = {
        1: ({}, (0.0, 0.0, 0.0)),
        4: ({"shin.L": (math.radians(120), 0.0, 0.0), "thigh.L": (math.radians(-40), 0.0, 0.0),
             "forearm.R": (math.radians(100), 0.0, 0.0)}, (0.0, 0.05, 0.0)),
        7: ({"spine.002": (0.0, math.radians(90), 0.0),
             "upper_arm.L": (0.0, 0.0, math.radians(-70)),
             "forearm.L": (math.radians(60), math.radians(30), 0.0)}, (0.03, 0.1, 0.05)),
        10: ({"shin.R": (math.radians(120), 0.0, 0.0), "forearm.R": (math.radians(100), 0.0, 0.0),
             "spine.001": (0.0, math.radians(-90), 0.0), "spine.004": (0.2, 0.4, 0.0)},
            (0.1, -0.05, -0.08)),
    }
    for frame, (pose, root) in poses.items():
        _key_pose(arm, frame, pose, root="spine", root_location=root)
    return FRAMES


def rigify_body():
    """Rigify human metarig + metaball body (see the module docstring)."""
    body, arm, frames = T.rigify_body(resolution=BODY_RESOLUTION, keyer=_key_rigify)
    assert frames == FRAMES
    return arm, [body]


def scaled_limb():
    """A 3-bone chain in a scaled (2.5), rotated, translated armature
    object, a tube around it with automatic weights."""
    placement = (Matrix.Translation((0.4, -0.7, 0.3)) @
                 Euler((0.5, -0.3, 1.1)).to_matrix().to_4x4() @ Matrix.Scale(2.5, 4))
    T.empty_scene()
    arm = _chain_armature("Limb", 0.4, 3, placement)
    mesh = _tube("LimbSkin", 0.12, 1.2, 24, 16, placement)
    _auto_weights(mesh, arm)
    names = [b.name for b in arm.data.bones]
    poses = {
        1: {},
        4: {names[0]: (math.radians(60), 0.0, 0.0)},
        7: {names[0]: (math.radians(30), 0.0, math.radians(20)),
            names[1]: (math.radians(90), 0.0, 0.0)},
        10: {names[1]: (math.radians(-45), 0.0, math.radians(40)),
            names[2]: (0.0, math.radians(90), 0.0)},
    }
    for frame, pose in poses.items():
        _key_pose(arm, frame, pose)
    _frame_range()
    return arm, [mesh]


def _smoothstep(x):
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


def seams_sharp():
    """A tube on 2 bones with UV seams, flat caps and sharp edges, painted
    weights."""
    T.empty_scene()
    arm = _chain_armature("Seam", 0.5, 2)
    mesh = _tube("SeamSkin", 0.15, 1.0, 12, 12)
    me = mesh.data
    me.use_auto_smooth = True
    me.auto_smooth_angle = math.radians(80)   # only marked edges split the sides
    segments, rings = 12, 12
    for e in me.edges:
        a, b = (me.vertices[i].co for i in e.vertices)
        vertical = abs(a.z - b.z) > 1e-6 and abs(a.x - b.x) < 1e-6 and abs(a.y - b.y) < 1e-6
        on_cap_border = abs(a.z - b.z) < 1e-6 and abs(a.z) in (0.0, 1.0) and \
            e.vertices[0] < (rings + 1) * segments and e.vertices[1] < (rings + 1) * segments
        if vertical and a.y == 0.0 and a.x > 0:
            e.use_seam = True             # one lengthwise seam
        if on_cap_border:
            e.use_seam = True             # the caps are UV islands of their own
        ring = abs(a.z - b.z) < 1e-6 and abs(a.z - 0.75) < 1e-6
        if ring:
            e.use_edge_sharp = True       # a sharp ring on the upper bone
    T.activate(mesh)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="SELECT")
    bpy.ops.uv.unwrap(method="ANGLE_BASED", margin=0.02)
    bpy.ops.object.mode_set(mode="OBJECT")
    assert me.uv_layers, "unwrap made no UV map"
    assert sum(e.use_seam for e in me.edges) >= 2 * segments + rings
    assert sum(e.use_edge_sharp for e in me.edges) == segments
    lower, upper = (mesh.vertex_groups.new(name=b.name) for b in arm.data.bones)
    for v in me.vertices:
        w = _smoothstep((v.co.z - 0.35) / 0.3)
        if w < 1.0:
            lower.add([v.index], 1.0 - w, "REPLACE")
        if w > 0.0:
            upper.add([v.index], w, "REPLACE")
    mesh.parent = arm
    mod = mesh.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    names = [b.name for b in arm.data.bones]
    poses = {
        1: {},
        4: {names[1]: (math.radians(80), 0.0, 0.0)},
        7: {names[1]: (math.radians(40), math.radians(70), 0.0)},
        10: {names[0]: (0.0, 0.0, math.radians(30)),
            names[1]: (0.0, math.radians(-90), math.radians(60))},
    }
    for frame, pose in poses.items():
        _key_pose(arm, frame, pose, root=names[0],
                  root_location=(0.0, 0.0, 0.0) if frame != 7 else (0.1, 0.0, -0.05))
    _frame_range()
    return arm, [mesh]


def two_meshes():
    """A tube on 3 bones, weighted as one piece, split into Upper and
    Lower mesh objects (both keep the border ring)."""
    T.empty_scene()
    arm = _chain_armature("Pair", 0.4, 3)
    mesh = _tube("Lower", 0.12, 1.2, 24, 16)
    _auto_weights(mesh, arm)
    split = 0.7   # between the ring at 0.65 and 0.7: upper part starts at 0.7 (a ring)
    T.activate(mesh)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    for p in mesh.data.polygons:
        p.select = min(mesh.data.vertices[i].co.z for i in p.vertices) >= split - 1e-6
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.separate(type="SELECTED")
    bpy.ops.object.mode_set(mode="OBJECT")
    meshes = [o for o in bpy.context.scene.objects if o.type == "MESH"]
    assert len(meshes) == 2, [o.name for o in meshes]
    upper = next(o for o in meshes if o is not mesh)
    upper.name = upper.data.name = "Upper"
    mesh.data.name = "Lower"
    for o in (mesh, upper):
        bpy.ops.object.select_all(action="DESELECT")
        T.activate(o)
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.select_all(action="SELECT")
        bpy.ops.mesh.delete_loose()        # separate leaves no loose vertices, but be sure
        bpy.ops.object.mode_set(mode="OBJECT")
        assert any(m.type == "ARMATURE" and m.object == arm for m in o.modifiers)
        assert o.parent == arm
    names = [b.name for b in arm.data.bones]
    poses = {
        1: {},
        4: {names[1]: (math.radians(70), 0.0, 0.0)},
        7: {names[1]: (math.radians(50), math.radians(80), 0.0),
            names[2]: (0.0, 0.0, math.radians(-60))},
        10: {names[0]: (math.radians(-30), 0.0, 0.0),
            names[1]: (math.radians(-60), math.radians(-45), 0.0)},
    }
    for frame, pose in poses.items():
        _key_pose(arm, frame, pose)
    _frame_range()
    return arm, [mesh, upper]


#: rig name -> builder returning (armature object, [mesh objects])
RIGS = {
    "rigify_body": rigify_body,
    "scaled_limb": scaled_limb,
    "seams_sharp": seams_sharp,
    "two_meshes": two_meshes,
}


# --- export -----------------------------------------------------------------------

def file_name(rig, export):
    return "%s_%s.%s" % (rig, export, EXPORTS[export][0])


def export(rig, export_name, outdir):
    """Exports the current scene (the rig `rig` just built) with the export
    `export_name` into outdir; returns the path."""
    ext, kwargs = EXPORTS[export_name]
    path = os.path.join(outdir, file_name(rig, export_name))
    bpy.context.scene.frame_set(FRAMES[0])
    if ext == "fbx":
        result = bpy.ops.export_scene.fbx(filepath=path, **kwargs)
    else:
        result = bpy.ops.export_scene.gltf(filepath=path, **kwargs)
    assert result == {"FINISHED"}, "%s: %s" % (path, result)
    assert os.path.getsize(path) > 0, path
    return path


def write_corpus(outdir, rigs=None, exports=None):
    """Builds the rigs and writes every export into outdir (created when
    missing); returns [(rig, export, path)]."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    for rig in rigs or RIGS:
        arm, meshes = RIGS[rig]()
        assert all(m.type == "MESH" for m in meshes)
        for name in exports or EXPORTS:
            written.append((rig, name, export(rig, name, outdir)))
    return written


def corpus_files(outdir):
    """[(rig, export, path)] of a corpus written earlier into outdir (only
    the files that exist)."""
    out = []
    for rig in RIGS:
        for name in EXPORTS:
            path = os.path.join(outdir, file_name(rig, name))
            if os.path.isfile(path):
                out.append((rig, name, path))
    return out


def main():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if len(argv) != 1:
        print("usage: blender -b --factory-startup --python tests/blender/corpus.py -- OUTDIR")
        sys.exit(2)
    written = write_corpus(os.path.abspath(argv[0]))
    for rig, name, path in written:
        print("%-12s %-15s %8d bytes  %s" % (rig, name, os.path.getsize(path), path))
    T.shutil.rmtree(T.TMP, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
