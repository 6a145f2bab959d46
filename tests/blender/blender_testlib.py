"""Shared by the addon's tests in Blender (tests/blender/test_addon_*.py).

Each test script runs headless, as CTest does:

    blender -b --factory-startup --python tests/blender/test_addon_X.py -- REPO [BUILD]

REPO is the source tree, BUILD the CMake build directory (default
REPO/build or $SSK_BUILD_DIR) whose addon/springskin_blender/ holds the
staged addon with the compiled springskin package inside (made by
`make`). A script prints one line per test and "N passed, M failed", and
exits 1 when a test failed or the staged addon is missing (not a skip:
CTest skips these tests only when Blender itself is not installed).

Scenes built here (every expected value comes from Blender itself, never
from the addon):

- :func:`fbx_character`: ``FBX/animation_with_skeleton.fbx`` of Debian's
  assimp-testmodels through Blender's FBX importer (16 bones, 21 frames of
  animation, a mesh object with a non-uniform scale);
- :func:`rigify_body`: Rigify's human metarig with a body made of metaball
  capsules around the limb and spine bones (a closed manifold mesh),
  automatic weights (bone heat), and keyed poses (rotations, a translated
  root, a scaled bone);
- a reference copy of a mesh (:func:`reference_copy`) keeps Blender's own
  Armature modifier, so the addon's result is compared with Blender's on
  the same frame of the same depsgraph.
"""

import math
import os
import struct
import shutil
import sys
import tempfile
import time
import traceback

import addon_utils
import bpy
import numpy as np
from mathutils import Euler, Vector

SKIP = 77
ADDON = "springskin_blender"


def arguments():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.abspath(argv[0]) if argv else os.path.abspath(os.path.join(here, "..", ".."))
    build = os.path.abspath(argv[1]) if len(argv) > 1 else \
        os.environ.get("SSK_BUILD_DIR") or os.path.join(repo, "build")
    return repo, build


REPO, BUILD = arguments()
MODELS = os.environ.get("SSK_MODELS_DIR", "/usr/share/assimp/models")
FBX_CHARACTER = os.path.join(MODELS, "FBX", "animation_with_skeleton.fbx")
ADDON_PARENT = os.path.join(BUILD, "addon")
TMP = tempfile.mkdtemp(prefix="ssk_blender_")


def require_addon():
    """Make the staged addon importable; exits 1 with a message when the
    build has not made it."""
    if not os.path.isfile(os.path.join(ADDON_PARENT, ADDON, "__init__.py")):
        print("FAIL: the staged addon %s/%s is missing: run `make` first"
              % (ADDON_PARENT, ADDON))
        sys.exit(1)
    if ADDON_PARENT not in sys.path:
        sys.path.insert(0, ADDON_PARENT)


def enable_addon():
    require_addon()
    mod = addon_utils.enable(ADDON, default_set=True, handle_error=_raise)
    assert mod is not None, "addon_utils.enable returned None"
    return mod


def disable_addon():
    addon_utils.disable(ADDON, default_set=True, handle_error=_raise)


def _raise(exc):
    raise exc


def submodule(name):
    return sys.modules["%s.%s" % (ADDON, name)]


# --- a tiny runner ------------------------------------------------------------

class Runner:
    def __init__(self, title):
        self.title = title
        self.passed = 0
        self.failed = []
        print("== %s (Blender %s, build %s)" % (title, bpy.app.version_string, BUILD))

    def run(self, fn):
        t0 = time.perf_counter()
        try:
            fn()
        except Exception:
            self.failed.append(fn.__name__)
            print("FAIL %s (%.1f s)" % (fn.__name__, time.perf_counter() - t0))
            traceback.print_exc()
        else:
            self.passed += 1
            print("ok   %s (%.1f s)" % (fn.__name__, time.perf_counter() - t0))
        sys.stdout.flush()

    def finish(self):
        shutil.rmtree(TMP, ignore_errors=True)
        print("%s: %d passed, %d failed%s" % (self.title, self.passed, len(self.failed),
                                              (": " + ", ".join(self.failed)) if self.failed
                                              else ""))
        sys.stdout.flush()
        sys.exit(1 if self.failed else 0)


