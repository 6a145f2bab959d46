"""Validation of the springskin Python API: every wrong argument raises the
documented exception with a message naming the argument and what was
expected."""

import os
import re
import warnings

import numpy as np
import pytest

import springskin
from api_helpers import BCN, MODELS, limb_arrays, needs_models


@pytest.fixture(scope="module")
def limb():
    return limb_arrays()


@pytest.fixture(scope="module")
def rig(limb):
    return springskin.Rig(**limb)


@pytest.fixture(scope="module")
def deformer(rig):
    return springskin.Deformer(rig, method="lbs", backend="cpu")


def make(limb, **changes):
    args = dict(limb)
    args.update(changes)
    return springskin.Rig(**args)


# --- Rig from arrays --------------------------------------------------------

def test_positions_wrong_shape_names_argument_and_shape(limb):
    with pytest.raises(ValueError) as e:
        make(limb, positions=np.zeros((96, 2)))
    assert str(e.value) == "positions: expected shape (V, 3), got (96, 2)"


def test_positions_wrong_ndim(limb):
    with pytest.raises(ValueError, match=re.escape("positions: expected shape (V, 3), got (288,)")):
        make(limb, positions=np.zeros(288))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.complex64, object])
def test_positions_wrong_dtype_kind_is_type_error(limb, dtype):
    with pytest.raises(TypeError) as e:
        make(limb, positions=np.zeros((96, 3), dtype=dtype))
    assert str(e.value).startswith("positions: expected floating-point values (float32 or "
                                   "float64), got an array of dtype ")


def test_positions_from_nested_lists_of_ints_is_type_error(limb):
    with pytest.raises(TypeError, match=r"^positions: .*got list \(dtype int64\)"):
        make(limb, positions=[[0, 0, 0]] * 96)


def test_positions_not_an_array(limb):
    with pytest.raises(TypeError, match=r"^positions: .*got NoneType"):
        make(limb, positions=None)
    with pytest.raises(TypeError, match=r"^positions: .*got str"):
        make(limb, positions="abc")


def test_ragged_positions_are_type_error(limb):
    with pytest.raises(TypeError, match=r"^positions: expected an array of shape \(V, 3\), got list"):
        make(limb, positions=[[0.0, 0.0, 0.0], [1.0, 2.0]])


