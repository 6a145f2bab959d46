"""Conformance of SpringSkin on Debian's assimp-testmodels against an
independent reference built from Assimp's own scene.

For each skinned, animated test model, tests/tools/assimp_dump writes the
raw aiScene (same import flags as SpringSkin) to JSON, and
assimp_reference.AssimpReference deforms it in numpy (float64) from the
conventions alone (Assimp's skinning formula; Blender 3.4's Preserve Volume
for DQS, blended in armature space). Then, on the CPU and GL backends:

- LBS and DQS equal the reference within 1e-4 of the bounding-box diagonal
  at every compared frame;
- rigid, IRS, spring and CoR stay finite, keep the bounding-box diagonal
  within 1.5x of LBS's, and do not tear: vertices that coincide at rest in
  rig space (within 1e-5 of the diagonal, within and across meshes) stay
  together (distance exactly 0 on the CPU within a mesh; across two meshes
  whose object matrices differ, at most the float32 rounding of moving a
  position through rig space, 1e-7 of the diagonal; at most 1e-6 of the
  diagonal on GL);
- LBS and DQS follow the skin weights, as Blender does: copies (vertices of
  one mesh with the same rest position and weights, as an importer makes at
  a UV seam) come out at the same place (exactly on the CPU, 1e-6 of the
  diagonal on GL); coincident vertices a file weights differently separate
  as in Blender (Testwuson.X has 46 such pairs).

Errors and diagonals are measured in rig space: each mesh's rows mapped by
its object matrix at the frame (``Rig.sample``'s second result), the same
matrices for ours and the reference. The measured numbers are printed
(``pytest -s``) and are in every assertion message.

Run from the build directory (CTest does):
  cd build && /usr/bin/python3 -m pytest -q ../tests/python/test_conformance_assimp.py
"""

import functools
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import springskin
except ImportError:
    # Not on PYTHONPATH (CTest sets PYTHONPATH=<build>/python): the build
    # tree in the working directory (pytest run from build/), else
    # <source>/build/python.
    _SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for _candidate in (os.path.join(os.getcwd(), "python"),
                       os.path.join(_SOURCE, "build", "python")):
        if os.path.isfile(os.path.join(_candidate, "springskin", "__init__.py")):
            sys.path.insert(0, _candidate)
            break
    import springskin

from api_helpers import MODELS
from assimp_reference import AssimpReference

FILES = [
    "X/BCN_Epileptic.X",
    "X/Testwuson.X",
    "X/anim_test.x",
    "FBX/animation_with_skeleton.fbx",
    "FBX/huesitos.fbx",
    "glTF2/simple_skin/simple_skin.gltf",
]
BACKENDS = ["cpu", "gl"]
ROBUST_METHODS = ["rigid", "irs", "spring", "cor"]
FPS = 24
# Compared frames, evenly spaced, first and last included: LBS / DQS on every
# frame on the CPU, up to 12 on GL (llvmpipe is slower); the robust methods
# (the spring solver iterates) up to 24 on the CPU and 8 on GL.
MAX_FRAMES = {("reference", "cpu"): 100000, ("reference", "gl"): 12,
              ("robust", "cpu"): 24, ("robust", "gl"): 8}

REFERENCE_TOLERANCE = 1e-4   # LBS / DQS vs the reference, of the diagonal
BBOX_RATIO = 1.5             # robust methods' diagonal vs LBS's
COINCIDENT = 1e-5            # rest pairs, of the rest diagonal
GL_TEAR = 1e-6               # GL tear tolerance, of the rest diagonal
CROSS_MESH_ROUNDING = 1e-7   # CPU, pairs of two meshes, of the rest diagonal


def _find_dump_tool():
    """build/tests/assimp_dump: SSK_ASSIMP_DUMP, else next to the build tree
    springskin was imported from (<build>/python/springskin), else
    tests/assimp_dump under the working directory (CTest runs in build/)."""
    candidates = []
    if os.environ.get("SSK_ASSIMP_DUMP"):
        candidates.append(os.environ["SSK_ASSIMP_DUMP"])
    package_dir = os.path.dirname(os.path.abspath(springskin.__file__))
    candidates.append(os.path.join(package_dir, os.pardir, os.pardir, "tests", "assimp_dump"))
    candidates.append(os.path.join(os.getcwd(), "tests", "assimp_dump"))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.normpath(c)
    return None