# --- scenes ------------------------------------------------------------------------

def empty_scene():
    """Factory settings, empty scene (the addon stays registered)."""
    bpy.ops.wm.read_homefile(use_empty=True)


def activate(obj):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)


def fbx_character():
    """(mesh object, armature object, (first, last) frames) of the FBX test
    character; asserts what the tests rely on."""
    empty_scene()
    assert os.path.exists(FBX_CHARACTER), "%s missing (assimp-testmodels)" % FBX_CHARACTER
    bpy.ops.import_scene.fbx(filepath=FBX_CHARACTER)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    action = arm.animation_data.action
    first, last = (int(round(f)) for f in action.frame_range)
    assert last - first >= 10, "the FBX animation is too short: %s" % (action.frame_range,)
    assert any(m.type == "ARMATURE" and m.object == arm for m in mesh.modifiers)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    scene.frame_set(first)
    return mesh, arm, (first, last)


#: Capsule radius (before the metaball's field scale) per Rigify bone kind.
BODY_RADIUS = {"spine": 0.13, "shoulder": 0.07, "upper_arm": 0.06, "forearm": 0.05,
               "hand": 0.04, "thigh": 0.09, "shin": 0.065, "foot": 0.05, "toe": 0.04}


def rigify_body(resolution=0.03, keyer=None):
    """(mesh object, armature object, (first, last)): Rigify's human metarig
    with a metaball body, automatic weights and keyed poses on frames 1..12.

    `keyer(armature)`, when given, keys other poses instead and returns
    their (first, last) frames (tests/blender/corpus.py)."""
    empty_scene()
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    arm = bpy.context.active_object
    mb = bpy.data.metaballs.new("BodyBall")
    mb.resolution = mb.render_resolution = resolution
    mb.threshold = 0.6
    ball = bpy.data.objects.new("BodyBall", mb)
    bpy.context.scene.collection.objects.link(ball)
    for b in arm.data.bones:
        kind = b.name.split(".")[0]
        if kind not in BODY_RADIUS:
            continue
        head, tail = Vector(b.head_local), Vector(b.tail_local)
        e = mb.elements.new(type="CAPSULE")
        e.co = (head + tail) / 2
        e.radius = BODY_RADIUS[kind] * 1.6
        e.size_x = max((tail - head).length / 2, 1e-3)
        e.rotation = Vector((1, 0, 0)).rotation_difference(tail - head)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    me = bpy.data.meshes.new_from_object(ball.evaluated_get(depsgraph))
    bpy.data.objects.remove(ball)
    bpy.data.metaballs.remove(mb)
    me.name = "Body"
    body = bpy.data.objects.new("Body", me)
    bpy.context.scene.collection.objects.link(body)
    activate(arm)
    body.select_set(True)
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    assert any(m.type == "ARMATURE" for m in body.modifiers)
    weighted = sum(1 for v in me.vertices if any(g.weight > 0 for g in v.groups))
    assert weighted == len(me.vertices), "bone heat left %d of %d vertices unweighted" % (
        len(me.vertices) - weighted, len(me.vertices))
    if keyer is None:
        _key_poses(arm)
        first, last = 1, 12
    else:
        first, last = keyer(arm)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    scene.frame_set(first)
    return body, arm, (first, last)


def _key_poses(arm):
    """Rotations of arms, legs and spine, a moving root and a scaled
    forearm (Blender's scaled-bone rule of Preserve Volume) over 1..12."""
    poses = {
        1: {},
        4: {"upper_arm.L": (0.0, 0.4, 1.1), "forearm.L": (1.2, 0.0, 0.3),
            "thigh.R": (-0.9, 0.0, 0.2), "spine.002": (0.2, 0.5, 0.0)},
        8: {"upper_arm.R": (0.7, -0.5, -1.3), "forearm.R": (1.6, 0.4, 0.0),
            "shin.L": (1.4, 0.0, 0.0), "spine.004": (-0.3, 0.0, 0.6), "hand.L": (0.0, 1.4, 0.0)},
        12: {"upper_arm.L": (2.6, 0.3, 0.5), "thigh.L": (1.0, 0.3, -0.4),
             "spine.001": (0.0, 2.7, 0.0)},   # a large twist (antipodal quaternions)
    }
    for pb in arm.pose.bones:
        pb.rotation_mode = "XYZ"
    root = arm.pose.bones["spine"]
    forearm = arm.pose.bones["forearm.R"]
    for frame, pose in poses.items():
        for pb in arm.pose.bones:
            pb.rotation_euler = Euler(pose.get(pb.name, (0.0, 0.0, 0.0)))
            pb.keyframe_insert("rotation_euler", frame=frame)
        root.location = (0.0, 0.05 * frame / 12, 0.02 * (frame % 5))
        root.keyframe_insert("location", frame=frame)
        forearm.scale = (1.0, 1.0, 1.0) if frame in (1, 12) else (1.25, 0.9, 1.1)
        forearm.keyframe_insert("scale", frame=frame)