@pytest.mark.parametrize("value,text", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_positions_non_finite_names_index(limb, value, text):
    positions = limb["positions"].copy()
    positions[17, 2] = value
    with pytest.raises(ValueError) as e:
        make(limb, positions=positions)
    assert str(e.value).startswith(f"positions: non-finite value ({text}) at [17, 2]")


def test_float64_beyond_float32_range_is_non_finite(limb):
    positions = limb["positions"].copy()
    positions[3, 0] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy cast warning either
        with pytest.raises(ValueError) as e:
            make(limb, positions=positions)
    assert str(e.value) == ("positions: value 1e+300 at [3, 0] is beyond SSK_MAX_MAGNITUDE "
                            "(|x| <= 1e15: larger values overflow float32 in the kernels)")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_finite_values_are_refused(limb, dtype):
    """Issue #19: 3e38 is a float32, but the kernels would overflow on it."""
    positions = limb["positions"].astype(dtype)
    positions[5, 1] = 3e38
    with pytest.raises(ValueError, match=r"^positions: value 3e\+38 at \[5, 1\] is beyond "
                                         r"SSK_MAX_MAGNITUDE"):
        make(limb, positions=positions)
    rig = make(limb)
    pose = np.repeat(np.eye(4, dtype=dtype)[None], rig.bone_count, axis=0)
    pose[1, 0, 3] = 3e38
    deformer = springskin.Deformer(rig, method="lbs", backend="cpu")
    with pytest.raises(ValueError, match=r"^skinning_matrices: value 3e\+38 at \[1, 0, 3\]"):
        deformer.deform(pose)


def test_empty_positions(limb):
    with pytest.raises(ValueError, match=r"^positions: expected 1 to \d+ vertices"):
        make(limb, positions=np.zeros((0, 3)))


def test_triangle_index_out_of_range(limb):
    triangles = limb["triangles"].copy()
    triangles[5, 1] = 96
    with pytest.raises(ValueError) as e:
        make(limb, triangles=triangles)
    assert str(e.value) == ("triangles: entry [5, 1] = 96 is out of range: expected a vertex "
                            "index in [0, V) = [0, 96)")


def test_negative_triangle_index(limb):
    triangles = limb["triangles"].copy()
    triangles[0, 0] = -1
    with pytest.raises(ValueError, match=r"^triangles: entry \[0, 0\] = -1 is out of range"):
        make(limb, triangles=triangles)


def test_huge_triangle_index_does_not_wrap(limb):
    triangles = limb["triangles"].copy()
    triangles[2, 2] = 2**32 + 1  # would wrap to 1 as int32
    with pytest.raises(ValueError, match=r"entry \[2, 2\] = 4294967297 is out of range"):
        make(limb, triangles=triangles)


def test_triangles_float_dtype_is_type_error(limb):
    with pytest.raises(TypeError, match=r"^triangles: expected integer indices \(int32 or int64\), "
                                        r"got an array of dtype float64"):
        make(limb, triangles=limb["triangles"].astype(np.float64))


def test_triangles_wrong_shape(limb):
    with pytest.raises(ValueError, match=re.escape("triangles: expected shape (F, 3), got (60, 4)")):
        make(limb, triangles=np.zeros((60, 4), dtype=np.int32))


def test_triangles_none_is_a_point_cloud(limb):
    rig = make(limb, triangles=None)
    assert rig.meshes[0].triangles.shape == (0, 3)


def test_parent_out_of_range(limb):
    with pytest.raises(ValueError) as e:
        make(limb, parents=np.array([-1, 0, 3]))
    assert str(e.value) == ("parents: entry [2] = 3 is out of range: expected -1 (a root) or a "
                            "bone index in [0, B) = [0, 3)")


def test_parent_cycle_is_value_error_with_status(limb):
    with pytest.raises(ValueError) as e:
        make(limb, parents=np.array([2, 0, 1]))
    assert str(e.value).startswith("parents: ")
    assert "cycle" in str(e.value)
    assert e.value.status == "SSK_ERROR_PARENT_CYCLE"


def test_bind_matrices_shape_binds_b(limb):
    with pytest.raises(ValueError) as e:
        make(limb, bind_matrices=np.zeros((3, 3, 4)))
    assert str(e.value) == "bind_matrices: expected shape (B, 4, 4) = (3, 4, 4), got (3, 3, 4)"


def test_weight_values_shape_must_match_indices(limb):
    with pytest.raises(ValueError) as e:
        make(limb, weight_values=np.ones((96, 3)))
    assert str(e.value) == "weight_values: expected shape (V, K) = (96, 2), got (96, 3)"


def test_weight_indices_rows_must_match_positions(limb):
    with pytest.raises(ValueError) as e:
        make(limb, weight_indices=np.zeros((95, 2), dtype=np.int32))
    assert str(e.value) == "weight_indices: expected shape (V, K) = (96, K), got (95, 2)"


def test_negative_weight(limb):
    weights = limb["weight_values"].copy()
    weights[4, 1] = -0.25
    with pytest.raises(ValueError) as e:
        make(limb, weight_values=weights)
    assert str(e.value) == ("weight_values: entry [4, 1] = -0.25 is negative (skin weights "
                            "must be >= 0)")


def test_weighted_bone_index_out_of_range(limb):
    index = limb["weight_indices"].copy()
    weights = limb["weight_values"].copy()
    index[40, 0] = 7
    weights[40, 0] = 0.5
    with pytest.raises(ValueError, match=r"^weight_indices: entry \[40, 0\] = 7 is out of range: "
                                         r"expected a bone index in \[0, B\) = \[0, 3\)"):
        make(limb, weight_indices=index, weight_values=weights)


def test_padding_index_with_zero_weight_is_accepted(limb):
    index = np.concatenate([limb["weight_indices"], np.full((96, 1), -1)], axis=1)
    index[0, 2] = 2**40  # any index where the weight is 0
    weights = np.concatenate([limb["weight_values"], np.zeros((96, 1))], axis=1)
    rig = make(limb, weight_indices=index, weight_values=weights)
    assert rig.meshes[0].influence_count == 3
    assert rig.max_influences == 2


def test_too_many_influences(limb):
    with pytest.raises(ValueError, match=r"^weight_indices: expected at most 64 influences"):
        make(limb, weight_indices=np.zeros((96, 65), dtype=np.int32),
             weight_values=np.zeros((96, 65)))


def test_bone_names_count_duplicates_and_types(limb):
    with pytest.raises(ValueError, match=re.escape("bone_names: expected B = 3 names (one per bone "
                                                   "of parents), got 2")):
        make(limb, bone_names=["a", "b"])
    with pytest.raises(ValueError, match=r"^bone_names\[2\]: name 'a' is already bone_names\[0\]"):
        make(limb, bone_names=["a", "b", "a"])
    with pytest.raises(TypeError, match=r"^bone_names\[1\]: expected a str, got int"):
        make(limb, bone_names=["a", 1, "c"])
    with pytest.raises(TypeError, match=r"^bone_names: expected a sequence"):
        make(limb, bone_names="abc")


def test_object_matrix_and_heads_shapes(limb):
    with pytest.raises(ValueError, match=re.escape("object_matrix: expected shape (4, 4), got (3, 3)")):
        make(limb, object_matrix=np.eye(3))
    with pytest.raises(ValueError, match=re.escape("heads: expected shape (B, 3) = (3, 3), got (2, 3)")):
        make(limb, heads=np.zeros((2, 3)))


def test_mesh_name_type(limb):
    with pytest.raises(TypeError, match=r"^mesh_name: expected a str or None, got int"):
        make(limb, mesh_name=3)


# --- Deformer ---------------------------------------------------------------

def test_deform_wrong_shape_message(deformer):
    with pytest.raises(ValueError) as e:
        deformer.deform(np.zeros((3, 4)))
    assert str(e.value) == "skinning_matrices: expected shape (B, 4, 4) = (3, 4, 4), got (3, 4)"
    with pytest.raises(ValueError, match=re.escape("= (3, 4, 4), got (4, 4, 4)")):
        deformer.deform(np.zeros((4, 4, 4)))


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.bool_, np.complex128, object])
def test_deform_wrong_dtype_kind(deformer, dtype):
    with pytest.raises(TypeError, match=r"^skinning_matrices: expected floating-point values"):
        deformer.deform(np.zeros((3, 4, 4), dtype=dtype))


