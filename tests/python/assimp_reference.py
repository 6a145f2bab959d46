"""An independent skinning reference from Assimp's own scene (numpy, float64).

Reads the JSON that tests/tools/assimp_dump writes (the raw aiScene of a
file imported with aiProcess_Triangulate | aiProcess_JoinIdenticalVertices)
and deforms the meshes that carry bones. Written from the conventions
below, not from SpringSkin's C code, so that the conformance test
(test_conformance_assimp.py) compares two implementations.

Conventions
-----------
- Matrices are 4x4, row-major, acting on column vectors (Assimp's a1..d4).
- Node global transform G(node, t): local transforms composed from the root.
  A node with a channel in the animation uses T @ R @ S of its keys sampled
  at ``t_ticks = t_seconds * ticks_per_second`` (0 ticks per second means
  25): positions and scales linearly interpolated, rotations by
  shortest-path slerp, clamped outside the key range; a kind of key the
  channel lacks comes from the node's static decomposition. Other nodes use
  their static mTransformation.
- Weights: per vertex, summed per bone. Bones that no node carries are
  dropped (as Blender does with vertex groups that name no bone); the rest
  are normalized by their total, and a vertex whose total is at most 1e-4
  stays at rest.
- LBS (Assimp's formula): ``world = sum_b w_b G(b, t) offset_b v``, returned
  in the mesh's object space at t: ``inverse(G(mesh, t)) @ world``.
- DQS: Blender 3.4's Armature modifier with Preserve Volume, blended in the
  armature space (see :meth:`AssimpReference.armature_node`): per bone
  ``mat4_to_dquat(basemat, P_b)`` with the pose matrix
  ``P_b(t) = inv(G(A,t)) G(b,t) offset_b inv(G(mesh,0)) G(A,0)`` and the
  rest matrix ``basemat = inv(G(A,0)) G(mesh,0) inv(offset_b)``; per vertex
  ``add_weighted_dq_dq`` in bone order (a weight is negated when its
  quaternion points away from the running sum), ``normalize_dq`` (scale
  matrices blended with identity for unscaled bones) and ``mul_v3m3_dq``;
  the vertex enters armature space through ``inv(G(A,0)) G(mesh,0)`` and
  leaves through ``inv(G(mesh,t)) G(A,t)``. The Blender functions are
  re-implemented from their published behavior (BLI math_rotation.c /
  math_matrix.c of Blender 3.4: quaternions from matrices by Mike Day's
  method, ``orthogonalize_m4`` around Y) in float64.
"""

import json

import numpy as np

WEIGHT_EPSILON = 1e-4
FBX_PIVOT_MARK = "_$AssimpFbx$_"