def key_walk(arm):
    """A walk over frames 1..25 (issue #36's character benchmark): the
    legs swing and each knee bends to 135 degrees in turn, the elbows bend
    to 135 degrees, the torso turns 90 degrees about the spine (spine.002,
    about its own axis) and back, and the root moves forward. Euler XYZ
    rotations of the pose bones (radians), keyed every 3 frames with
    Blender's Bezier in-betweens. Returns (1, 25)."""
    r = math.radians
    poses = {
        1: {},
        4: {"thigh.L": (r(-30), 0, 0), "shin.L": (r(60), 0, 0), "thigh.R": (r(20), 0, 0),
            "upper_arm.R": (r(-25), 0, 0), "forearm.R": (r(45), 0, 0)},
        7: {"thigh.L": (r(-60), 0, 0), "shin.L": (r(135), 0, 0), "thigh.R": (r(25), 0, 0),
            "forearm.R": (r(135), 0, 0), "spine.002": (0, r(45), 0)},
        10: {"thigh.L": (r(-20), 0, 0), "shin.L": (r(30), 0, 0), "thigh.R": (r(-30), 0, 0),
             "shin.R": (r(60), 0, 0), "forearm.L": (r(60), 0, 0), "spine.002": (0, r(90), 0)},
        13: {"thigh.R": (r(-60), 0, 0), "shin.R": (r(135), 0, 0), "thigh.L": (r(25), 0, 0),
             "forearm.L": (r(135), 0, 0), "upper_arm.L": (r(-25), 0, 0), "spine.002": (0, r(45), 0)},
        16: {"thigh.R": (r(-20), 0, 0), "shin.R": (r(30), 0, 0), "thigh.L": (r(-30), 0, 0),
             "shin.L": (r(60), 0, 0), "spine.002": (0, r(-45), 0)},
        19: {"thigh.L": (r(-60), 0, 0), "shin.L": (r(135), 0, 0), "forearm.R": (r(135), 0, 0),
             "forearm.L": (r(135), 0, 0), "spine.002": (0, r(-90), 0)},
        22: {"thigh.R": (r(-45), 0, 0), "shin.R": (r(90), 0, 0), "forearm.R": (r(90), 0, 0),
             "spine.002": (0, r(-30), 0)},
        25: {},
    }
    root = arm.pose.bones["spine"]
    for frame, pose in poses.items():
        for pb in arm.pose.bones:
            pb.rotation_mode = "XYZ"
            pb.rotation_euler = Euler(pose.get(pb.name, (0.0, 0.0, 0.0)))
            pb.keyframe_insert("rotation_euler", frame=frame)
        # the root bone points up: its Y bobs, its Z moves the body forward
        root.location = (0.0, 0.02 * (frame % 6) / 5, 0.3 * (frame - 1) / 24)
        root.keyframe_insert("location", frame=frame)
    return 1, 25