DUMP_TOOL = _find_dump_tool()


def _frames(count, check, backend):
    n = min(count, MAX_FRAMES[check, backend])
    return sorted(set(int(round(x)) for x in np.linspace(0, count - 1, n)))


def _rig_space(rig, positions, objects):
    """Whole-rig positions (V, 3) mapped to rig space, float64."""
    out = np.empty(positions.shape, dtype=np.float64)
    for i, mesh in enumerate(rig.meshes):
        m = np.asarray(objects[i], dtype=np.float64)
        out[mesh.rows] = np.asarray(positions[mesh.rows], dtype=np.float64) @ m[:3, :3].T + m[:3, 3]
    return out


def _diagonal(points):
    return float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))


class Case:
    """One model: the rig, the reference, a shared binding, rest pairs, and
    cached per-frame samples and reference results."""

    def __init__(self, relpath, tmpdir):
        self.relpath = relpath
        self.path = os.path.join(MODELS, relpath)
        json_path = os.path.join(tmpdir, os.path.basename(relpath) + ".json")
        run = subprocess.run([DUMP_TOOL, self.path, json_path], capture_output=True, text=True)
        assert run.returncode == 0, f"assimp_dump {self.path} failed: {run.stderr.strip()}"
        self.reference = AssimpReference(json_path)
        self.rig = springskin.load(self.path)
        assert self.rig.animation is not None, f"{relpath}: no animation"
        assert self.rig.vertex_count == len(self.reference.rest_positions()), (
            f"{relpath}: springskin has {self.rig.vertex_count} vertices, "
            f"Assimp's meshes with bones {len(self.reference.rest_positions())}")
        rest_error = float(np.abs(self.rig.rest_positions() - self.reference.rest_positions()).max())
        assert rest_error < 1e-5 * max(1.0, float(np.abs(self.reference.rest_positions()).max())), (
            f"{relpath}: springskin's rest vertices differ from Assimp's by {rest_error:g} "
            f"(vertex order or mesh selection)")
        self.frame_count = self.rig.animation.frame_count(fps=FPS)
        self.binding = self.rig.bind(cor=True)
        rest = _rig_space(self.rig, self.rig.rest_positions(),
                          [m.object_matrix for m in self.rig.meshes])
        self.rest_diagonal = _diagonal(rest)
        from scipy.spatial import cKDTree
        pairs = cKDTree(rest).query_pairs(COINCIDENT * self.rest_diagonal, output_type="ndarray")
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.pair_rest_distance = (np.linalg.norm(rest[self.pairs[:, 0]] - rest[self.pairs[:, 1]],
                                                  axis=1).max() if len(self.pairs) else 0.0)
        mesh_of = np.empty(len(rest), dtype=np.int64)
        for mesh in self.rig.meshes:
            mesh_of[mesh.rows] = mesh.index
        self.cross_mesh = mesh_of[self.pairs[:, 0]] != mesh_of[self.pairs[:, 1]]
        self.cross_mesh_pairs = int(self.cross_mesh.sum())
        # Pairs with the same skin weights (bone -> weight, zeros dropped).
        weights = []
        for mesh in self.rig.meshes:
            for idx, w in zip(mesh.bone_indices, mesh.weights):
                d = {}
                for b, x in zip(idx.tolist(), w.tolist()):
                    if x > 0.0:
                        d[b] = d.get(b, 0.0) + x
                weights.append(d)
        self.same_weights = np.array([
            all(abs(weights[a].get(b, 0.0) - weights[c].get(b, 0.0)) <= 1e-6
                for b in set(weights[a]) | set(weights[c]))
            for a, c in self.pairs], dtype=bool).reshape(-1)
        # ... and the same rest position: LBS and DQS must give them one
        # position (pairs that are only near each other keep their offset).
        rest_rows = self.rig.rest_positions()
        exact = np.all(rest_rows[self.pairs[:, 0]] == rest_rows[self.pairs[:, 1]], axis=1)
        self.identical = self.same_weights & exact & ~self.cross_mesh

    @functools.lru_cache(maxsize=None)
    def sample(self, frame):
        return self.rig.sample(frame=frame, fps=FPS)

    @functools.lru_cache(maxsize=None)
    def expected(self, method, frame):
        """The reference's positions in rig space (through our object
        matrices at the frame) and their diagonal."""
        positions = self.reference.deform(method, frame / FPS)
        rig_space = _rig_space(self.rig, positions, self.sample(frame)[1])
        return rig_space, _diagonal(rig_space)

    def describe(self):
        return (f"{self.relpath}: {self.rig.vertex_count} vertices in {self.rig.mesh_count} "
                f"meshes, {self.rig.bone_count} bones, {self.frame_count} frames at {FPS} fps")