def test_deform_nan_names_index(deformer, rig):
    pose = rig.rest_pose()
    pose[1, 2, 3] = np.nan
    with pytest.raises(ValueError) as e:
        deformer.deform(pose)
    assert str(e.value).startswith("skinning_matrices: non-finite value (nan) at [1, 2, 3]")


def test_object_matrices_shape_and_singular(deformer, rig):
    with pytest.raises(ValueError) as e:
        deformer.deform(rig.rest_pose(), object_matrices=np.eye(4))
    assert str(e.value) == "object_matrices: expected shape (M, 4, 4) = (1, 4, 4), got (4, 4)"
    with pytest.raises(ValueError) as e:
        deformer.deform(rig.rest_pose(), object_matrices=np.zeros((1, 4, 4)))
    assert e.value.status == "SSK_ERROR_NONFINITE"
    assert "singular" in str(e.value)


def test_out_argument_checks(deformer, rig):
    pose = rig.rest_pose()
    with pytest.raises(TypeError, match=r"^out: expected a native float32 array .*float64"):
        deformer.deform(pose, out=np.zeros((96, 3)))
    with pytest.raises(TypeError, match=r"^out: expected a C-contiguous float32 numpy array"):
        deformer.deform(pose, out=[[0.0] * 3] * 96)
    with pytest.raises(ValueError, match=re.escape("out: expected shape (V, 3) = (96, 3), got (95, 3)")):
        deformer.deform(pose, out=np.zeros((95, 3), np.float32))
    with pytest.raises(ValueError, match=r"^out: expected a C-contiguous"):
        deformer.deform(pose, out=np.zeros((3, 96), np.float32).T)
    readonly = np.zeros((96, 3), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match=r"^out: .* is read-only"):
        deformer.deform(pose, out=readonly)
    swapped = np.zeros((96, 3), ">f4")
    with pytest.raises(TypeError, match=r"^out: expected a native float32"):
        deformer.deform(pose, out=swapped)


def test_normals_before_deform(rig):
    fresh = springskin.Deformer(rig, backend="cpu")
    with pytest.raises(ValueError, match=r"^normals: no deform yet \(call deform first\)$"):
        fresh.normals()
    with pytest.raises(ValueError, match=r"^max_displacement: no deform yet"):
        fresh.max_displacement(np.zeros((96, 3)))


def test_normals_after_a_failed_deform(rig):
    deformer = springskin.Deformer(rig, backend="cpu")
    deformer.deform(rig.rest_pose())
    with pytest.raises(ValueError):
        deformer.deform(rig.rest_pose(), object_matrices=np.zeros((1, 4, 4)))
    with pytest.raises(ValueError, match=r"^normals: the last deform failed \(call deform again"):
        deformer.normals()
    deformer.deform(rig.rest_pose())
    assert deformer.normals().shape == (96, 3)


