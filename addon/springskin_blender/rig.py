"""Reading a rig out of Blender: the mesh, its skin weights and the armature.

What the core gets (``springskin.Rig``, one mesh) and where it comes from:

- **Rig space** is the armature object's space (Blender's "armature
  space"): bone matrices, heads and tails, skinning matrices.
- **Rest positions**: the vertex coordinates of the *original* mesh, in
  mesh object space. Shape keys are ignored (the basis is used) and so are
  modifiers above the Armature modifier: the Spring Skin positions are
  computed from the undeformed mesh, as if the Armature modifier were the
  first deforming modifier (the usual stack; see ``docs/blender.md``).
- **Triangles**: ``Mesh.loop_triangles`` (Blender's tessellation of the
  polygons; counter-clockwise front faces, as the core).
- **Weights**: every vertex group whose name is a *deforming* bone
  (``Bone.use_deform``) of the armature, in each vertex's own group order
  (``MDeformVert`` order: dual quaternion skinning resolves antipodal
  quaternions against the running sum, so the order matters to match
  Blender bit for bit); zero weights are dropped; K is the largest number
  of such groups on one vertex. Groups naming no deforming bone are
  ignored, as Blender's Armature modifier ignores them.
- **Bones**: all bones of ``Armature.bones`` in that order: names, parents,
  bind matrix ``Bone.matrix_local`` (armature space), ``head_local`` and
  ``tail_local`` (the segment the attachment binding projects on).
- **Object matrix** (mesh object space -> rig space):
  ``armature.matrix_world.inverted() @ mesh.matrix_world``, Blender's
  ``premat`` of ``armature_deform``. Skinning is blended in rig space,
  which matters for dual quaternions when the mesh object has a
  non-uniform scale.
- **Per frame**: skinning matrices
  ``S_b = pose_bone.matrix @ bone.matrix_local.inverted()`` read from the
  *evaluated* armature of the depsgraph at hand, and the object matrix of
  that frame from the evaluated objects.

Unsupported Armature-modifier options (reported as warnings by the
operators): bone envelopes, a vertex-group mask, multi-modifier, B-Bone
segments and envelope-multiplied vertex groups.
"""

import bpy
import numpy as np

__all__ = ["RigData", "SetupError", "armature_modifier", "armature_of", "check_setup", "extract", "frame_matrices",
           "loop_triangles", "pose_matrices", "read_skeleton", "signature", "unsupported_options"]

#: Object matrices closer than this (largest absolute entry difference) to
#: the bind-time matrix are treated as unchanged (float32 round trips of
#: Blender's matrices).
MATRIX_TOLERANCE = 1e-6
#: Rest coordinates sampled (evenly spaced vertices) by the cheap signature
#: that tells when a mesh was edited.
SIGNATURE_SAMPLES = 64


class SetupError(Exception):
    """A mesh/armature set-up the addon cannot deform; the message says what
    to fix."""


class RigData:
    """Arrays for ``springskin.Rig`` plus what the runtime needs per frame.

    Attributes
    ----------
    positions : (V, 3) float32
        Rest positions, mesh object space.
    triangles : (F, 3) int32
    bone_names : list of str
    parents : (B,) int32
    bind : (B, 4, 4) float64
        ``Bone.matrix_local``, armature space.
    bind_inverse : (B, 4, 4) float64
    heads, tails : (B, 3) float32
    weight_indices : (V, K) int32, padding -1
    weight_values : (V, K) float32, padding 0
    object_matrix : (4, 4) float64
        Mesh object space -> armature space at bind.
    ignored_groups : list of str
        Vertex groups that name no deforming bone.
    unweighted : int
        Vertices without any deforming weight (they stay at rest).
    loose : int
        Vertices in no face (every method moves them by their skin weights).
    weights_hash : int
        :func:`weights_hash` of the weights read.
    """

    __slots__ = ("positions", "triangles", "bone_names", "parents", "bind", "bind_inverse",
                 "heads", "tails", "weight_indices", "weight_values", "object_matrix",
                 "ignored_groups", "unweighted", "loose", "pose_order", "mesh_name",
                 "weights_hash")

    def rig_arguments(self):
        """Keyword arguments of ``springskin.Rig``."""
        return dict(positions=self.positions, triangles=self.triangles, parents=self.parents,
                    bind_matrices=self.bind, weight_indices=self.weight_indices,
                    weight_values=self.weight_values, heads=self.heads, tails=self.tails,
                    bone_names=self.bone_names, mesh_name=self.mesh_name,
                    object_matrix=self.object_matrix)