@functools.lru_cache(maxsize=None)
def _case(relpath):
    return Case(relpath, _TMPDIR.name)


_TMPDIR = tempfile.TemporaryDirectory(prefix="ssk_conformance_")


@functools.lru_cache(maxsize=None)
def _gl_context():
    """A shared GL context, or the reason there is none."""
    try:
        return springskin.GLContext(), None
    except (springskin.GLUnavailableError, springskin.GLError) as exc:
        return None, str(exc)


def _setup(relpath, backend):
    path = os.path.join(MODELS, relpath)
    if not os.path.exists(path):
        pytest.skip(f"{path} missing (Debian package assimp-testmodels)")
    if DUMP_TOOL is None:
        pytest.skip("tests/tools/assimp_dump is not built (CMake target assimp_dump, "
                    "with SSK_BUILD_TESTS); set SSK_ASSIMP_DUMP to its path")
    pytest.importorskip("scipy.spatial", reason="scipy (python3-scipy) is needed for the "
                        "rest-pair search")
    gl_context = None
    if backend == "gl":
        gl_context, reason = _gl_context()
        if gl_context is None:
            pytest.skip(f"springskin cannot create a GL context: {reason}")
    return _case(relpath), gl_context


def _gaps(case, ours, select):
    """Largest distance between the selected coincident rest pairs, within
    one mesh and across meshes, in rig space."""
    if not select.any():
        return 0.0, 0.0
    gap = np.linalg.norm(ours[case.pairs[:, 0]] - ours[case.pairs[:, 1]], axis=1)
    within = select & ~case.cross_mesh
    across = select & case.cross_mesh
    return (float(gap[within].max()) if within.any() else 0.0,
            float(gap[across].max()) if across.any() else 0.0)


def _tear_limits(case, backend):
    """(within one mesh, across meshes) allowed gaps."""
    if backend == "gl":
        return GL_TEAR * case.rest_diagonal, GL_TEAR * case.rest_diagonal
    return 0.0, CROSS_MESH_ROUNDING * case.rest_diagonal


def _deformer(case, method, backend, gl_context):
    binding = case.binding if method in ROBUST_METHODS else None
    return springskin.Deformer(case.rig, method=method, backend=backend, binding=binding,
                               gl_context=gl_context)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("relpath", FILES)
