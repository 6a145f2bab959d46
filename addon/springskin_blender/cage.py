"""Cages in Blender: coupled cages and skeletons (Corda et al. 2020; issue #21).

A closed triangle or quad mesh object picked in the Spring Skin panel's
Cage field and bound with Bind Cage (``object.springskin_bind_cage``)
reshapes the character:

- **Rest edits.** Moving the cage's vertices (Edit mode, live, or any
  other way) gives the edited rest cage C'; ``springskin.Cage.reshape``
  makes the rig it describes (rest positions ``Phi C'``, Eq. 7; the joints
  refitted by SkelUp, Eq. 13) and every frame's skinning matrices are
  carried over to it (``Cage.pose``, 4.2: rotations kept, translations
  recomputed down the hierarchy), so the animation plays on the reshaped
  rest. The cage as bound (its rest) changes nothing: the deformer then
  runs on the rig read from Blender, bit for bit as without a cage.
- **Pose-time edits** (Edit in Pose, ``object.springskin_cage_edit_in_pose``):
  a copy of the cage, "<cage> Posed", shows the posed cage of the current
  frame (``Cage.fit``, the cage updater, 4.1, Eq. 8). Moving its vertices
  by dC' moves the rest cage by ``dC = Cage.reverse(S, dC')`` (CageRev,
  Eq. 19, for the frame's skinning matrices S), written into the cage
  object's mesh, which reshapes the character as a rest edit does. Exact
  for linear blend skinning (the posed character's fitted cage then is the
  edited copy); for the other methods an approximation (the LBS system is
  used). The copy follows the frame: on a frame or pose change it shows
  that frame's posed cage again.

Spaces: the cage is bound in rig space (the armature object's space, as
``rig.py``): cage vertex coordinates (its mesh, object space) through
``inverse(armature.matrix_world) @ cage.matrix_world`` taken at Bind
Cage and stored; later edits are read through that stored matrix, so
moving the cage object itself reshapes nothing.

Stored with the .blend (ID properties of the character object, so a file
opened again rebinds the same rest cage however the cage was edited
since): :data:`REST_KEY` the cage's vertex coordinates at Bind Cage,
:data:`TRIANGLES_KEY` its triangles (quads split along their first
diagonal), :data:`MATRIX_KEY` the cage-to-rig matrix.

Live updates come from the runtime's depsgraph and frame handlers
(:func:`sync` from ``runtime._prepare``, :func:`after_frame` after each
computed frame). Rebuilding for an edit is throttled: an edit less than
:data:`UPDATE_INTERVAL` seconds after the last applied one is deferred to a
timer that applies the latest state (:func:`flush`).
"""

import time

import bmesh
import bpy
import numpy as np

from . import messages
from . import native
from . import rig as rigmod

__all__ = ["MATRIX_KEY", "REST_KEY", "TRIANGLES_KEY", "UPDATE_INTERVAL", "CageError",
           "after_frame", "attach", "bind", "binding_changed", "cage_poll", "clear", "flush",
           "set_evaluator",
           "posed_copy", "read_cage", "set_edit_in_pose", "sync", "topology_error"]

#: ID properties of the character object (see the module docstring).
REST_KEY = "springskin_cage_rest"
TRIANGLES_KEY = "springskin_cage_triangles"
MATRIX_KEY = "springskin_cage_matrix"
NAME_KEY = "springskin_cage_name"      # the bound cage object's name
POSED_KEY = "springskin_cage_posed"    # the posed copy's name (Edit in Pose)
#: Seconds between two applied cage edits of one object (the rest is
#: deferred to a timer, which applies the latest).
UPDATE_INTERVAL = 0.05
#: Suffix of the posed copy's name (Edit in Pose).
POSED_SUFFIX = " Posed"
#: Faces a cage may have: triangles and quads.
CAGE_FACE_SIZES = (3, 4)

_pending = set()      # names of objects with a deferred cage edit
_timer_registered = False


class CageError(rigmod.SetupError):
    """A cage the addon cannot bind or use; the message says what to fix."""