def armature_modifier(obj, name=""):
    """The Armature modifier that drives `obj`: the one called `name` when
    given and present (its object may have been moved to the settings),
    else the first ARMATURE modifier with an object."""
    if name:
        mod = obj.modifiers.get(name)
        if mod is not None and mod.type == "ARMATURE":
            return mod
    for mod in obj.modifiers:
        if mod.type == "ARMATURE" and mod.object is not None:
            return mod
    return None


def armature_of(obj):
    """The armature object deforming mesh `obj`: the Spring Skin settings'
    ``armature`` (a reference, which Blender remaps when rig and mesh are
    duplicated together), else the armature named by ``armature_object``
    (a file saved before the reference, until migrate_armature_names),
    else the object of its Armature modifier. None when none."""
    settings = getattr(obj, "springskin", None)
    if settings is not None:
        arm = settings.armature
        if arm is not None and arm.type == "ARMATURE":
            return arm
        if settings.armature_object:
            arm = bpy.data.objects.get(settings.armature_object)
            if arm is not None and arm.type == "ARMATURE":
                return arm
    mod = armature_modifier(obj, settings.armature_modifier if settings else "")
    if mod is not None and mod.object is not None and mod.object.type == "ARMATURE":
        return mod.object
    return None


def taken_over(obj):
    """True when Spring Skin took `obj`'s armature over (the reference, or
    the name in a file saved before it)."""
    settings = getattr(obj, "springskin", None)
    return settings is not None and (settings.armature is not None or
                                     bool(settings.armature_object))


def armature_label(obj):
    """The taken-over armature's name for messages ("" when none)."""
    settings = getattr(obj, "springskin", None)
    if settings is None:
        return ""
    if settings.armature is not None:
        return settings.armature.name
    return settings.armature_object


def migrate_armature_names():
    """Files saved before the armature was held by reference name it:
    each such object gets the reference (the named armature, when it is
    one) and the name is cleared. Returns the objects whose named armature
    is gone (they are reported by the panel as before)."""
    missing = []
    for obj in bpy.data.objects:
        settings = getattr(obj, "springskin", None)
        if settings is None or not settings.armature_object or settings.armature is not None:
            continue
        arm = bpy.data.objects.get(settings.armature_object)
        if arm is not None and arm.type == "ARMATURE" and obj.library is None:
            settings.armature = arm
            settings.armature_object = ""
        else:
            missing.append(obj)
    return missing


def unsupported_options(mod):
    """Human-readable list of the Armature modifier's and the armature's
    options the addon does not reproduce."""
    out = []
    if mod.use_bone_envelopes:
        out.append("bone envelopes (only vertex groups are used)")
    if mod.vertex_group:
        out.append("the vertex-group mask '%s'" % mod.vertex_group)
    if mod.use_multi_modifier:
        out.append("multi-modifier")
    if not mod.use_vertex_groups:
        out.append("vertex groups turned off on the modifier")
    arm = mod.object
    if arm is not None and arm.type == "ARMATURE":
        bbones = [b.name for b in arm.data.bones if b.use_deform and b.bbone_segments > 1]
        if bbones:
            out.append("B-Bone segments on %s (deformed as straight bones)"
                       % _short_list(bbones))
        mult = [b.name for b in arm.data.bones if b.use_deform and b.use_envelope_multiply]
        if mult:
            out.append("envelope-multiplied weights on %s" % _short_list(mult))
    return out