# --- quaternions (w, x, y, z) ----------------------------------------------
def quat_mul(a, b):
    """Hamilton product of (..., 4) arrays."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quat_conj(q):
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_to_matrix3(q):
    """Rotation matrix of a quaternion (normalized first)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def slerp(a, b, f):
    """Shortest-path spherical interpolation from a to b by f in [0, 1]."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cos = float(np.dot(a, b))
    if cos < 0.0:
        b = -b
        cos = -cos
    if 1.0 - cos > 1e-6:
        omega = np.arccos(min(cos, 1.0))
        s = np.sin(omega)
        return (np.sin((1.0 - f) * omega) * a + np.sin(f * omega) * b) / s
    return (1.0 - f) * a + f * b


def matrix3_to_quat_day(m):
    """Blender's mat3_normalized_to_quat_fast (Mike Day's method) on a math
    (row = output axis) 3x3 matrix: a canonical (w >= 0) quaternion, exact
    for rotations; for the non-orthogonal matrices DQS can meet, the same
    branch choice and arithmetic as Blender, and Blender's conditional
    normalization."""
    # Blender's mat[i][j] is column i, row j: b(i, j) = m[j, i].
    def b(i, j):
        return m[j, i]

    q = np.zeros(4)
    if b(2, 2) < 0.0:
        if b(0, 0) > b(1, 1):
            trace = 1.0 + b(0, 0) - b(1, 1) - b(2, 2)
            s = 2.0 * np.sqrt(trace)
            if b(1, 2) < b(2, 1):
                s = -s
            q[1] = 0.25 * s
            s = 1.0 / s
            q[0] = (b(1, 2) - b(2, 1)) * s
            q[2] = (b(0, 1) + b(1, 0)) * s
            q[3] = (b(2, 0) + b(0, 2)) * s
        else:
            trace = 1.0 - b(0, 0) + b(1, 1) - b(2, 2)
            s = 2.0 * np.sqrt(trace)
            if b(2, 0) < b(0, 2):
                s = -s
            q[2] = 0.25 * s
            s = 1.0 / s
            q[0] = (b(2, 0) - b(0, 2)) * s
            q[1] = (b(0, 1) + b(1, 0)) * s
            q[3] = (b(1, 2) + b(2, 1)) * s
    else:
        if b(0, 0) < -b(1, 1):
            trace = 1.0 - b(0, 0) - b(1, 1) + b(2, 2)
            s = 2.0 * np.sqrt(trace)
            if b(0, 1) < b(1, 0):
                s = -s
            q[3] = 0.25 * s
            s = 1.0 / s
            q[0] = (b(0, 1) - b(1, 0)) * s
            q[1] = (b(2, 0) + b(0, 2)) * s
            q[2] = (b(1, 2) + b(2, 1)) * s
        else:
            trace = 1.0 + b(0, 0) + b(1, 1) + b(2, 2)
            s = 2.0 * np.sqrt(trace)
            q[0] = 0.25 * s
            s = 1.0 / s
            q[1] = (b(1, 2) - b(2, 1)) * s
            q[2] = (b(2, 0) - b(0, 2)) * s
            q[3] = (b(0, 1) - b(1, 0)) * s
    if abs(np.dot(q, q) - 1.0) >= 0.0002 * 3:
        q /= np.linalg.norm(q)
    return q


def matrix4_to_quat_blender(m):
    """Blender's mat4_to_quat: columns of the 3x3 part normalized, negated
    when the determinant is negative, then Day's method."""
    m3 = np.array(m[:3, :3], dtype=np.float64)
    norms = np.linalg.norm(m3, axis=0)
    norms[norms == 0.0] = 1.0
    m3 = m3 / norms
    det = np.linalg.det(m3)
    if not np.isfinite(det):
        m3 = np.eye(3)
    elif det < 0.0:
        m3 = -m3
    return matrix3_to_quat_day(m3)


def orthogonalize_y(m):
    """Blender's orthogonalize_m4(m, 1): an orthonormal frame built around
    the Y column, each column scaled back to its original length."""
    m = np.array(m, dtype=np.float64)
    c = [m[:3, 0].copy(), m[:3, 1].copy(), m[:3, 2].copy()]
    size = [np.linalg.norm(v) for v in c]

    def normalized(v):
        n = np.linalg.norm(v)
        return v / n if n != 0.0 else v

    c[1] = normalized(c[1])
    if np.dot(c[1], c[0]) < 1.0:
        c[2] = normalized(np.cross(c[0], c[1]))
        c[0] = np.cross(c[1], c[2])
    elif np.dot(c[0], c[2]) < 1.0:
        c[0] = normalized(np.cross(c[1], c[2]))
        c[2] = np.cross(c[0], c[1])
    else:
        vec = np.array([c[1][1], c[1][2], c[1][0]])
        c[0] = normalized(np.cross(c[1], vec))
        c[2] = np.cross(c[0], c[1])
    for i in range(3):
        m[:3, i] = c[i] * size[i]
    return m


def mat4_to_dquat(basemat, mat):
    """Blender 3.4's mat4_to_dquat(dq, basemat, mat): returns (quat (4,),
    trans (4,), scale (4, 4) or None)."""
    base_rs = mat @ basemat
    size = np.linalg.norm(base_rs[:3, :3], axis=0)
    dscale = size - 1.0
    scale = None
    if np.linalg.det(mat) < 0.0 or np.dot(dscale, dscale) > 1e-4 ** 2:
        tmp = orthogonalize_y(base_rs)
        base_quat = matrix4_to_quat_blender(tmp)
        base_r = np.eye(4)
        base_r[:3, :3] = quat_to_matrix3(base_quat)
        base_r[:3, 3] = base_rs[:3, 3]
        base_inv = np.linalg.inv(basemat)
        r = base_r @ base_inv
        s = np.linalg.inv(base_r) @ base_rs
        scale = basemat @ s @ base_inv
    else:
        r = np.array(mat, dtype=np.float64)
    quat = matrix4_to_quat_blender(r)
    trans = 0.5 * quat_mul(np.concatenate([[0.0], r[:3, 3]]), quat)
    return quat, trans, scale