def cage_poll(settings, obj):
    """PointerProperty poll of the Cage field: a mesh object other than
    the character, of triangles and quads, every edge between two faces (a
    cheap necessary test of a closed surface; Bind Cage checks fully)."""
    if obj is None or obj.type != "MESH" or obj == settings.id_data:
        return False
    me = obj.data
    if len(me.polygons) < 4:
        return False
    sizes = np.empty(len(me.polygons), dtype=np.int32)
    me.polygons.foreach_get("loop_total", sizes)
    return bool(np.isin(sizes, CAGE_FACE_SIZES).all()) and int(sizes.sum()) == 2 * len(me.edges)


# --- reading a cage ------------------------------------------------------------------

def read_cage(obj):
    """(coordinates (c, 3) float64 in the object's mesh space, polygon
    sizes (P,) int64, polygon corners (sum of sizes,) int64, polygon after
    polygon) of mesh object `obj`; the Edit-mode mesh while it is in Edit
    mode (live edits)."""
    if obj.mode == "EDIT" and obj.data.is_editmode:
        bm = bmesh.from_edit_mesh(obj.data)
        bm.verts.index_update()
        co = np.array([tuple(v.co) for v in bm.verts], dtype=np.float64).reshape(-1, 3)
        sizes = np.array([len(f.verts) for f in bm.faces], dtype=np.int64)
        corners = np.array([v.index for f in bm.faces for v in f.verts], dtype=np.int64)
        return co, sizes, corners
    me = obj.data
    n = len(me.polygons)
    sizes = np.empty(n, dtype=np.int32)
    starts = np.empty(n, dtype=np.int32)
    me.polygons.foreach_get("loop_total", sizes)
    me.polygons.foreach_get("loop_start", starts)
    loops = np.empty(len(me.loops), dtype=np.int32)
    me.loops.foreach_get("vertex_index", loops)
    sizes = sizes.astype(np.int64)
    first = np.cumsum(sizes) - sizes
    index = np.repeat(starts.astype(np.int64) - first, sizes) + np.arange(int(sizes.sum()))
    return _coordinates(obj), sizes, loops[index].astype(np.int64)


def _coordinates(obj):
    """The vertex coordinates of read_cage alone, (c, 3) float64."""
    if obj.mode == "EDIT" and obj.data.is_editmode:
        bm = bmesh.from_edit_mesh(obj.data)
        return np.array([tuple(v.co) for v in bm.verts], dtype=np.float64).reshape(-1, 3)
    me = obj.data
    co = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def write_coordinates(obj, co):
    """Set the vertex coordinates of mesh object `obj` (its Edit-mode mesh
    while in Edit mode) to `co` (c, 3), and tag it."""
    co = np.asarray(co, dtype=np.float64)
    if obj.mode == "EDIT" and obj.data.is_editmode:
        bm = bmesh.from_edit_mesh(obj.data)
        bm.verts.ensure_lookup_table()
        for v, p in zip(bm.verts, co):
            v.co = p
        bmesh.update_edit_mesh(obj.data, loop_triangles=False, destructive=False)
        return
    obj.data.vertices.foreach_set("co", co.astype(np.float32).ravel())
    obj.data.update()


def triangulate(sizes, corners, name):
    """(t, 3) int32 triangles of polygons given by `sizes` and `corners`
    (read_cage), in polygon order: triangles as they are, quads split along
    their first diagonal keeping the winding; raises CageError for other
    polygons."""
    bad = sizes[~np.isin(sizes, CAGE_FACE_SIZES)]
    if len(bad):
        raise CageError("the cage '%s' has a face of %d vertices: a cage is made of "
                        "triangles and quads (Triangulate the n-gons)" % (name, int(bad[0])))
    first = np.cumsum(sizes) - sizes
    tri, quad = np.flatnonzero(sizes == 3), np.flatnonzero(sizes == 4)
    at = first[tri, None] + np.arange(3)
    aq = first[quad, None] + np.arange(4)
    parts = [corners[at], corners[aq[:, [0, 1, 2]]], corners[aq[:, [0, 2, 3]]]]
    order = np.concatenate([2 * tri, 2 * quad, 2 * quad + 1])
    out = np.concatenate(parts)[np.argsort(order, kind="stable")]
    return out.astype(np.int32).reshape(-1, 3)