def _short_list(names, limit=5):
    shown = ", ".join("'%s'" % n for n in names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def _matrices(collection, attr, count):
    """(count, 4, 4) float64 row-major matrices of a collection property
    (foreach_get gives Blender's column-major memory)."""
    buf = np.empty(count * 16, dtype=np.float32)
    collection.foreach_get(attr, buf)
    return buf.reshape(count, 4, 4).transpose(0, 2, 1).astype(np.float64)


def _vectors(collection, attr, count):
    buf = np.empty(count * 3, dtype=np.float32)
    collection.foreach_get(attr, buf)
    return buf.reshape(count, 3)


def _matrix(m):
    return np.array(m, dtype=np.float64)


def check_setup(obj):
    """(armature object, Armature modifier) of mesh object `obj`; raises
    SetupError with what to fix."""
    if obj is None:
        raise SetupError("no active object: select the mesh to deform")
    if obj.type != "MESH":
        raise SetupError("'%s' is a %s, not a mesh: Spring Skin deforms meshes"
                         % (obj.name, obj.type.lower()))
    settings = getattr(obj, "springskin", None)
    mod = armature_modifier(obj, settings.armature_modifier if settings else "")
    if mod is None:
        raise SetupError("'%s' has no Armature modifier with an armature: parent it to an "
                         "armature (Ctrl+P > With Automatic Weights) or add an Armature "
                         "modifier first" % obj.name)
    arm = armature_of(obj)
    if arm is None:
        if settings is not None and settings.armature_object:
            raise SetupError("the armature object '%s' of '%s' is gone (deleted, or renamed "
                             "in a file saved before 2026-12-08): remove Spring Skin and add "
                             "it again" % (settings.armature_object, obj.name))
        raise SetupError("the Armature modifier '%s' of '%s' has no armature object"
                         % (mod.name, obj.name))
    if len(arm.data.bones) == 0:
        raise SetupError("the armature '%s' has no bones" % arm.name)
    if len(obj.data.vertices) == 0:
        raise SetupError("the mesh of '%s' has no vertices" % obj.name)
    return arm, mod


def loop_triangles(me, dtype=np.int32):
    """(F, 3) vertex indices of mesh `me`'s loop triangles (computed
    already: ``Mesh.calc_loop_triangles``); row f is loop triangle f, the
    rig's triangle row."""
    nt = len(me.loop_triangles)
    tri = np.empty(nt * 3, dtype=dtype)
    me.loop_triangles.foreach_get("vertices", tri)
    return tri.reshape(nt, 3)


def read_skeleton(rd, arm):
    """Fill the skeleton of RigData `rd` from armature object `arm`:
    bone_names, parents, bind (``Bone.matrix_local``), bind_inverse, heads,
    tails (armature space) and pose_order. Returns `rd`."""
    bones = arm.data.bones
    nb = len(bones)
    rd.bone_names = [b.name for b in bones]
    index = {name: i for i, name in enumerate(rd.bone_names)}
    rd.parents = np.array([index[b.parent.name] if b.parent else -1 for b in bones],
                          dtype=np.int32)
    rd.bind = _matrices(bones, "matrix_local", nb)
    rd.bind_inverse = np.linalg.inv(rd.bind)
    rd.heads = _vectors(bones, "head_local", nb)
    rd.tails = _vectors(bones, "tail_local", nb)
    pose_names = [pb.name for pb in arm.pose.bones]
    rd.pose_order = None if pose_names == rd.bone_names else \
        np.array([pose_names.index(n) for n in rd.bone_names], dtype=np.int64)
    return rd


def extract(obj, arm, progress=None):
    """Read the rig of mesh object `obj` deformed by armature object `arm`.

    `progress`, when given, is called with a fraction in [0, 1] while the
    vertex groups are read (the slow part: one Python step per weight).

    Raises
    ------
    SetupError
        No vertex group names a deforming bone, or the mesh is empty.
    """
    me = obj.data
    nv = len(me.vertices)
    rd = RigData()
    rd.mesh_name = obj.name
    rd.positions = _vectors(me.vertices, "co", nv)
    me.calc_loop_triangles()
    rd.triangles = loop_triangles(me)

    read_skeleton(rd, arm)
    bones = arm.data.bones
    index = {name: i for i, name in enumerate(rd.bone_names)}

    # vertex group index -> bone index (deforming bones only), else -1
    group_bone = []
    rd.ignored_groups = []
    for vg in obj.vertex_groups:
        b = index.get(vg.name, -1)
        if b >= 0 and not bones[b].use_deform:
            b = -1
        group_bone.append(b)
        if b < 0:
            rd.ignored_groups.append(vg.name)
    if not any(b >= 0 for b in group_bone):
        if len(obj.vertex_groups) == 0:
            raise SetupError("'%s' has no vertex groups: weight the mesh to the bones of '%s' "
                             "(Ctrl+P > With Automatic Weights, or weight painting)"
                             % (obj.name, arm.name))
        raise SetupError("none of the %d vertex groups of '%s' names a deforming bone of "
                         "'%s' (groups: %s; bones: %s): rename the groups after the bones "
                         "or re-parent with automatic weights"
                         % (len(obj.vertex_groups), obj.name, arm.name,
                            _short_list([vg.name for vg in obj.vertex_groups]),
                            _short_list(rd.bone_names)))

    vert_of, bone_of, weight_of = _read_weights(me, group_bone, progress)
    rd.weights_hash = _weights_hash(vert_of, bone_of, weight_of)
    verts = np.array(vert_of, dtype=np.int64)
    counts = np.bincount(verts, minlength=nv) if len(verts) else np.zeros(nv, np.int64)
    k = max(1, int(counts.max()))
    # slot of each entry within its vertex, entries already grouped by vertex
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    slots = np.arange(len(verts)) - starts[verts]
    rd.weight_indices = np.full((nv, k), -1, dtype=np.int32)
    rd.weight_values = np.zeros((nv, k), dtype=np.float32)
    rd.weight_indices[verts, slots] = np.array(bone_of, dtype=np.int32)
    rd.weight_values[verts, slots] = np.array(weight_of, dtype=np.float32)
    rd.unweighted = int(np.count_nonzero(counts == 0))
    # loose vertices (in no face): every method moves them by their weights
    in_face = np.zeros(nv, dtype=bool)
    if len(rd.triangles):
        in_face[np.asarray(rd.triangles).ravel()] = True
    rd.loose = int(nv - np.count_nonzero(in_face)) if len(rd.triangles) else 0
    rd.object_matrix = _matrix(arm.matrix_world.inverted() @ obj.matrix_world)
    if progress is not None:
        progress(1.0)
    return rd


def _read_weights(me, group_bone, progress=None):
    """(vertex, bone, weight) lists of every non-zero weight of a deforming
    bone's group, in vertex order: one Python step per weight (the slow
    part of reading a rig)."""
    vert_of, bone_of, weight_of = [], [], []
    nv = len(me.vertices)
    step = max(1, nv // 50)
    for v in me.vertices:
        i = v.index
        for g in v.groups:
            gi = g.group
            if gi < len(group_bone):
                b = group_bone[gi]
                w = g.weight
                if b >= 0 and w != 0.0:
                    vert_of.append(i)
                    bone_of.append(b)
                    weight_of.append(w)
        if progress is not None and i % step == 0:
            progress(i / nv)
    return vert_of, bone_of, weight_of


def _weights_hash(vert_of, bone_of, weight_of):
    return hash((np.array(vert_of, dtype=np.int64).tobytes(),
                 np.array(bone_of, dtype=np.int32).tobytes(),
                 np.array(weight_of, dtype=np.float32).tobytes()))


def weights_hash(obj, arm):
    """A hash of the skin weights `extract` would read now (the same value
    as ``RigData.weights_hash`` when nothing changed): how the runtime
    notices weights edited in Object mode (Vertex Groups > Limit Total,
    Normalize All, scripts), which leave the rest signature alone."""
    bones = arm.data.bones
    index = {b.name: i for i, b in enumerate(bones)}
    group_bone = []
    for vg in obj.vertex_groups:
        b = index.get(vg.name, -1)
        group_bone.append(b if b >= 0 and bones[b].use_deform else -1)
    return _weights_hash(*_read_weights(obj.data, group_bone))


def signature(obj, arm, previous=None, mesh=True, armature=True):
    """A cheap fingerprint of what the rig was built from: counts, vertex
    group names, the armature and its bones' rest matrices, and a sample of
    rest coordinates. A different signature means the mesh or the armature
    was edited and the rig must be read again. (Weights are not in it:
    reading them is the slow part; the runtime also re-reads the rig after
    the object leaves Edit or Weight Paint mode.)

    A pair (mesh part, armature part). With `previous` (an earlier
    signature of the same object), `mesh=False` or `armature=False` keeps
    that part of it: the runtime reads again only the part whose data the
    depsgraph updated (a pose edit updates the armature's data, never the
    mesh's)."""
    if previous is not None and not mesh:
        mesh_part = previous[0]
    else:
        me = obj.data
        nv = len(me.vertices)
        verts = me.vertices
        sample = tuple(tuple(verts[i].co) for i in range(0, nv, max(1, nv // SIGNATURE_SAMPLES)))
        mesh_part = (me.name, nv, len(me.polygons), len(me.loops),
                     tuple(obj.vertex_groups.keys()), hash(sample))
    if previous is not None and not armature:
        arm_part = previous[1]
    else:
        bones = arm.data.bones
        nb = len(bones)
        rest = np.empty(nb * 16, dtype=np.float32)
        bones.foreach_get("matrix_local", rest)
        tails = np.empty(nb * 3, dtype=np.float32)
        bones.foreach_get("tail_local", tails)
        deform = np.empty(nb, dtype=bool)
        bones.foreach_get("use_deform", deform)
        arm_part = (arm.name, arm.data.name, tuple(bones.keys()), deform.tobytes(),
                    hash(rest.tobytes()), hash(tails.tobytes()))
    return (mesh_part, arm_part)


def pose_matrices(arm_eval, rd):
    """(B, 4, 4) float32 skinning matrices of the evaluated armature:
    ``pose_bone.matrix @ inverse(bone.matrix_local)`` (armature space), in
    the rig's bone order; and the raw pose buffer (for change detection)."""
    pose_bones = arm_eval.pose.bones
    nb = len(pose_bones)
    buf = np.empty(nb * 16, dtype=np.float32)
    pose_bones.foreach_get("matrix", buf)
    posed = buf.reshape(nb, 4, 4).transpose(0, 2, 1)
    if rd.pose_order is not None:
        posed = posed[rd.pose_order]
    skinning = np.matmul(posed.astype(np.float64), rd.bind_inverse).astype(np.float32)
    return skinning, buf


def frame_matrices(obj_eval, arm_eval, rd, skinning):
    """Object matrix of this frame and the skinning matrices to give the
    core.

    Blender deforms with ``premat(t) = inverse(A(t)) M(t)`` on both sides:
    ``v' = inverse(premat) blend(S) premat v``. The core deforms with the
    rest object matrix on the right and this frame's on the left:
    ``inverse(O(t)) blend(S') O v``. With ``O(t) = premat(t)`` and
    ``S'_b = S_b premat(t) inverse(O)`` the two agree exactly for LBS, and
    for DQS whenever ``premat(t) inverse(O)`` is rigid (the mesh and the
    armature moved rigidly relative to each other since the bind; the
    usual case, a mesh parented to its armature, keeps it the identity).

    Returns (skinning, object_matrices or None, premat) where object
    matrices is None when the relation is unchanged since the bind.
    """
    premat = _matrix(arm_eval.matrix_world.inverted() @ obj_eval.matrix_world)
    if np.abs(premat - rd.object_matrix).max() <= MATRIX_TOLERANCE:
        return skinning, None, premat
    correction = premat @ np.linalg.inv(rd.object_matrix)
    adjusted = np.matmul(skinning.astype(np.float64), correction).astype(np.float32)
    return adjusted, premat.astype(np.float32)[None], premat