def test_max_displacement_reference_shape(deformer, rig):
    deformer.deform(rig.rest_pose())
    with pytest.raises(ValueError, match=re.escape("reference: expected shape (V, 3) = (96, 3), got (3,)")):
        deformer.max_displacement(np.zeros(3))


def test_frame_argument(deformer, rig):
    with pytest.raises(ValueError, match="frame: expected a finite number"):
        deformer.deform(rig.rest_pose(), frame=float("nan"))
    with pytest.raises(TypeError, match="frame: expected a number or None, got str"):
        deformer.deform(rig.rest_pose(), frame="1")


def test_deformer_arguments(rig):
    with pytest.raises(ValueError) as e:
        springskin.Deformer(rig, method="blend")
    assert str(e.value).startswith("method: unknown value 'blend' (expected lbs, dqs, rigid, irs")
    with pytest.raises(TypeError, match="method: expected a string"):
        springskin.Deformer(rig, method=1)
    with pytest.raises(ValueError, match=r"^backend: unknown value 'cuda' \(expected auto, cpu or gl; any case\)"):
        springskin.Deformer(rig, backend="cuda")
    with pytest.raises(ValueError, match="method, graph: give one of them"):
        springskin.Deformer(rig, method="lbs", graph={"version": 1})
    with pytest.raises(TypeError, match=r"^rig: expected a springskin.Rig, got ndarray"):
        springskin.Deformer(np.zeros(3))
    with pytest.raises(TypeError, match=r"^binding: expected a springskin.Binding, got int"):
        springskin.Deformer(rig, method="rigid", binding=3)


# --- graphs -----------------------------------------------------------------

def graph_doc(**node):
    skin = {"id": "skin", "type": "skinning", "method": "lbs"}
    skin.update(node)
    return {"version": 1, "nodes": [skin, {"id": "out", "type": "output"}],
            "edges": [{"from": "skin", "to": "out"}]}


def test_invalid_graph_names_node_and_field(rig):
    with pytest.raises(ValueError) as e:
        springskin.Deformer(rig, graph=graph_doc(method="xyz"), backend="cpu")
    assert e.value.status == "SSK_ERROR_GRAPH"
    assert str(e.value).startswith("graph: node 'skin': field 'method': unknown method 'xyz'")


def test_graph_unknown_bone(rig):
    doc = graph_doc(method="irs")
    doc["nodes"].insert(1, {"id": "r", "type": "radial", "bones": ["nope"]})
    doc["edges"] = [{"from": "skin", "to": "r"}, {"from": "r", "to": "out"}]
    with pytest.raises(ValueError, match="node 'r': field 'bones': unknown bone 'nope'"):
        springskin.Graph(doc, rig)


def test_graph_nan_and_non_json_values(rig):
    with pytest.raises(ValueError, match=r"^graph: .*NaN and infinity are not JSON"):
        springskin.Graph(graph_doc(method="irs", parent_influence=float("nan")), rig)
    with pytest.raises(TypeError, match=r"^graph: a value of type object is not JSON"):
        springskin.Graph(graph_doc(method="irs", parent_influence=object()), rig)
    # numpy scalars are JSON numbers
    graph = springskin.Graph(graph_doc(method="irs", parent_influence=np.float32(0.25)), rig)
    assert graph.to_dict()["nodes"][0]["parent_influence"] == 0.25


def test_graph_source_types(rig, tmp_path):
    with pytest.raises(TypeError, match=r"^graph: expected a dict, a path or a springskin.Graph, got int"):
        springskin.Graph(3, rig)
    with pytest.raises(FileNotFoundError):
        springskin.Graph(str(tmp_path / "missing.json"), rig)
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1,')
    with pytest.raises(ValueError, match=r"JSON"):
        springskin.Graph(bad, rig)


# --- files ------------------------------------------------------------------

def test_load_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        springskin.load(tmp_path / "nothing.fbx")
    assert e.value.filename == str(tmp_path / "nothing.fbx")
    with pytest.raises(IsADirectoryError):
        springskin.load(tmp_path)
    with pytest.raises(TypeError, match=r"^path: expected a path \(str or os.PathLike\), got int"):
        springskin.load(3)


def test_load_garbage_is_springskin_error(tmp_path):
    junk = tmp_path / "junk.fbx"
    junk.write_bytes(b"\x00garbage" * 50)
    with pytest.raises(springskin.SpringSkinError) as e:
        springskin.load(junk)
    assert e.value.status == "SSK_ERROR_IMPORT"
    assert isinstance(e.value, RuntimeError)