def closed_error(triangles, vertex_count, name):
    """Why `triangles` is not a closed, consistently oriented surface over
    all `vertex_count` vertices, or None."""
    if len(triangles) < 4:
        return "the cage '%s' has %d triangles: a closed cage has at least 4" % (
            name, len(triangles))
    directed = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]],
                               triangles[:, [2, 0]]]).astype(np.int64)
    keys = directed[:, 0] * vertex_count + directed[:, 1]
    reverse = directed[:, 1] * vertex_count + directed[:, 0]
    unique, counts = np.unique(keys, return_counts=True)
    if (counts > 1).any():
        return ("the cage '%s' is not a consistently oriented manifold: %d edges are used "
                "twice in the same direction (Mesh > Normals > Recalculate Outside, or "
                "non-manifold edges)" % (name, int((counts > 1).sum())))
    open_edges = int((~np.isin(reverse, unique)).sum())
    if open_edges:
        return ("the cage '%s' is not closed: %d edges have a face on one side only (fill "
                "the holes: Select > Select All by Trait > Non Manifold, then Fill)"
                % (name, open_edges))
    unused = vertex_count - len(np.unique(triangles))
    if unused:
        return ("the cage '%s' has %d vertices on no face (Mesh > Clean Up > Delete Loose)"
                % (name, unused))
    return None


def _stored(obj):
    """(rest (c, 3) float64 cage mesh space, triangles (t, 3) int32,
    matrix (4, 4) float64 cage mesh space -> rig space) of `obj`'s bound
    cage, or None."""
    rest, tris, matrix = obj.get(REST_KEY), obj.get(TRIANGLES_KEY), obj.get(MATRIX_KEY)
    if rest is None or tris is None or matrix is None:
        return None
    return (np.array(rest, dtype=np.float64).reshape(-1, 3),
            np.array(tris, dtype=np.int32).reshape(-1, 3),
            np.array(matrix, dtype=np.float64).reshape(4, 4))


def _to_rig(matrix, co):
    return co @ matrix[:3, :3].T + matrix[:3, 3]


def _from_rig(matrix, co):
    inv = np.linalg.inv(matrix)
    return co @ inv[:3, :3].T + inv[:3, 3]


def topology_error(obj, state=None):
    """Why the cage picked for `obj` cannot be used with its binding (no
    cage, not bound, topology changed since Bind Cage), or None. The bound
    triangles are `state`'s cage's when given, else the stored ones."""
    settings = obj.springskin
    cage = settings.cage
    if cage is None:
        return "no cage: pick a closed mesh in the Cage field and Bind Cage"
    if state is not None and getattr(state, "cage", None) is not None:
        c, tris = state.cage.vertex_count, state.cage.triangles
    else:
        stored = _stored(obj)
        if stored is None or not settings.cage_bound:
            return "the cage '%s' is not bound: Bind Cage" % cage.name
        c, tris = len(stored[0]), stored[1]
    co, sizes, corners = read_cage(cage)
    try:
        now = triangulate(sizes, corners, cage.name)
    except CageError as exc:
        now, detail = None, str(exc)
    if len(co) != c or now is None or now.shape != tris.shape or \
            not np.array_equal(now, tris):
        return ("the topology of the cage '%s' changed since Bind Cage (%d vertices, %d "
                "triangles bound; now %d vertices%s): rebind with Bind Cage"
                % (cage.name, c, len(tris), len(co),
                   ", %d triangles" % len(now) if now is not None else "; " + detail))
    return None


def rigger_words(message):
    """A core refusal of a cage in a rigger's words (messages.py)."""
    message = message[len("Cage: "):] if message.startswith("Cage: ") else message
    message = messages.rigger_words(message)
    message = message.replace("the rig's rest vertices: ", "the mesh's vertices: ")
    return message.replace("point ", "vertex ")


