"""A character cage made in Blender, bound and edited with springskin
(issue #21: the cages the tests use are made by the tests).

    blender -b --factory-startup --python-exit-code 1 \\
        --python tests/blender/test_cage_character.py -- REPO [BUILD]

The character: Rigify's human metarig (159 bones, all deforming) with the
metaball body and bone-heat weights of blender_testlib.rigify_body,
exported with the FBX exporter's defaults (as tests/blender/corpus.py's
``fbx_default``: the root nodes carry ``Rx(-90) S(100)``, so the file's
scene root space is Blender's world turned Y up, in centimetres; the
rig space springskin reads is Blender's world again, in metres). All 159
bones are kept: 65 of their heads (face, fingers, heels) lie outside the
metaball body, with no skin around them to localize their cage
coordinates, and springskin gives them a floor mass on every cage vertex
(core/bind/cage_skel.c; before it, binding failed at thumb.02.R).

The cage, made here in Blender from a copy of the body mesh:

1. Displace along the vertex normals by OFFSET (mid level 0: the full
   strength), outward;
2. Remesh, voxel mode, VOXEL metres: a closed manifold (it also resolves
   the self-intersections the offset made between the legs and under the
   arms);
3. Decimate (collapse) to about CAGE_TARGET vertices;
4. Displace along the normals by OFFSET again (decimation cuts convex
   parts inwards), then Triangulate.

The fingers and the heel bones stick out of the metaball body, so the
offset starts at OFFSET and grows by OFFSET_STEP until every bone head of
the rig springskin reads from the FBX (and every rest vertex) is inside
the cage (generalized winding number >= 0.5, computed here with numpy,
independently of springskin), up to OFFSET_MAX. The cage is checked to be
a closed, consistently oriented manifold (bmesh) and exported with
Blender's OBJ exporter (``wm.obj_export``) with its default axes (-Z
forward, Y up: exactly the FBX exporter's Rx(-90)) and ``global_scale``
100 (the FBX exporter's metre-to-centimetre factor; the OBJ exporter has
none), so the OBJ's coordinates are the FBX's scene root space, which
``Cage.load(path, rig)`` assumes. The alignment is verified numerically:
the similarity mapping Blender's bone heads (world) onto springskin's
(rig space, matched by name) maps Blender's cage onto ``cage.vertices``,
and the cage springskin reads encloses the rig's rest positions and bone
heads in rig space. The OBJ exported at the default scale 1 is refused by
springskin (a bone head outside the cage).

Then, in this Blender process (springskin from BUILD/python): the cage's
size and bind time are printed; an unedited ``reshape`` gives the rest
positions and bone heads bit for bit; an edit scaling the belly band of
the cage 1.2x about the body's vertical axis gives finite rest positions
that move by at most the edit, the rest of the body and the far bones
(head, hands, feet) staying put and the belly's bone heads moving with
the band; an LBS bake of a few frames with the edit is finite with the
rig's vertex count, and its frames differ from the plain bake's.
"""

import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blender_testlib as T  # noqa: E402

import bmesh  # noqa: E402
import bpy  # noqa: E402
import numpy as np  # noqa: E402

VOXEL = 0.04          # m: the remesh's voxel size
CAGE_TARGET = 200     # vertices after decimation
OFFSET = 0.06         # m: each of the two outward displacements, first try
OFFSET_STEP = 0.03    # m: growth when a bone head or vertex is outside
OFFSET_MAX = 0.15     # m
FBX_SCALE = 100.0     # the FBX exporter's metre -> centimetre factor
BELLY_SCALE = 1.2     # the edit: horizontal scale of the belly band
FIT_TOLERANCE = 1e-5  # of the rig's diagonal: Blender -> rig space fit residual
STILL = 0.05          # of the edit's largest move: far bones and far vertices
BAKE_FRAMES = (0, 3)


def _springskin():
    sys.path.insert(0, os.path.join(T.BUILD, "python"))
    try:
        import springskin
    except ImportError as exc:
        print("FAIL: cannot import springskin from %s/python (%s): run `make` first"
              % (T.BUILD, exc))
        sys.exit(1)
    return springskin


ss = _springskin()


# --- geometry ----------------------------------------------------------------------

