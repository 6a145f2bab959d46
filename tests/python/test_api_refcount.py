"""No reference or memory leaks over 10,000 calls of the extension module,
on the success and the error paths."""

import gc
import sys
import tracemalloc

import numpy as np
import springskin
from api_helpers import bend_pose, limb_arrays

CALLS = 10_000
# Memory a loop may keep (interpreter caches, free lists), far below what
# one leaked array per call would hold (10,000 x >= 192 bytes = 1.9 MB).
MEMORY_SLACK = 256 * 1024
OBJECT_SLACK = 100


def make_setup():
    """A small limb (16 vertices), its rig and a DQS deformer, made by each
    test (module fixtures could be referenced by pytest itself)."""
    limb = limb_arrays(rings=4, segments=4)
    rig = springskin.Rig(**limb)
    return limb, rig, springskin.Deformer(rig, method="dqs", backend="cpu")


def measure(loop):
    """(memory growth in bytes, object count growth) of running loop() after
    a warm-up run."""
    loop()
    gc.collect()
    tracemalloc.start()
    try:
        objects = len(gc.get_objects())
        before = tracemalloc.get_traced_memory()[0]
        loop()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        return after - before, len(gc.get_objects()) - objects
    finally:
        tracemalloc.stop()


def check(loop, *watched):
    counts = [sys.getrefcount(x) for x in watched]
    memory, objects = measure(loop)
    assert [sys.getrefcount(x) for x in watched] == counts
    assert memory < MEMORY_SLACK, f"{memory} bytes kept after {CALLS} calls"
    assert objects < OBJECT_SLACK, f"{objects} objects kept after {CALLS} calls"


def test_deform_new_arrays():
    limb, rig, deformer = make_setup()
    contiguous = bend_pose(limb)
    # float64, big-endian, strided: converted (copied) on every call
    converted = np.zeros((3, 4, 8), ">f8")[:, :, ::2]
    converted[...] = contiguous
    objects = np.eye(4)[None]

    def loop():
        for _ in range(CALLS // 2):
            out = deformer.deform(contiguous)
            # ours, the argument of getrefcount, the deformer's (it keeps the last)
            assert sys.getrefcount(out) == 3
            deformer.deform(converted, objects, 3.0)

    check(loop, contiguous, converted, objects, deformer, rig)


def test_deform_out_normals_and_reports():
    limb, rig, deformer = make_setup()
    pose = bend_pose(limb)
    out = np.zeros((16, 3), np.float32)
    normals = np.zeros((16, 3), np.float32)
    reference = rig.rest_positions()
    deformer.deform(pose, out=out)

    def loop():
        for _ in range(CALLS // 4):
            deformer.deform(pose, out=out)
            deformer.normals(out=normals)
            deformer.max_displacement(reference)
            deformer.timing  # noqa: B018 - property under test
    check(loop, pose, out, normals, reference, deformer)


def test_error_paths():
    limb, rig, deformer = make_setup()
    wrong_shape = np.zeros((3, 4))
    wrong_kind = np.zeros((3, 4, 4), np.int64)
    non_finite = bend_pose(limb)
    non_finite[2, 1, 1] = np.inf
    singular = np.zeros((1, 4, 4))
    bad_out = np.zeros((16, 3))

    def loop():
        for k in range(CALLS):
            case = k % 5
            try:
                if case == 0:
                    deformer.deform(wrong_shape)
                elif case == 1:
                    deformer.deform(wrong_kind)
                elif case == 2:
                    deformer.deform(non_finite)
                elif case == 3:
                    deformer.deform(rig.rest_pose(), singular)
                else:
                    deformer.deform(rig.rest_pose(), out=bad_out)
            except (ValueError, TypeError):
                pass
            else:
                raise AssertionError(f"case {case} did not raise")

    check(loop, wrong_shape, wrong_kind, non_finite, singular, bad_out, deformer)


def test_rig_creation_and_views():
    limb, rig, deformer = make_setup()
    bad = dict(limb, triangles=limb["triangles"] + 1000)

    def loop():
        for _ in range(CALLS // 20):
            springskin.Rig(**limb)
            try:
                springskin.Rig(**bad)
            except ValueError:
                pass
        for _ in range(CALLS // 10):
            rig._core.mesh(0)
            rig._core.bones()
            rig.normals(limb["positions"])

    check(loop, limb["positions"], limb["triangles"], rig)


def test_sketch_functions():
    """Strokes and the sketch functions (issue #22), success and errors."""
    limb, rig, _ = make_setup()
    points = np.c_[np.zeros(6), np.linspace(0, 3, 6), np.linspace(0, 0.5, 6) ** 2]
    offset = np.c_[np.linspace(0, -1, 6), np.linspace(0, 3, 6), np.zeros(6)]
    joints = np.array(limb["heads"])
    rest = rig.rest_pose()
    triangles = np.array([0, 1, 2])
    bad = np.zeros((3, 4))

    def loop():
        for _ in range(CALLS // 10):
            stroke = springskin.Stroke(points, times=np.arange(6.0), epsilon=0.0)
            stroke.knots
            stroke.position(np.linspace(0, 1, 3))
            stroke.frame(0.5)
            stroke.time(0.2)
            stroke.closest(points, return_distance=True)
            springskin.pose_joints(joints, stroke, offset, 0.5, return_selected=True)
            springskin.pose_from_strokes(rig, rest, stroke, offset, 0.5)
            springskin.surface_roi(rig, triangles, rings=2)
            springskin.surface_points(rig, triangles, np.full((3, 3), 1 / 3))
            for call in (lambda: springskin.Stroke(bad),
                         lambda: springskin.pose_joints(bad, stroke, offset, 0.5),
                         lambda: springskin.surface_roi(rig, [10 ** 6])):
                try:
                    call()
                except ValueError:
                    pass

    check(loop, rig, points, joints)