# --- binding ---------------------------------------------------------------------------

def bind(obj, state, arm):
    """Bind `obj`'s picked cage (its current coordinates are the rest) to
    the rig of `state` (read from Blender); stores the rest cage on `obj`.
    Returns the seconds the binding took. Raises CageError."""
    ssk = native.require()
    cage = obj.springskin.cage
    if cage is None:
        raise CageError("no cage: pick a closed mesh object in the Cage field of '%s' first"
                        % obj.name)
    if cage.type != "MESH":
        raise CageError("the cage '%s' is a %s, not a mesh" % (cage.name, cage.type.lower()))
    co, sizes, corners = read_cage(cage)
    tris = triangulate(sizes, corners, cage.name)
    problem = closed_error(tris, len(co), cage.name)
    if problem:
        raise CageError(problem)
    matrix = np.array(arm.matrix_world.inverted() @ cage.matrix_world, dtype=np.float64)
    t0 = time.perf_counter()
    try:
        bound = ssk.Cage(state.base_rig, _to_rig(matrix, co), tris)
    except (ValueError, TypeError, ssk.SpringSkinError) as exc:
        raise CageError("the cage '%s' cannot be bound to '%s': %s"
                        % (cage.name, obj.name, rigger_words(str(exc)))) from None
    seconds = time.perf_counter() - t0
    obj[REST_KEY] = co.ravel().tolist()
    obj[TRIANGLES_KEY] = tris.ravel().tolist()
    obj[MATRIX_KEY] = matrix.ravel().tolist()
    obj[NAME_KEY] = cage.name
    obj.springskin.cage_bound = True
    reshaped = state.rig is not state.base_rig
    _install(state, bound, matrix, co)
    if reshaped:
        state.cage_seen = None  # sync gives the rig read from Blender back (and rebuilds)
    return seconds


def binding_changed(obj, state):
    """Whether `obj`'s stored cage binding (after an undo or redo) is not
    the one `state` uses."""
    stored = _stored(obj) if obj.springskin.cage_bound else None
    if stored is None or state.cage is None:
        return (stored is None) != (state.cage is None)
    rest, tris, matrix = stored
    return not (np.array_equal(rest, state.cage_rest) and np.array_equal(matrix, state.cage_matrix)
                and np.array_equal(tris, state.cage.triangles))


def clear(obj):
    """Forget `obj`'s bound cage (the stored rest too)."""
    set_edit_in_pose(obj, False)
    for key in (REST_KEY, TRIANGLES_KEY, MATRIX_KEY, NAME_KEY):
        if key in obj:
            del obj[key]
    obj.springskin.cage_bound = False


def _install(state, bound, matrix, rest):
    state.cage = bound
    state.cage_matrix = matrix
    state.cage_rest = rest           # cage mesh space, as stored
    state.cage_seen = rest.copy()    # the last coordinates read
    state.cage_edit = None           # the applied edit (rig space), None: unedited
    state.cage_error = None
    state.pose_base = None


def attach(obj, state):
    """Called when `state`'s rig was read from Blender: bind the stored
    rest cage to it (after a file load, a mesh or armature edit) and apply
    the cage's current coordinates. A failure is kept in
    ``state.cage_error`` (the character deforms without the cage)."""
    state.base_rig = state.rig
    state.cage = None
    state.cage_error = None
    state.pose_base = None
    settings = obj.springskin
    stored = _stored(obj)
    if not settings.cage_bound or stored is None:
        return
    rest, tris, matrix = stored
    ssk = native.require()
    try:
        bound = ssk.Cage(state.base_rig, _to_rig(matrix, rest), tris)
    except (ValueError, TypeError, ssk.SpringSkinError) as exc:
        state.cage_error = "the stored cage no longer binds: %s (Bind Cage again)" % exc
        return
    _install(state, bound, matrix, rest)
    if settings.cage is not None and topology_error(obj, state) is None:
        co = _coordinates(settings.cage)
        state.cage_seen = co
        try:
            _reshape(state, co)
        except (ValueError, ssk.SpringSkinError) as exc:
            state.rig, state.cage_edit = state.base_rig, None
            state.cage_error = "the cage edit cannot reshape '%s': %s" % (obj.name, exc)