def test_matches_assimp_reference(relpath, method, backend):
    case, gl_context = _setup(relpath, backend)
    deformer = _deformer(case, method, backend, gl_context)
    worst, worst_frame, per_frame = 0.0, None, []
    within_gap = across_gap = 0.0
    for frame in _frames(case.frame_count, "reference", backend):
        skinning, objects = case.sample(frame)
        ours = _rig_space(case.rig, deformer.deform(skinning, objects), objects)
        expected, diagonal = case.expected(method, frame)
        error = float(np.linalg.norm(ours - expected, axis=1).max()) / diagonal
        per_frame.append((frame, error))
        if error > worst or worst_frame is None:
            worst, worst_frame = error, frame
        w, a = _gaps(case, ours, case.identical)
        within_gap, across_gap = max(within_gap, w), max(across_gap, a)
    within_limit, across_limit = _tear_limits(case, backend)
    message = (f"{case.describe()}; {method} on {backend}: max error {worst:.3g} of the "
               f"diagonal at frame {worst_frame} (tolerance {REFERENCE_TOLERANCE:g}); "
               f"{int(case.identical.sum())} of {len(case.pairs)} coincident pairs are copies "
               f"(one mesh, same rest position and weights), their largest gap "
               f"{within_gap / case.rest_diagonal:.3g}; per frame "
               + ", ".join(f"{f}: {e:.2g}" for f, e in per_frame))
    print("\n" + message)
    assert worst <= REFERENCE_TOLERANCE, message
    assert within_gap <= within_limit and across_gap <= across_limit, message


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ROBUST_METHODS)
@pytest.mark.parametrize("relpath", FILES)
def test_robust_method(relpath, method, backend):
    case, gl_context = _setup(relpath, backend)
    deformer = _deformer(case, method, backend, gl_context)
    within_limit, across_limit = _tear_limits(case, backend)
    non_finite, ratios, tears = [], [], []
    for frame in _frames(case.frame_count, "robust", backend):
        skinning, objects = case.sample(frame)
        positions = deformer.deform(skinning, objects)
        if not np.isfinite(positions).all():
            non_finite.append((frame, int((~np.isfinite(positions)).any(axis=1).sum())))
            continue
        ours = _rig_space(case.rig, positions, objects)
        lbs, lbs_diagonal = case.expected("lbs", frame)
        ratios.append((frame, _diagonal(ours) / lbs_diagonal))
        if len(case.pairs):
            gap = np.linalg.norm(ours[case.pairs[:, 0]] - ours[case.pairs[:, 1]], axis=1)
            k = int(np.argmax(gap))
            within = float(gap[~case.cross_mesh].max()) if (~case.cross_mesh).any() else 0.0
            across = float(gap[case.cross_mesh].max()) if case.cross_mesh.any() else 0.0
            # Context only: the reference LBS's largest gap on the same pairs
            # (pairs whose rest positions or weights differ move apart under any
            # weight-based skinning).
            lbs_gap = float(np.linalg.norm(lbs[case.pairs[:, 0]] - lbs[case.pairs[:, 1]],
                                           axis=1).max())
            tears.append((frame, float(gap[k]), tuple(int(i) for i in case.pairs[k]), lbs_gap,
                          within, across))
        else:
            tears.append((frame, 0.0, None, 0.0, 0.0, 0.0))

    lo = min((r for _, r in ratios), default=float("nan"))
    hi = max((r for _, r in ratios), default=float("nan"))
    tear_frame, tear, tear_pair = max(tears, key=lambda t: t[1])[:3] if tears else (
        None, 0.0, None)
    lbs_tear = max((t[3] for t in tears), default=0.0)
    within_tear = max((t[4] for t in tears), default=0.0)
    across_tear = max((t[5] for t in tears), default=0.0)
    bad_ratios = [(f, r) for f, r in ratios if not (1.0 / BBOX_RATIO <= r <= BBOX_RATIO)]
    message = (f"{case.describe()}; {method} on {backend}: "
               f"non-finite rows {non_finite or 'none'}; "
               f"diagonal / LBS's in [{lo:.4f}, {hi:.4f}] (allowed [{1 / BBOX_RATIO:.4f}, "
               f"{BBOX_RATIO}]){'; out of range at ' + str(bad_ratios) if bad_ratios else ''}; "
               f"{len(case.pairs)} coincident rest pairs ({case.cross_mesh_pairs} across meshes, "
               f"largest rest distance {case.pair_rest_distance / case.rest_diagonal:.3g} of the "
               f"diagonal): largest gap {tear / case.rest_diagonal:.3g} of the diagonal at frame "
               f"{tear_frame} (vertices {tear_pair}; within meshes "
               f"{within_tear / case.rest_diagonal:.3g}, across meshes "
               f"{across_tear / case.rest_diagonal:.3g}; allowed "
               f"{within_limit / case.rest_diagonal:g} / {across_limit / case.rest_diagonal:g}; "
               f"the reference LBS's "
               f"largest gap on these pairs: {lbs_tear / case.rest_diagonal:.3g})")
    print("\n" + message)
    assert not non_finite, message
    assert not bad_ratios, message
    assert within_tear <= within_limit and across_tear <= across_limit, message