def decompose(m):
    """Assimp's aiMatrix4x4::Decompose: (position, rotation (w,x,y,z),
    scaling); the scaling is negated when the determinant is negative."""
    m = np.asarray(m, dtype=np.float64)
    position = m[:3, 3].copy()
    scaling = np.linalg.norm(m[:3, :3], axis=0)
    if np.linalg.det(m[:3, :3]) < 0.0:
        scaling = -scaling
    rot = m[:3, :3] / np.where(scaling == 0.0, 1.0, scaling)
    # Any exact conversion will do for a rotation matrix (the sign of a
    # quaternion does not change its matrix).
    return position, matrix3_to_quat_day(rot), scaling


def compose(position, rotation, scaling):
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix3(rotation) * np.asarray(scaling, dtype=np.float64)[None, :]
    m[:3, 3] = position
    return m


def sample_keys(keys, t, kind):
    """Keys (K, 1 + n) = [time, values...] sampled at tick t: clamped
    outside the key range, linear (or slerp for rotations) inside."""
    times = keys[:, 0]
    if t <= times[0] or len(times) == 1:
        return keys[0, 1:]
    if t >= times[-1]:
        return keys[-1, 1:]
    i = int(np.searchsorted(times, t, side="right")) - 1
    t0, t1 = times[i], times[i + 1]
    f = 0.0 if t1 <= t0 else (t - t0) / (t1 - t0)
    if kind == "rotation":
        return slerp(keys[i, 1:], keys[i + 1, 1:], f)
    return (1.0 - f) * keys[i, 1:] + f * keys[i + 1, 1:]


class _Mesh:
    __slots__ = ("index", "name", "node", "vertices", "bone_nodes", "offsets", "weights",
                 "deforms", "influence_order", "nodeless_bones")