def _reshape(state, co):
    """Make `state.rig` the rig that cage coordinates `co` (cage mesh space)
    describe: the rig read from Blender for the rest cage itself."""
    if np.array_equal(co, state.cage_rest):
        state.rig = state.base_rig
        state.cage_edit = None
        return
    edited = _to_rig(state.cage_matrix, co)
    state.rig = state.cage.reshape(edited)
    state.cage_edit = edited


# --- live updates ------------------------------------------------------------------------

def bound_name(obj):
    """The name of the cage object bound to `obj` (Bind Cage), or None."""
    return obj.get(NAME_KEY)


def posed_copy(obj):
    """The posed copy of `obj`'s cage (Edit in Pose), or None."""
    name = obj.get(POSED_KEY)
    if not name or not obj.springskin.cage_edit_in_pose:
        return None
    copy = bpy.data.objects.get(name)
    return copy if copy is not None and copy.type == "MESH" else None


def sync(obj, state, rebuild, force=False, posed=True):
    """Bring `state` up to date with the cage of `obj` (before a frame is
    computed): an edit of the posed copy becomes a rest-cage edit (CageRev),
    a rest-cage edit reshapes the rig and `rebuild(state)` remakes the
    deformer. Throttled (UPDATE_INTERVAL) unless `force`; `posed` False
    leaves the posed copy alone (a render thread). Returns True when the
    rig changed."""
    settings = obj.springskin
    if getattr(state, "cage", None) is None or settings.cage is None:
        return False
    cage = settings.cage
    problem = topology_error(obj, state)
    if problem:
        if state.cage_error != problem:
            print("Spring Skin: '%s': %s" % (obj.name, problem))
        state.cage_error = problem
        return False
    if state.cage_error and state.cage_error.startswith("the topology"):
        state.cage_error = None
    copy = posed_copy(obj)
    posed_now = None
    if posed and copy is not None and state.pose_base is not None:
        posed_now = _to_rig(state.cage_matrix, _coordinates(copy))
        if len(posed_now) != len(state.pose_base["posed"]) or \
                np.array_equal(posed_now, state.pose_base["seen"]):
            posed_now = None
    co = _coordinates(cage)
    if posed_now is None and np.array_equal(co, state.cage_seen):
        return False
    now = time.perf_counter()
    if not force and now - getattr(state, "cage_time", 0.0) < UPDATE_INTERVAL:
        _defer(obj.name)
        return False
    ssk = native.require()
    if posed_now is not None:
        base = state.pose_base
        try:
            rest_offset = state.cage.reverse(base["skinning"], posed_now - base["posed"])
        except (ValueError, ssk.SpringSkinError) as exc:
            state.cage_error = "the pose-time edit failed (CageRev): %s" % exc
            return False
        base["seen"] = posed_now
        co = _from_rig(state.cage_matrix, base["rest"] + rest_offset)
        write_coordinates(cage, co)
        co = _coordinates(cage)  # as stored (float32 outside Edit mode)
    state.cage_seen = co
    try:
        _reshape(state, co)
    except (ValueError, ssk.SpringSkinError) as exc:
        state.cage_error = "the cage edit cannot reshape '%s': %s" % (obj.name, exc)
        return False
    state.cage_error = None
    rebuild(state)
    state.cage_time = time.perf_counter()
    state.cage_ms = 1e3 * (state.cage_time - now)
    return True


def carried(state, skinning):
    """The frame's skinning matrices for `state.rig`: carried over to the
    reshaped rig (Cage.pose) when the cage is edited, else as they are."""
    if getattr(state, "cage_edit", None) is None:
        return skinning
    return state.cage.pose(skinning)