@pytest.mark.parametrize("relpath", FILES)
def test_world_placement(relpath):
    """Rig.rig_matrix(f) @ object_matrices[m] places mesh m in the file's
    world: the reference's G(mesh node, t), or the identity where the format
    ignores a skinned mesh's node (glTF, .x); and our LBS output mapped by
    it equals the reference's world positions (Assimp's formula)."""
    case, _ = _setup(relpath, "cpu")
    ref = case.reference
    deformer = springskin.Deformer(case.rig, method="lbs", backend="cpu")
    worst = 0.0
    for frame in _frames(case.frame_count, "robust", "cpu"):
        skinning, objects = case.sample(frame)
        rig_to_world = np.asarray(case.rig.rig_matrix(frame, fps=FPS), np.float64)
        g = ref.global_transforms(frame / FPS)
        out = deformer.deform(skinning, objects)
        expected_local = ref.deform("lbs", frame / FPS)
        for i, (mesh, ref_mesh) in enumerate(zip(case.rig.meshes, ref.meshes)):
            world = rig_to_world @ np.asarray(objects[i], np.float64)
            node_world = np.eye(4) if ref_mesh.node is None else g[ref_mesh.node]
            scale = max(1.0, float(np.abs(node_world).max()))
            assert np.abs(world - node_world).max() <= 1e-5 * scale, (
                f"{relpath} frame {frame} mesh {mesh.name}: world matrix\n{world}\n"
                f"expected\n{node_world}")
            ours = _rig_space(case.rig, out, objects)[mesh.rows] @ rig_to_world[:3, :3].T \
                + rig_to_world[:3, 3]
            theirs = expected_local[mesh.rows] @ node_world[:3, :3].T + node_world[:3, 3]
            worst = max(worst, float(np.linalg.norm(ours - theirs, axis=1).max()))
    diagonal = _diagonal(_rig_space(case.rig, case.rig.rest_positions(),
                                    [m.object_matrix for m in case.rig.meshes]))
    world_scale = float(np.abs(case.rig.rig_matrix(0, fps=FPS)[:3, :3]).max())
    print(f"\n{relpath}: world positions within {worst / (diagonal * world_scale):.3g} of the "
          f"diagonal")
    assert worst <= REFERENCE_TOLERANCE * diagonal * world_scale


def test_alembic_xforms_are_world_matrices(tmp_path):
    """`springskin bake X.fbx -o X.abc`: each Xform holds the mesh's world
    matrix at the frame (Assimp's G(mesh node, t)), though rig space is the
    armature's; read back with the independent reader of test_abc_reader."""
    from test_abc_reader import Archive, meshes_of
    relpath = "FBX/huesitos.fbx"
    case, _ = _setup(relpath, "cpu")
    cli = os.environ.get("SSK_CLI") or os.path.join(os.path.dirname(DUMP_TOOL), os.pardir,
                                                     "springskin")
    out = str(tmp_path / "huesitos.abc")
    run = subprocess.run([cli, "bake", case.path, "-o", out, "--backend", "cpu"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    archive = Archive(out)
    pairs = meshes_of(archive)
    assert len(pairs) == len(case.reference.meshes)
    for (xf, _), ref_mesh in zip(pairs, case.reference.meshes):
        vals = xf.properties.props[".xform"].props[".vals"]
        for i in range(vals.num_samples):
            got = vals.value(i).reshape(4, 4).T          # row-vector layout
            expected = case.reference.global_transforms(i / FPS)[ref_mesh.node]
            scale = max(1.0, float(np.abs(expected).max()))
            assert np.abs(got - expected).max() <= 1e-5 * scale, (i, got, expected)
