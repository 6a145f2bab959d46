"""Property tests (hypothesis) of Rig and Deformer.deform over dtypes, byte
orders, strides and shapes, against linear blend skinning and dual
quaternion skinning written here in numpy (float64), independently of the
core.

References:
- LBS (Magnenat-Thalmann et al. 1988; Blender's armature_deform):
  v' = sum_i w_i S_i v / sum_i w_i, v' = v when sum_i w_i <= 1e-4.
- DQS (Kavan et al. 2008, as Blender's Preserve Volume for rigid bones):
  each bone's unit dual quaternion (q, 1/2 (0, t) q); per vertex a weighted
  sum whose terms are negated when q points away from the running sum;
  normalized by |q|; v' = R(q) v + 2 d q*. Here only rigid skinning
  matrices are generated (Blender's separate scale matrices are not
  modelled), with bone rotations within 80 degrees of the identity, so that
  every pair of bones is less than 180 degrees apart and the sign decisions
  are far from a tie.
Each mesh is deformed in rig space through its object matrix O:
v' = inverse(O) blend(O v).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import springskin

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

FLOAT_DTYPES = ["<f4", ">f4", "<f8", ">f8"]
INT_DTYPES = ["<i4", ">i4", "<i8", ">i8", "<i2", "<u2", ">u4", "u1"]
SIGNED_INT_DTYPES = [d for d in INT_DTYPES if "i" in d]  # parents hold -1
LAYOUTS = ["C", "F", "strided", "reversed"]


# --- numpy references ----------------------------------------------------------

def normalized_weights(weights):
    total = weights.sum(axis=1, keepdims=True)
    keep = total > 1e-4
    return np.where(keep, weights / np.where(keep, total, 1.0), 0.0), keep[:, 0]


def to_homogeneous(p):
    return np.concatenate([p, np.ones((len(p), 1))], axis=1)


def lbs_reference(positions, indices, weights, skinning, object_matrix):
    w, weighted = normalized_weights(weights)
    rig_space = to_homogeneous(positions) @ object_matrix.T
    blended = np.einsum("vk,vkij->vij", w, skinning[indices])
    moved = np.einsum("vij,vj->vi", blended, rig_space)
    back = moved @ np.linalg.inv(object_matrix).T
    return np.where(weighted[:, None], back[:, :3], positions)


def quat_mul(a, b):
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def quat_matrix(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def dqs_reference(positions, indices, weights, quats, translations, object_matrix):
    w, weighted = normalized_weights(weights)
    dual = 0.5 * quat_mul(np.concatenate([np.zeros((len(quats), 1)), translations], axis=1),
                          quats)
    rig_space = to_homogeneous(positions) @ object_matrix.T
    inverse_object = np.linalg.inv(object_matrix)
    out = positions.copy()
    for v in range(len(positions)):
        if not weighted[v]:
            continue
        q = np.zeros(4)
        d = np.zeros(4)
        for k in range(indices.shape[1]):
            b = indices[v, k]
            s = -w[v, k] if q @ quats[b] < 0.0 else w[v, k]
            q += s * quats[b]
            d += s * dual[b]
        norm = np.linalg.norm(q)
        q, d = q / norm, d / norm
        translation = 2.0 * quat_mul(d, q * np.array([1, -1, -1, -1]))[1:]
        moved = quat_matrix(q) @ rig_space[v, :3] + translation
        out[v] = (inverse_object @ np.append(moved, 1.0))[:3]
    return out


# --- generated rigs ----------------------------------------------------------

def random_rotation(rng, max_angle):
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0.0, max_angle)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def rigid_matrix(q, t):
    m = np.eye(4)
    m[:3, :3] = quat_matrix(q)
    m[:3, 3] = t
    return m


def random_rig(rng, vertices, bones, influences, faces):
    positions = rng.uniform(-10.0, 10.0, size=(vertices, 3))
    triangles = rng.integers(0, vertices, size=(faces, 3))
    parents = np.array([rng.integers(-1, b) if b else -1 for b in range(bones)])
    bind = np.array([rigid_matrix(random_rotation(rng, np.pi), rng.uniform(-5, 5, 3))
                     for _ in range(bones)])
    indices = rng.integers(0, bones, size=(vertices, influences))
    weights = rng.uniform(0.05, 1.0, size=(vertices, influences))
    weights[rng.random(size=weights.shape) < 0.25] = 0.0  # zero entries, some vertices unweighted
    object_matrix = rigid_matrix(random_rotation(rng, np.pi), rng.uniform(-3, 3, 3))
    return dict(positions=positions, triangles=triangles, parents=parents, bind_matrices=bind,
                weight_indices=indices, weight_values=weights, object_matrix=object_matrix)


def relayout(array, dtype, layout):
    """The same values with another dtype, byte order and memory layout."""
    a = np.asarray(array).astype(np.dtype(dtype))
    if layout == "C":
        return np.ascontiguousarray(a)
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "strided":
        every_other = tuple(slice(None, None, 2) for _ in a.shape)
        big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
        big[every_other] = a
        return big[every_other]
    if layout == "reversed":
        flipped = tuple(slice(None, None, -1) for _ in a.shape)
        return np.ascontiguousarray(a[flipped])[flipped]
    raise AssertionError(layout)


def canonical(args):
    """The arrays as the core stores them: float32 / int32, C order."""
    out = {}
    for key, value in args.items():
        value = np.asarray(value)
        out[key] = np.ascontiguousarray(value, np.float32 if value.dtype.kind == "f" else np.int32)
    return out


layouts = st.tuples(st.sampled_from(FLOAT_DTYPES), st.sampled_from(LAYOUTS))
index_layouts = st.tuples(st.sampled_from(INT_DTYPES), st.sampled_from(LAYOUTS))
signed_index_layouts = st.tuples(st.sampled_from(SIGNED_INT_DTYPES), st.sampled_from(LAYOUTS))
sizes = st.tuples(st.integers(1, 40), st.integers(1, 6), st.integers(1, 4), st.integers(0, 20))


def build(args, data):
    """Rig arguments with every array in a drawn dtype and layout."""
    out = {}
    for key, value in args.items():
        if key == "parents":
            dtype, layout = data.draw(signed_index_layouts)
        elif value.dtype.kind == "i":
            dtype, layout = data.draw(index_layouts)
        else:
            dtype, layout = data.draw(layouts)
        out[key] = relayout(value, dtype, layout)
    return out


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), size=sizes, data=st.data())
def test_lbs_matches_numpy_for_any_dtype_and_layout(seed, size, data):
    rng = np.random.default_rng(seed)
    args = random_rig(rng, *size)
    bones = size[1]
    skinning = np.tile(np.eye(4), (bones, 1, 1))
    skinning[:, :3, :] = rng.uniform(-2.0, 2.0, size=(bones, 3, 4))  # any affine map
    exact = canonical(dict(args, skinning=skinning))

    varied = build(args, data)
    rig = springskin.Rig(**varied)
    deformer = springskin.Deformer(rig, method="lbs", backend="cpu")
    result = deformer.deform(relayout(skinning, *data.draw(layouts)))
    assert result.dtype == np.float32 and result.shape == (size[0], 3)
    assert result.flags.c_contiguous

    reference = lbs_reference(exact["positions"].astype(np.float64), exact["weight_indices"],
                              exact["weight_values"].astype(np.float64),
                              exact["skinning"].astype(np.float64),
                              exact["object_matrix"].astype(np.float64))
    scale = 1.0 + np.abs(reference).max()
    np.testing.assert_allclose(result, reference, rtol=0, atol=2e-5 * scale)

    # bit for bit the result of the canonical float32 / int32 C-ordered input
    plain = springskin.Rig(**{k: v for k, v in exact.items() if k != "skinning"})
    assert plain.hash == rig.hash
    again = springskin.Deformer(plain, method="lbs", backend="cpu").deform(exact["skinning"])
    np.testing.assert_array_equal(result, again)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), size=sizes, data=st.data())
def test_dqs_matches_numpy_for_any_dtype_and_layout(seed, size, data):
    rng = np.random.default_rng(seed)
    args = random_rig(rng, *size)
    bones = size[1]
    quats = np.array([random_rotation(rng, np.radians(80.0)) for _ in range(bones)])
    translations = rng.uniform(-3.0, 3.0, size=(bones, 3))
    skinning = np.array([rigid_matrix(q, t) for q, t in zip(quats, translations)])
    exact = canonical(dict(args, skinning=skinning))

    rig = springskin.Rig(**build(args, data))
    deformer = springskin.Deformer(rig, method="dqs", backend="cpu")
    result = deformer.deform(relayout(skinning, *data.draw(layouts)))

    reference = dqs_reference(exact["positions"].astype(np.float64), exact["weight_indices"],
                              exact["weight_values"].astype(np.float64), quats,
                              exact["skinning"][:, :3, 3].astype(np.float64),
                              exact["object_matrix"].astype(np.float64))
    scale = 1.0 + np.abs(reference).max()
    np.testing.assert_allclose(result, reference, rtol=0, atol=2e-5 * scale)


@SETTINGS
@given(bones=st.integers(1, 5),
       shape=st.lists(st.integers(0, 6), min_size=0, max_size=4).map(tuple))
def test_any_wrong_skinning_shape_is_reported(bones, shape):
    if shape == (bones, 4, 4):
        return
    rig = springskin.Rig(np.zeros((1, 3)), None, np.full(bones, -1),
                         np.tile(np.eye(4), (bones, 1, 1)), np.zeros((1, 1), np.int32),
                         np.ones((1, 1)))
    deformer = springskin.Deformer(rig, backend="cpu")
    with pytest.raises(ValueError) as e:
        deformer.deform(np.zeros(shape))
    if len(shape) == 4:  # read as a stack of poses (issue #17)
        assert str(e.value) == (f"skinning_matrices: expected shape (B, 4, 4) = ({bones}, 4, "
                                f"4) or a stack (F, B, 4, 4) = (F, {bones}, 4, 4), got {shape}")
    else:
        assert str(e.value) == (f"skinning_matrices: expected shape (B, 4, 4) = ({bones}, 4, "
                                f"4), got {shape}")


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), layout=layouts)
def test_out_and_object_matrices_in_any_layout(seed, layout):
    rng = np.random.default_rng(seed)
    args = random_rig(rng, 12, 3, 2, 6)
    rig = springskin.Rig(**args)
    deformer = springskin.Deformer(rig, method="lbs", backend="cpu")
    skinning = np.tile(np.eye(4), (3, 1, 1))
    skinning[:, :3, :] = rng.uniform(-2.0, 2.0, size=(3, 3, 4))
    moved = rigid_matrix(random_rotation(rng, np.pi), rng.uniform(-1, 1, 3))[None]
    expected = deformer.deform(skinning.astype(np.float32), moved.astype(np.float32))
    out = np.empty((12, 3), np.float32)
    got = deformer.deform(relayout(skinning, *layout), relayout(moved, *layout), out=out)
    assert got is out
    np.testing.assert_array_equal(out, expected)
    # object matrices at the frame: v' = inverse(O(t)) blend(O v)
    exact = canonical(dict(args, skinning=skinning, moved=moved))
    w, weighted = normalized_weights(exact["weight_values"].astype(np.float64))
    rig_space = to_homogeneous(exact["positions"].astype(np.float64)) @ \
        exact["object_matrix"].astype(np.float64).T
    blended = np.einsum("vk,vkij->vij", w, exact["skinning"].astype(np.float64)[
        exact["weight_indices"]])
    posed = np.einsum("vij,vj->vi", blended, rig_space) @ \
        np.linalg.inv(exact["moved"][0].astype(np.float64)).T
    reference = np.where(weighted[:, None], posed[:, :3], exact["positions"])
    np.testing.assert_allclose(out, reference, rtol=0, atol=2e-5 * (1 + np.abs(reference).max()))