def after_frame(obj, state, skinning, premat, pose_key):
    """After a frame was computed: with Edit in Pose, a new frame or pose
    shows its posed cage (Cage.fit of the deformed positions) on the posed
    copy and becomes the base of the next pose-time edits."""
    copy = posed_copy(obj)
    if copy is None or getattr(state, "cage", None) is None or state.cage_error:
        return
    base = state.pose_base
    if base is not None and base["key"] == pose_key:
        return
    rig_positions = _to_rig(premat, state.positions.astype(np.float64))
    posed = state.cage.fit(rig_positions).astype(np.float64)
    rest = state.cage_edit if state.cage_edit is not None else \
        _to_rig(state.cage_matrix, state.cage_rest)
    write_coordinates(copy, _from_rig(state.cage_matrix, posed))
    seen = _to_rig(state.cage_matrix, _coordinates(copy))
    state.pose_base = dict(key=pose_key, skinning=np.array(skinning, dtype=np.float32),
                           posed=seen, seen=seen, rest=rest)


def set_edit_in_pose(obj, on, collection=None):
    """Edit in Pose on: make the posed copy (hidden from renders, drawn as
    wire) and hide the rest cage; off: remove the copy, show the cage.
    Returns the copy (None when off)."""
    settings = obj.springskin
    cage = settings.cage
    if not on:
        name = obj.get(POSED_KEY)
        copy = bpy.data.objects.get(name) if name else None
        was_on = settings.cage_edit_in_pose or copy is not None
        if copy is not None:
            me = copy.data
            bpy.data.objects.remove(copy)
            if me.users == 0:
                bpy.data.meshes.remove(me)
        if POSED_KEY in obj:
            del obj[POSED_KEY]
        if settings.cage_edit_in_pose:
            settings.cage_edit_in_pose = False
        bound = bpy.data.objects.get(bound_name(obj) or "")
        for shown in {c for c in (cage, bound) if c is not None and was_on}:
            try:
                shown.hide_set(False)
            except RuntimeError:
                pass
        return None
    name = cage.name + POSED_SUFFIX
    copy = bpy.data.objects.get(obj.get(POSED_KEY) or name)
    if copy is None:
        copy = bpy.data.objects.new(name, cage.data.copy())
        copy.data.name = name
        for coll in (cage.users_collection or (collection,)):
            if coll is not None:
                coll.objects.link(copy)
    copy.matrix_world = cage.matrix_world
    copy.display_type = "WIRE"
    copy.hide_render = True
    copy.show_in_front = True
    obj[POSED_KEY] = copy.name
    settings.cage_edit_in_pose = True
    try:
        cage.hide_set(True)
    except RuntimeError:
        pass
    return copy


def _defer(name):
    global _timer_registered
    _pending.add(name)
    if not _timer_registered:
        _timer_registered = True
        bpy.app.timers.register(_on_timer, first_interval=UPDATE_INTERVAL)


def _on_timer():
    global _timer_registered
    _timer_registered = False
    flush()
    return None


#: The runtime's evaluation of an object, (obj, depsgraph, scene,
#: cage_force) -> None, given by ``runtime.register`` (set_evaluator): the
#: runtime imports this module, so this one does not import it back.
_evaluate = None


def set_evaluator(fn):
    """The function :func:`flush` re-evaluates an edited object with."""
    global _evaluate
    _evaluate = fn


def flush():
    """Apply the deferred cage edits now (the timer's work; tests call it)."""
    if _evaluate is None:
        _pending.clear()
        return
    names = list(_pending)
    _pending.clear()
    try:
        context = bpy.context
        scene = context.scene
        depsgraph = context.evaluated_depsgraph_get()
    except AttributeError:
        return
    for name in names:
        obj = bpy.data.objects.get(name)
        if obj is not None and obj.springskin.bound:
            _evaluate(obj, depsgraph, scene, cage_force=True)


def unregister():
    global _timer_registered
    _pending.clear()
    if _timer_registered and bpy.app.timers.is_registered(_on_timer):
        bpy.app.timers.unregister(_on_timer)
    _timer_registered = False