@needs_models
def test_load_file_without_skeleton():
    with pytest.raises(springskin.SpringSkinError, match="no mesh has bones") as e:
        springskin.load(os.path.join(MODELS, "X", "test.x"))
    assert e.value.status == "SSK_ERROR_NO_SKELETON"


def test_load_binding_errors(rig, tmp_path):
    with pytest.raises(FileNotFoundError):
        springskin.load_binding(tmp_path / "none.bind")
    junk = tmp_path / "junk.bind"
    junk.write_bytes(b"not a binding file at all")
    with pytest.raises(OSError) as e:
        springskin.load_binding(junk, rig)
    assert e.value.status == "SSK_ERROR_IO"


def test_bind_parameter_errors(rig):
    with pytest.raises(ValueError, match=r"^method: unknown value 'closest'"):
        rig.bind(method="closest")
    with pytest.raises(ValueError, match=r"^smooth_iterations: expected an integer in \[0, 1000\], got -1"):
        rig.bind(smooth_iterations=-1)
    with pytest.raises(ValueError, match=r"^max_distance: expected a number >= 0"):
        rig.bind(max_distance=-1.0)
    with pytest.raises(ValueError) as e:
        rig.bind(max_distance=1e-6)
    assert e.value.status == "SSK_ERROR_BIND"


# --- animation and bake ------------------------------------------------------

def test_array_rig_has_no_animation(rig, tmp_path):
    assert rig.animation is None and rig.animations == ()
    with pytest.raises(ValueError, match=r"^sample: this rig was built from arrays"):
        rig.skinning_matrices(0)
    with pytest.raises(ValueError, match=r"^bake: this rig was built from arrays"):
        springskin.bake(rig, tmp_path / "x.pc2")


@needs_models
def test_sample_and_bake_argument_errors(tmp_path):
    bcn = springskin.load(BCN)
    with pytest.raises(ValueError, match=r"^animation: expected an integer in \[0, 0\], got 1"):
        bcn.skinning_matrices(0, animation=1)
    with pytest.raises(ValueError, match=r"^fps: expected a number > 0"):
        bcn.skinning_matrices(0, fps=0)
    with pytest.raises(TypeError, match=r"^frame: expected a real number, got str"):
        bcn.skinning_matrices("0")
    with pytest.raises(ValueError) as e:
        springskin.bake(bcn, tmp_path / "x.pc2", frames=(0, 500), backend="cpu")
    assert e.value.status == "SSK_ERROR_FRAME_RANGE"
    with pytest.raises(ValueError, match=r"^frames: first frame 5 comes after last frame 2"):
        springskin.bake(bcn, tmp_path / "x.pc2", frames=(5, 2))
    with pytest.raises(ValueError, match=r"^frames: expected a range with step 1"):
        springskin.bake(bcn, tmp_path / "x.pc2", frames=range(0, 10, 2))
    with pytest.raises(ValueError, match=r"^bake: output '.*x.xyz': unknown format '.xyz'") as e:
        springskin.bake(bcn, tmp_path / "x.xyz", backend="cpu")
    assert e.value.status == "SSK_ERROR_INVALID_ARGUMENT"
    with pytest.raises(ValueError, match=r"^bake: output '.*x.pc2' cannot hold normals") as e:
        springskin.bake(bcn, tmp_path / "x.pc2", frames=(0, 1), backend="cpu", normals=True)
    with pytest.raises(TypeError, match=r"^normals: expected a bool, got int"):
        springskin.bake(bcn, tmp_path / "x.abc", normals=1)
    assert not os.listdir(tmp_path)  # nothing left behind


def test_status_attribute_on_every_core_error(deformer):
    with pytest.raises(ValueError) as e:
        deformer.deform(np.zeros((3, 4, 4), np.float32), object_matrices=np.zeros((1, 4, 4)))
    assert e.value.status.startswith("SSK_ERROR_")


def test_exception_hierarchy():
    assert issubclass(springskin.SpringSkinError, RuntimeError)
    for cls in (springskin.GLError, springskin.GLUnavailableError, springskin.SpringDivergedError):
        assert issubclass(cls, springskin.SpringSkinError)
    assert springskin.SpringSkinError.__module__ == "springskin"


def test_pose_with_wrong_bone_count_from_another_rig(deformer, limb):
    other = make(limb, parents=np.array([-1, 0, 1, 2]), bind_matrices=np.tile(np.eye(4), (4, 1, 1)),
                 heads=None, tails=None, bone_names=None)
    assert other.bone_count == 4
    with pytest.raises(ValueError, match=re.escape("= (3, 4, 4), got (4, 4, 4)")):
        deformer.deform(other.rest_pose())