def winding_numbers(points, vertices, triangles):
    """Generalized winding numbers of points w.r.t. a triangle mesh (Van
    Oosterom and Strackee's solid angle): 1 inside a closed outward
    surface, 0 outside."""
    points = np.asarray(points, dtype=np.float64)
    vertices = np.asarray(vertices, dtype=np.float64)
    total = np.zeros(len(points))
    for start in range(0, len(points), 256):
        p = points[start:start + 256, None, :]
        a, b, c = (vertices[triangles[:, k]][None] - p for k in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
        det = np.einsum("pti,pti->pt", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("pti,pti->pt", a, b) * lc
               + np.einsum("pti,pti->pt", b, c) * la + np.einsum("pti,pti->pt", c, a) * lb)
        total[start:start + 256] = (2.0 * np.arctan2(det, den)).sum(axis=1) / (4.0 * np.pi)
    return total


def rig_space(rig, positions):
    """Whole-rig positions (each mesh in its object space) -> rig space."""
    out = np.empty_like(np.asarray(positions, dtype=np.float64))
    for mesh in rig.meshes:
        m = mesh.object_matrix.astype(np.float64)
        out[mesh.rows] = positions[mesh.rows] @ m[:3, :3].T + m[:3, 3]
    return out


def fit_affine(src, dst):
    """(A, t, residual): dst ~ src @ A.T + t by least squares."""
    X = np.hstack([src, np.ones((len(src), 1))])
    sol, *_ = np.linalg.lstsq(X, dst, rcond=None)
    A, t = sol[:3].T, sol[3]
    return A, t, float(np.abs(src @ A.T + t - dst).max())


def diagonal(points):
    return float(np.linalg.norm(np.ptp(points, axis=0)))


# --- the scene --------------------------------------------------------------------

def check_closed_manifold(me):
    bm = bmesh.new()
    bm.from_mesh(me)
    try:
        bad = [e.index for e in bm.edges if not (e.is_manifold and e.is_contiguous)]
        assert not bad, "cage: %d non-manifold or inconsistently oriented edges" % len(bad)
        assert all(len(f.verts) == 3 for f in bm.faces), "cage: not triangulated"
        euler = len(bm.verts) - len(bm.edges) + len(bm.faces)
    finally:
        bm.free()
    return euler


def export_obj(me, path, scale):
    obj = bpy.data.objects.new("Cage", me)
    bpy.context.scene.collection.objects.link(obj)
    T.activate(obj)
    try:
        result = bpy.ops.wm.obj_export(filepath=path, export_selected_objects=True,
                                       global_scale=scale, export_uv=False,
                                       export_normals=False, export_materials=False)
        assert result == {"FINISHED"}, result
    finally:
        bpy.data.objects.remove(obj)


def body_triangles(body):
    """(vertices world, triangles) of the body mesh (fan-triangulated)."""
    mw = np.array(body.matrix_world)
    V = T.coords(body.data) @ mw[:3, :3].T + mw[:3, 3]
    F = np.array([(p.vertices[0], p.vertices[k], p.vertices[k + 1])
                  for p in body.data.polygons for k in range(1, len(p.vertices) - 1)])
    return V, F


class Scene:
    """Built once: the body, its FBX, the cage and its OBJ, springskin's
    rig and cage."""

    def __init__(self):
        self.body, self.arm, _ = T.rigify_body()
        bpy.context.scene.frame_set(1)
        self.fbx = os.path.join(T.TMP, "rigify_body.fbx")
        result = bpy.ops.export_scene.fbx(filepath=self.fbx)
        assert result == {"FINISHED"}, result
        self.rig = ss.load(self.fbx)
        self.rest = rig_space(self.rig, self.rig.rest_positions())
        self.heads = self.rig.bones.heads.astype(np.float64)
        # Blender world -> rig space from the bone heads springskin reads
        names = self.rig.bones.names
        blender = {b.name: self.arm.matrix_world @ b.head_local for b in self.arm.data.bones}
        shared = [i for i, n in enumerate(names) if n in blender]
        assert len(shared) == len(self.arm.data.bones), "only %d of springskin's bones named as Blender's" % len(shared)
        src = np.array([tuple(blender[names[i]]) for i in shared])
        self.A, self.t, residual = fit_affine(src, self.heads[shared])
        self.diagonal = diagonal(self.rest)
        assert residual <= FIT_TOLERANCE * self.diagonal, residual
        # the bone heads springskin binds, in Blender's world
        inv = np.linalg.inv(self.A)
        self.heads_world = (self.heads - self.t) @ inv.T
        rest_world = (self.rest - self.t) @ inv.T
        offset = OFFSET
        while True:
            V, F, me, self.remeshed = T.make_cage(self.body, offset, VOXEL, CAGE_TARGET)
            heads_out = int((winding_numbers(self.heads_world, V, F) < 0.5).sum())
            rest_out = int((winding_numbers(rest_world, V, F) < 0.5).sum())
            print("  cage at offset %.2f m: %d remeshed vertices, %d/%d cage vertices/"
                  "triangles, %d bone heads and %d rest vertices outside"
                  % (offset, self.remeshed, len(V), len(F), heads_out, rest_out))
            if heads_out == 0 and rest_out == 0:
                break
            bpy.data.meshes.remove(me)
            offset += OFFSET_STEP
            assert offset <= OFFSET_MAX + 1e-9, "no enclosing cage up to %.2f m" % OFFSET_MAX
        self.offset, self.V_world, self.F, self.me = offset, V, F, me
        self.euler = check_closed_manifold(me)
        self.obj = os.path.join(T.TMP, "rigify_body_cage.obj")
        self.obj_unscaled = os.path.join(T.TMP, "rigify_body_cage_scale1.obj")
        export_obj(me, self.obj, FBX_SCALE)
        export_obj(me, self.obj_unscaled, 1.0)
        t0 = time.perf_counter()
        self.cage = ss.Cage.load(self.obj, self.rig)
        self.bind_s = time.perf_counter() - t0
        print("  character: %d vertices, %d bones; cage: %d vertices, %d triangles "
              "(Euler characteristic %d), offset %.2f m, voxel %.2f m; Cage.load + bind %.3f s"
              % (self.rig.vertex_count, self.rig.bone_count, self.cage.vertex_count,
                 self.cage.triangle_count, self.euler, self.offset, VOXEL, self.bind_s))


S = None


# --- tests --------------------------------------------------------------------------

def test_build_and_bind():
    global S
    S = Scene()
    assert 100 <= S.cage.vertex_count <= 300, S.cage.vertex_count
    assert S.cage.vertex_count == len(S.V_world), (S.cage.vertex_count, len(S.V_world))
    assert S.cage.triangle_count == len(S.F)


def test_cage_lines_up_with_the_fbx():
    # Blender's cage mapped by the bone-head similarity onto springskin's
    want = S.V_world @ S.A.T + S.t
    got = S.cage.vertices.astype(np.float64)
    d = np.linalg.norm(got[:, None, :] - want[None], axis=2)
    worst = max(d.min(axis=1).max(), d.min(axis=0).max()) / S.diagonal
    print("  OBJ cage vs Blender's cage mapped to rig space: %.1e of the diagonal" % worst)
    assert worst <= FIT_TOLERANCE, worst
    # and it encloses the rig in rig space
    tri = S.cage.triangles.astype(np.int64)
    w_rest = winding_numbers(S.rest, got, tri)
    w_heads = winding_numbers(S.heads, got, tri)
    print("  winding numbers in rig space: rest %.4f..%.4f, bone heads %.4f..%.4f"
          % (w_rest.min(), w_rest.max(), w_heads.min(), w_heads.max()))
    assert np.all(np.abs(w_rest - 1.0) < 1e-3) and np.all(np.abs(w_heads - 1.0) < 1e-3)
    # the OBJ exporter's default scale misses the FBX exporter's 100x
    try:
        ss.Cage.load(S.obj_unscaled, S.rig)
    except ValueError as exc:
        print("  the OBJ at global_scale 1 is refused: %s" % str(exc).splitlines()[0][:120])
    else:
        raise AssertionError("the unscaled cage was accepted")


def test_unedited_reshape_is_the_rest_shape():
    reshaped = S.cage.reshape(S.cage.vertices)
    np.testing.assert_array_equal(reshaped.rest_positions(), S.rig.rest_positions())
    np.testing.assert_array_equal(reshaped.bones.heads, S.rig.bones.heads)


def belly_edit():
    """(edited cage, band mask, the edit's per-vertex moves) in rig space:
    cage vertices between the heads of spine and spine.003, inside the shoulders, (Blender
    heights) scaled BELLY_SCALE horizontally about the vertical axis
    through the body's centre."""
    V = S.cage.vertices.astype(np.float64)
    world = (V - S.t) @ np.linalg.inv(S.A).T
    bones = S.arm.data.bones
    z0 = (S.arm.matrix_world @ bones["spine"].head_local).z
    z1 = (S.arm.matrix_world @ bones["spine.003"].head_local).z
    body = T.coords(S.body.data) @ np.array(S.body.matrix_world)[:3, :3].T \
        + np.array(S.body.matrix_world)[:3, 3]
    # the torso: between the shoulder joints (the arms hang across the band)
    half = abs((S.arm.matrix_world @ bones["upper_arm.L"].head_local).x)
    torso = (body[:, 2] > z0) & (body[:, 2] < z1) & (np.abs(body[:, 0]) < half)
    centre = 0.5 * (body[torso].min(axis=0) + body[torso].max(axis=0))
    band = (world[:, 2] >= z0) & (world[:, 2] <= z1) & (np.abs(world[:, 0] - centre[0]) < half)
    edited_world = world.copy()
    edited_world[band, :2] = centre[:2] + BELLY_SCALE * (world[band, :2] - centre[:2])
    edited = edited_world @ S.A.T + S.t
    global belly_map

    def belly_map(points):
        w = (np.asarray(points) - S.t) @ np.linalg.inv(S.A).T
        w[:, :2] = centre[:2] + BELLY_SCALE * (w[:, :2] - centre[:2])
        return w @ S.A.T + S.t
    return edited, band, np.linalg.norm(edited - V, axis=1)


def test_belly_edit_reshapes():
    edited, band, moves = belly_edit()
    reshaped = S.cage.reshape(edited)
    assert band.sum() >= 6, band.sum()
    rest = rig_space(reshaped, reshaped.rest_positions())
    assert np.all(np.isfinite(rest))
    moved = np.linalg.norm(rest - S.rest, axis=1)
    heads = reshaped.bones.heads.astype(np.float64)
    head_moved = np.linalg.norm(heads - S.heads, axis=1)
    edit = moves.max()
    names = S.rig.bones.names
    far = [i for i, n in enumerate(names)
           if n.split(".")[0] in ("hand", "foot", "toe", "shin") or n == "spine.006"]
    belly = [names.index(n) for n in ("spine.001", "spine.002") if n in names]
    # what the band's scaling would do to those heads
    want = np.linalg.norm(np.array(belly_map(S.heads[belly])) - S.heads[belly], axis=1)
    print("  belly heads under the band's own scaling would move %s"
          % ", ".join("%.3f" % w for w in want))
    print("  belly edit: %d of %d cage vertices, largest move %.2f (rig units, %.1f%% of "
          "the diagonal); rest vertices moved up to %.2f (%d moved > 1%% of the edit); "
          "bone heads: belly (spine.001/.002) %s, far (hands, feet, shins, head) up to %.2e"
          % (band.sum(), len(band), edit, 100 * edit / S.diagonal, moved.max(),
             int((moved > 0.01 * edit).sum()),
             ", ".join("%.3f" % head_moved[i] for i in belly),
             head_moved[far].max()))
    print("  farthest-moved far bone: %s" % names[far[int(np.argmax(head_moved[far]))]])
    assert moved.max() <= edit * (1 + 1e-4), (moved.max(), edit)
    assert head_moved[far].max() <= STILL * edit, head_moved[far].max()
    # the vertices far below the band (feet) stay put
    height = ((S.rest - S.t) @ np.linalg.inv(S.A).T)[:, 2]   # Blender's Z
    low = height < np.percentile(height, 5)
    print("  lowest 5%% of the rest vertices moved up to %.2e" % moved[low].max())
    assert moved[low].max() <= STILL * edit
    # the belly's bone heads move with the band, away from the axis
    for i in belly:
        assert head_moved[i] > 0.0, names[i]
    S.cage.reshape(S.cage.vertices)


def test_bake_with_the_edit():
    edited, _, _ = belly_edit()
    path = os.path.join(T.TMP, "caged.pc2")
    plain = os.path.join(T.TMP, "plain.pc2")
    ss.bake(S.rig, path, frames=BAKE_FRAMES, method="lbs", cage=S.cage, cage_edit=edited)
    ss.bake(S.rig, plain, frames=BAKE_FRAMES, method="lbs")
    frames = BAKE_FRAMES[1] - BAKE_FRAMES[0] + 1
    out = []
    for p in (path, plain):
        with open(p, "rb") as f:
            data = f.read()
        sig, _, nv, _, _, samples = struct.unpack_from("<12siiffi", data)
        assert sig == b"POINTCACHE2\0" and nv == S.rig.vertex_count and samples == frames, \
            (sig, nv, samples)
        out.append(np.frombuffer(data, "<f4", count=3 * nv * frames, offset=32)
                   .reshape(frames, nv, 3))
    caged, ref = out
    assert np.all(np.isfinite(caged))
    diff = np.linalg.norm(caged - ref, axis=2).max(axis=1)
    print("  LBS bake of frames %d..%d with the edit: %d vertices per frame, finite; "
          "largest difference from the plain bake per frame %s (object space)"
          % (BAKE_FRAMES[0], BAKE_FRAMES[1], nv, ", ".join("%.3f" % d for d in diff)))
    assert np.all(diff > 0.0)


def main():
    runner = T.Runner("cage made in Blender for the Rigify body")
    runner.run(test_build_and_bind)
    if S is None:
        runner.finish()
    for test in (test_cage_lines_up_with_the_fbx, test_unedited_reshape_is_the_rest_shape,
                 test_belly_edit_reshapes, test_bake_with_the_edit):
        runner.run(test)
    runner.finish()


main()
