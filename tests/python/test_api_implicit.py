"""Implicit skinning in Python (issue #20, item 5): method "implicit" in any
case, graphs with an implicit node, and the composition operators built
once (springskin.ImplicitOperators) and shared by the deformers.

References are independent of the feature under test: the rest mesh, a
deformer that builds its own operators, the graph document written by hand.
"""

import gc
import weakref

import numpy as np
import pytest

import springskin
from api_helpers import bend_pose, limb_arrays


@pytest.fixture(scope="module")
def ops():
    return springskin.ImplicitOperators()   # the paper's 128^3, about 2 s


@pytest.fixture(scope="module")
def limb():
    args = limb_arrays(rings=24, segments=16, bones=2)
    return args, springskin.Rig(**args)


def _rest(rig):
    return np.repeat(np.eye(4, dtype=np.float32)[None], rig.bone_count, axis=0)


def _diagonal(args):
    return float(np.linalg.norm(np.ptp(np.asarray(args["positions"]), axis=0)))


def test_implicit_is_a_method():
    assert "implicit" in springskin.METHODS


def test_rest_pose_gives_the_rest_mesh(ops, limb):
    args, rig = limb
    deformer = springskin.Deformer(rig, method="implicit", backend="cpu", implicit_operators=ops)
    assert deformer.method == "implicit"
    positions = deformer.deform(_rest(rig))
    assert np.abs(positions - args["positions"]).max() <= 1e-5 * _diagonal(args)


def test_bent_limb_is_finite_and_shared_operators_change_nothing(ops, limb):
    args, rig = limb
    pose = bend_pose(args, angle=1.2)
    shared = springskin.Deformer(rig, method="implicit", backend="cpu", implicit_operators=ops)
    bent = shared.deform(pose)
    assert bent.shape == (rig.vertex_count, 3) and np.isfinite(bent).all()
    dqs = springskin.Deformer(rig, method="dqs", backend="cpu").deform(pose)
    assert np.abs(bent - np.asarray(args["positions"])).max() > 0.1 * _diagonal(args), \
        "the limb did not bend"
    # the tracking moved vertices off DQS (the fold at the inner elbow)
    assert np.abs(bent - dqs).max() > 1e-4 * _diagonal(args)
    own = springskin.Deformer(rig, method="implicit", backend="cpu").deform(pose)
    np.testing.assert_array_equal(bent, own)


def test_method_name_in_any_case(ops, limb):
    args, rig = limb
    pose = bend_pose(args, angle=0.8)
    results = [springskin.Deformer(rig, method=name, backend="CPU",
                                   implicit_operators=ops).deform(pose)
               for name in ("implicit", "IMPLICIT", "Implicit")]
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    assert springskin.Graph.from_method("Implicit", rig) is not None


def test_graph_with_an_implicit_node(ops, limb):
    args, rig = limb
    doc = {"version": 1,
           "nodes": [{"id": "skin", "type": "skinning", "method": "dqs"},
                     {"id": "track", "type": "implicit", "operator": "union",
                      "operators": {"b1": "bulge"}, "iterations": 12, "sigma": 0.5,
                      "contact_angle": 40.0, "smoothing_iterations": 2,
                      "diffusion_iterations": 4, "bulge": 0.5},
                     {"id": "out", "type": "output"}],
           "edges": [{"from": "skin", "to": "track", "input": "positions"},
                     {"from": "track", "to": "out", "input": "positions"}]}
    graph = springskin.Graph(doc, rig)
    track = graph.to_dict()["nodes"][1]
    assert track["type"] == "implicit" and track["operator"] == "union"
    assert track["operators"] == {"b1": "bulge"}
    assert (track["iterations"], track["smoothing_iterations"],
            track["diffusion_iterations"]) == (12, 2, 4)
    assert track["sigma"] == pytest.approx(0.5) and track["bulge"] == pytest.approx(0.5)
    assert track["contact_angle"] == pytest.approx(40.0)
    deformer = springskin.Deformer(rig, graph=graph, backend="cpu", implicit_operators=ops)
    assert np.abs(deformer.deform(_rest(rig)) - args["positions"]).max() <= \
        1e-5 * _diagonal(args)
    assert np.isfinite(deformer.deform(bend_pose(args, angle=1.0))).all()
    default = springskin.Graph.from_method("implicit", rig).to_dict()
    assert [n["type"] for n in default["nodes"]] == ["skinning", "implicit", "output"]
    assert default["nodes"][0]["method"] == "dqs"
    assert default["nodes"][1]["operator"] == "contact" and default["nodes"][1]["operators"] == {}