class AssimpReference:
    """The reference of one dumped scene.

    Parameters
    ----------
    json_path : str
        The output of ``assimp_dump FILE OUT.json``.
    animation : int, default 0
        The animation sampled by :meth:`deform`.
    """

    def __init__(self, json_path, animation=0):
        with open(json_path, "r", encoding="utf-8") as f:
            scene = json.load(f)
        self.scene = scene
        nodes = scene["nodes"]
        self.node_names = [n["name"] for n in nodes]
        self.parents = np.array([n["parent"] for n in nodes], dtype=np.int64)
        self.local = np.array([np.reshape(n["transform"], (4, 4)) for n in nodes],
                              dtype=np.float64)
        # Assimp finds nodes by name depth-first: the first in pre-order.
        self.node_index = {}
        for i, name in enumerate(self.node_names):
            self.node_index.setdefault(name, i)
        mesh_node = {}
        for i, n in enumerate(nodes):
            for m in n["meshes"]:
                mesh_node.setdefault(m, i)
        # glTF 2.0 (3.7.3.3) and DirectX .x: the transform of a node that
        # references a skinned mesh is ignored, only the joints' transforms
        # apply; the mesh's vertices are in the scene's root space (in .x the
        # offsets map root-space vertices to bone space).
        source = scene.get("metadata", {}).get("SourceAsset_Format", "")
        if source.startswith("glTF") or source.startswith("Direct3D XFile"):
            mesh_node = {}

        # The animation's channels by node index.
        self.channels = {}
        self.ticks_per_second = 25.0
        self.duration_ticks = 0.0
        if scene["animations"]:
            anim = scene["animations"][animation]
            tps = anim["ticks_per_second"]
            self.ticks_per_second = tps if tps != 0 else 25.0
            self.duration_ticks = anim["duration"]
            for ch in anim["channels"]:
                node = self.node_index.get(ch["node"])
                if node is None or node in self.channels:
                    continue
                self.channels[node] = {
                    kind: (np.array(ch[kind + "_keys"], dtype=np.float64)
                           if ch[kind + "_keys"] else None)
                    for kind in ("position", "rotation", "scaling")}
        self.static_parts = {i: decompose(self.local[i]) for i in self.channels}

        # The rig: meshes with bones, in file order.
        self.meshes = []
        bone_node_set = set()
        for mi, m in enumerate(scene["meshes"]):
            if not m["bones"]:
                continue
            mesh = _Mesh()
            mesh.index = mi
            mesh.name = m["name"]
            mesh.node = mesh_node.get(mi)
            mesh.vertices = np.array(m["vertices"], dtype=np.float64).reshape(-1, 3)
            v_count = len(mesh.vertices)
            bone_nodes, offsets, columns, nodeless = [], [], [], []
            for bone in m["bones"]:
                node = self.node_index.get(bone["name"])
                column = np.zeros(v_count)
                for v, w in bone["weights"]:
                    column[int(v)] += w
                if node is None:
                    nodeless.append(bone["name"])
                    continue
                bone_nodes.append(node)
                offsets.append(np.reshape(bone["offset"], (4, 4)))
                columns.append(column)
                bone_node_set.add(node)
            mesh.nodeless_bones = nodeless
            mesh.bone_nodes = np.array(bone_nodes, dtype=np.int64)
            mesh.offsets = np.array(offsets, dtype=np.float64).reshape(-1, 4, 4)
            raw = np.array(columns).T.reshape(v_count, len(bone_nodes))
            total = raw.sum(axis=1)
            mesh.deforms = total > WEIGHT_EPSILON
            mesh.weights = np.where(mesh.deforms[:, None], raw / np.where(
                mesh.deforms, total, 1.0)[:, None], 0.0)
            self.meshes.append(mesh)
        self.bone_nodes = sorted(bone_node_set)
        self.armature = self.armature_node()

    # --- scene graph --------------------------------------------------------
    def ancestors(self, node):
        """[node, parent, ..., root]."""
        chain = []
        while node >= 0:
            chain.append(node)
            node = int(self.parents[node])
        return chain

    def armature_node(self):
        """The armature node A: the lowest common ancestor of all bone
        nodes, moved up while it is a bone node or an Assimp FBX pivot
        node; None when nothing is left (armature space = the root's parent
        space, the identity)."""
        if not self.bone_nodes:
            return None
        common = None
        for b in self.bone_nodes:
            chain = self.ancestors(b)
            if common is None:
                common = chain
            else:
                members = set(chain)
                common = [n for n in common if n in members]
        node = common[0] if common else -1
        bones = set(self.bone_nodes)
        while node >= 0 and (node in bones or FBX_PIVOT_MARK in self.node_names[node]):
            node = int(self.parents[node])
        return None if node < 0 else node

    def local_transform(self, node, ticks):
        ch = self.channels.get(node)
        if ch is None:
            return self.local[node]
        position, rotation, scaling = self.static_parts[node]
        if ch["position"] is not None:
            position = sample_keys(ch["position"], ticks, "position")
        if ch["rotation"] is not None:
            rotation = sample_keys(ch["rotation"], ticks, "rotation")
        if ch["scaling"] is not None:
            scaling = sample_keys(ch["scaling"], ticks, "scaling")
        return compose(position, rotation, scaling)

    def global_transforms(self, time_seconds):
        """(N, 4, 4): G(node, t) of every node (pre-order: parents first)."""
        ticks = time_seconds * self.ticks_per_second
        g = np.empty_like(self.local)
        for i, p in enumerate(self.parents):
            local = self.local_transform(i, ticks)
            g[i] = local if p < 0 else g[p] @ local
        return g

    # --- skinning -------------------------------------------------------------
    def rest_positions(self):
        """(V, 3): the rest vertices of the rig's meshes, concatenated."""
        return np.concatenate([m.vertices for m in self.meshes])

    def deform(self, method, time_seconds):
        """Positions (V, 3) float64 of the meshes with bones (file order,
        concatenated), each in its object space at t; method "lbs" or
        "dqs"."""
        if method not in ("lbs", "dqs"):
            raise ValueError(f"method: expected 'lbs' or 'dqs', got {method!r}")
        g_t = self.global_transforms(time_seconds)
        g_0 = self.global_transforms(0.0)
        out = []
        for mesh in self.meshes:
            if method == "lbs":
                out.append(self._lbs(mesh, g_t))
            else:
                out.append(self._dqs(mesh, g_t, g_0))
        return np.concatenate(out)

    @staticmethod
    def _apply(m, points):
        return points @ m[:3, :3].T + m[:3, 3]

    def _mesh_global(self, mesh, g):
        return np.eye(4) if mesh.node is None else g[mesh.node]

    def _lbs(self, mesh, g_t):
        v = mesh.vertices
        world = np.zeros_like(v)
        for j, node in enumerate(mesh.bone_nodes):
            w = mesh.weights[:, j]
            rows = w > 0.0
            if not rows.any():
                continue
            skin = g_t[node] @ mesh.offsets[j]
            world[rows] += w[rows, None] * self._apply(skin, v[rows])
        local = self._apply(np.linalg.inv(self._mesh_global(mesh, g_t)), world)
        return np.where(mesh.deforms[:, None], local, v)

    def _dqs(self, mesh, g_t, g_0):
        a_t = np.eye(4) if self.armature is None else g_t[self.armature]
        a_0 = np.eye(4) if self.armature is None else g_0[self.armature]
        mesh_0 = self._mesh_global(mesh, g_0)
        mesh_t = self._mesh_global(mesh, g_t)
        to_arm = np.linalg.inv(a_0) @ mesh_0
        from_arm = np.linalg.inv(mesh_t) @ a_t
        b_count = len(mesh.bone_nodes)
        quats = np.zeros((b_count, 4))
        trans = np.zeros((b_count, 4))
        scales = np.zeros((b_count, 4, 4))
        has_scale = np.zeros(b_count, dtype=bool)
        a_t_inv = np.linalg.inv(a_t)
        mesh_0_inv = np.linalg.inv(mesh_0)
        for j, node in enumerate(mesh.bone_nodes):
            offset = mesh.offsets[j]
            pose = a_t_inv @ g_t[node] @ offset @ mesh_0_inv @ a_0
            basemat = to_arm @ np.linalg.inv(offset)
            q, d, s = mat4_to_dquat(basemat, pose)
            quats[j], trans[j] = q, d
            if s is not None:
                scales[j] = s
                has_scale[j] = True

        v = self._apply(to_arm, mesh.vertices)
        n = len(v)
        # add_weighted_dq_dq over the vertex's bones in bone order.
        sum_q = np.zeros((n, 4))
        sum_t = np.zeros((n, 4))
        sum_s = np.zeros((n, 4, 4))
        sum_sw = np.zeros(n)
        for j in range(b_count):
            w = mesh.weights[:, j]
            rows = w > 0.0
            if not rows.any():
                continue
            wj = w[rows]
            flip = (sum_q[rows] @ quats[j]) < 0.0
            signed = np.where(flip, -wj, wj)
            sum_q[rows] += signed[:, None] * quats[j]
            sum_t[rows] += signed[:, None] * trans[j]
            if has_scale[j]:
                sum_s[rows] += wj[:, None, None] * scales[j]
                sum_sw[rows] += wj
        total = mesh.weights.sum(axis=1)
        safe_total = np.where(mesh.deforms, total, 1.0)
        # normalize_dq
        q = sum_q / safe_total[:, None]
        d = sum_t / safe_total[:, None]
        scaled = sum_sw != 0.0
        add = (safe_total - sum_sw)[:, None, None] * np.eye(4)
        s = (sum_s + np.where(scaled[:, None, None], add, 0.0)) / safe_total[:, None, None]
        # mul_v3m3_dq: scale, then the rotation of the unnormalized quaternion
        # and the translation, divided by |q|^2.
        p = np.where(scaled[:, None], np.einsum("nij,nj->ni", s[:, :3, :3], v) + s[:, :3, 3], v)
        len2 = np.einsum("ni,ni->n", q, q)
        pq = np.concatenate([np.zeros((n, 1)), p], axis=1)
        rotated = quat_mul(quat_mul(q, pq), quat_conj(q))[:, 1:]
        translation = 2.0 * quat_mul(d, quat_conj(q))[:, 1:]
        inv_len2 = np.where(len2 > 0.0, 1.0 / np.where(len2 > 0.0, len2, 1.0), 0.0)
        blended = (rotated + translation) * inv_len2[:, None]
        local = self._apply(from_arm, blended)
        return np.where(mesh.deforms[:, None], local, mesh.vertices)