def make_cage(body, offset, voxel, target):
    """A cage around mesh object `body` made with Blender (issue #21), world
    space: Displace `offset` along the normals, voxel Remesh (`voxel`
    metres: a closed manifold), Decimate (collapse) to about `target`
    vertices, Displace `offset` again, Triangulate. Returns (vertices (c, 3)
    float64, triangles (t, 3) int64, the mesh datablock "Cage", the remesh's
    vertex count)."""
    cage = bpy.data.objects.new("CageWork", body.data.copy())
    bpy.context.scene.collection.objects.link(cage)
    cage.matrix_world = body.matrix_world
    grow = cage.modifiers.new("Grow", "DISPLACE")
    grow.direction, grow.mid_level, grow.strength = "NORMAL", 0.0, offset
    remesh = cage.modifiers.new("Remesh", "REMESH")
    remesh.mode, remesh.voxel_size = "VOXEL", voxel
    remeshed = len(cage.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices)
    decimate = cage.modifiers.new("Decimate", "DECIMATE")
    decimate.decimate_type, decimate.ratio = "COLLAPSE", target / remeshed
    push = cage.modifiers.new("Push", "DISPLACE")
    push.direction, push.mid_level, push.strength = "NORMAL", 0.0, offset
    cage.modifiers.new("Triangulate", "TRIANGULATE")
    depsgraph = bpy.context.evaluated_depsgraph_get()
    me = bpy.data.meshes.new_from_object(cage.evaluated_get(depsgraph))
    world = cage.matrix_world.copy()
    bpy.data.objects.remove(cage)
    me.transform(world)
    me.name = "Cage"
    V = coords(me).astype(np.float64)
    F = np.array([tuple(p.vertices) for p in me.polygons], dtype=np.int64)
    return V, F, me, remeshed


def reference_copy(obj, name=None):
    """A copy of `obj` with its own mesh data, keeping Blender's Armature
    modifier (made before the addon touches `obj`)."""
    ref = obj.copy()
    ref.data = obj.data.copy()
    ref.name = name or obj.name + "_reference"
    for coll in obj.users_collection:
        coll.objects.link(ref)
    return ref


# --- measurements -----------------------------------------------------------------

def coords(mesh):
    out = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


def evaluated(obj, depsgraph=None):
    depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
    return coords(obj.evaluated_get(depsgraph).data)


def diagonal(obj):
    rest = coords(obj.data)
    return float(np.linalg.norm(rest.max(axis=0) - rest.min(axis=0)))


def live_positions(obj):
    """The positions the Spring Skin modifier (a Mesh Cache) reads: its
    one-frame .pc2 file, parsed here independently of the addon (header:
    12-byte signature, version, vertex count, start, rate, sample count)."""
    mod = obj.modifiers["Spring Skin"]
    assert mod.type == "MESH_CACHE" and mod.cache_format == "PC2", mod.type
    with open(bpy.path.abspath(mod.filepath), "rb") as f:
        data = f.read()
    signature, _version, nv, _start, _rate, samples = struct.unpack_from("<12siiffi", data)
    assert signature == b"POINTCACHE2\0" and samples == 1, (signature, samples)
    return np.frombuffer(data, dtype="<f4", count=3 * nv, offset=32).reshape(nv, 3)


def live_offsets(obj):
    """live_positions(obj) minus the rest positions of its mesh."""
    return live_positions(obj) - coords(obj.data)


def call(op, **kwargs):
    """Run an operator; returns (result set, None) or (None, error text) when
    it reported an error (a RuntimeError in background mode)."""
    try:
        return op(**kwargs), None
    except RuntimeError as exc:
        return None, str(exc)


# --- the panel ------------------------------------------------------------------------

class RecordingLayout:
    """Stands in for a UILayout: every call returns another layout; labels
    and operators are recorded."""

    def __init__(self, log):
        self.log = log
        self.use_property_split = False

    def __getattr__(self, name):
        def call(*args, **kwargs):
            if name in ("label", "operator", "prop", "prop_search", "menu"):
                self.log.append((name, kwargs.get("text") or (args[1] if len(args) > 1
                                                              else args[0] if args else "")))
            return RecordingLayout(self.log)
        return call


def draw_panel(obj):
    """The Spring Skin panel's labels, operators and properties for `obj`,
    joined by " | " (asserts the panel polls for it)."""
    panel_cls = submodule("ui").SPRINGSKIN_PT_modifier

    class Context:
        pass

    log = []
    ctx = Context()
    ctx.object = obj
    panel_cls.draw(type("P", (), {"layout": RecordingLayout(log)})(), ctx)
    assert panel_cls.poll(ctx)
    return " | ".join(str(t) for _, t in log)