def test_bad_implicit_nodes_are_refused(limb):
    _args, rig = limb

    def doc(**fields):
        return {"version": 1,
                "nodes": [{"id": "skin", "type": "skinning", "method": "dqs"},
                          dict({"id": "track", "type": "implicit"}, **fields),
                          {"id": "out", "type": "output"}],
                "edges": [{"from": "skin", "to": "track", "input": "positions"},
                          {"from": "track", "to": "out", "input": "positions"}]}

    with pytest.raises(ValueError, match="field 'operator'"):
        springskin.Graph(doc(operator="squash"), rig)
    with pytest.raises(ValueError, match="no bone 'elbow' in the rig"):
        springskin.Graph(doc(operators={"elbow": "bulge"}), rig)
    with pytest.raises(ValueError, match=r"field 'operators\.b1'"):
        springskin.Graph(doc(operators={"b1": "squash"}), rig)
    with pytest.raises(ValueError, match="field 'sigma'"):
        springskin.Graph(doc(sigma=0.0), rig)
    with pytest.raises(ValueError, match="field 'bulge'"):
        springskin.Graph(doc(bulge=2.0), rig)


def test_bad_operator_objects_are_refused(ops, limb):
    _args, rig = limb
    for bad in ("contact", 128, object(), ops._core):
        with pytest.raises(TypeError, match="implicit_operators: expected a "
                                            "springskin.ImplicitOperators, got "):
            springskin.Deformer(rig, method="implicit", implicit_operators=bad)
    # the private type checks its argument too
    with pytest.raises(TypeError, match="implicit_operators: expected a "
                                        "springskin._core.ImplicitOperators, got str"):
        springskin._core.Deformer(rig._core, "implicit", "cpu", None, None, None, None, "x")
    for bad in (True, 64.0, "64"):
        with pytest.raises(TypeError, match="resolution: expected an integer, got "):
            springskin.ImplicitOperators(bad)
    for bad in (0, 7, 513, -1, 1 << 70):
        with pytest.raises(ValueError, match=r"resolution: expected an integer in \[8, 512\]"):
            springskin.ImplicitOperators(bad)
    with pytest.raises(TypeError, match="resolution: expected an int, got float"):
        springskin._core.ImplicitOperators(64.0)
    with pytest.raises(ValueError, match=r"resolution: expected an integer in \[8, 512\], "
                                         r"got 4"):
        springskin._core.ImplicitOperators(4)


def test_a_deformer_keeps_its_operators_alive(limb):
    args, rig = limb
    ops = springskin.ImplicitOperators(resolution=32)
    assert ops.resolution == 32 and "32^3" in repr(ops)
    core = weakref.ref(ops)
    deformer = springskin.Deformer(rig, method="implicit", backend="cpu", implicit_operators=ops)
    del ops
    gc.collect()
    positions = deformer.deform(bend_pose(args, angle=1.0))
    assert np.isfinite(positions).all()
    del deformer
    gc.collect()
    assert core() is None, "the operators outlived their last deformer"


def test_gl_backend_gives_the_cpu_result(ops, limb):
    """The GL backend tracks in compute shaders with the CPU's arithmetic:
    the same positions as the CPU backend (within float32 DQS differences)."""
    args, rig = limb
    pose = bend_pose(args, angle=1.2)
    cpu = springskin.Deformer(rig, method="implicit", backend="cpu",
                              implicit_operators=ops).deform(pose)
    try:
        gl = springskin.Deformer(rig, method="implicit", backend="gl", implicit_operators=ops)
    except springskin.GLUnavailableError as exc:
        pytest.skip(f"no GL context: {exc}")
    assert np.abs(gl.deform(pose) - cpu).max() <= 1e-5 * _diagonal(args)


def test_bake_with_shared_operators(ops, tmp_path):
    """springskin.bake(implicit_operators=...) uses the given operators: the
    same bytes as a bake that builds its own; anything else is refused."""
    rig = springskin.load("/usr/share/assimp/models/X/BCN_Epileptic.X")
    own, shared = tmp_path / "own.pc2", tmp_path / "shared.pc2"
    springskin.bake(rig, own, frames=(0, 2), method="implicit", backend="cpu")
    springskin.bake(rig, shared, frames=(0, 2), method="implicit", backend="cpu",
                    implicit_operators=ops)
    assert own.read_bytes() == shared.read_bytes()
    with pytest.raises(TypeError, match="implicit_operators: expected a "
                                        "springskin.ImplicitOperators, got int"):
        springskin.bake(rig, tmp_path / "bad.pc2", frames=(0, 1), method="implicit",
                        implicit_operators=3)


def test_binding_carries_the_implicit_fields(ops, limb, tmp_path):
    """Rig.bind(implicit=True) (issue #20, Deliver 1): the fitted fields
    travel in the Binding and its file; an implicit deformer given it
    (made, loaded, or as a path) deforms to the bits of one that fits the
    fields itself; a cache made with implicit=True is reused, and one
    without implicit data is bound again."""
    args, rig = limb
    pose = bend_pose(args, angle=1.2)
    reference = springskin.Deformer(rig, method="implicit", backend="cpu",
                                    implicit_operators=ops).deform(pose)
    binding = rig.bind(implicit=True)
    assert binding.has_implicit and binding.implicit_current
    assert binding.implicit_field_count == 2 and binding.implicit_seconds > 0
    path = tmp_path / "limb.bind"
    binding.save(path)
    loaded = springskin.load_binding(path, rig)
    assert loaded.has_implicit and loaded.implicit_current
    assert loaded.implicit_field_count == 2 and loaded.implicit_seconds == 0
    for given in (binding, loaded, path):
        out = springskin.Deformer(rig, method="implicit", backend="cpu", binding=given,
                                  implicit_operators=ops).deform(pose)
        assert out.tobytes() == reference.tobytes()
    plain = rig.bind()
    assert not plain.has_implicit and not plain.implicit_current
    assert plain.implicit_field_count == 0
    cache = tmp_path / "cache.bind"
    plain.save(cache)
    first = rig.bind(cache=cache, implicit=True)
    assert not first.reused and first.has_implicit
    again = rig.bind(cache=cache, implicit=True)
    assert again.reused and again.implicit_current
    assert rig.bind(cache=cache).reused   # implicit data do no harm without implicit=True
    with pytest.raises(TypeError, match="implicit: expected a bool, got int"):
        rig.bind(implicit=1)


def test_bake_with_an_implicit_binding(ops, tmp_path):
    """springskin.bake(binding=...) with implicit data: the bytes of a bake
    that fits the fields itself."""
    rig = springskin.load("/usr/share/assimp/models/X/BCN_Epileptic.X")
    binding = rig.bind(implicit=True)
    assert binding.has_implicit and binding.implicit_field_count > 0
    own, bound = tmp_path / "own.pc2", tmp_path / "bound.pc2"
    springskin.bake(rig, own, frames=(0, 2), method="implicit", backend="cpu",
                    implicit_operators=ops)
    springskin.bake(rig, bound, frames=(0, 2), method="implicit", backend="cpu",
                    implicit_operators=ops, binding=binding)
    assert own.read_bytes() == bound.read_bytes()
