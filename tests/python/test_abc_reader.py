"""Independent reader of SpringSkin's Alembic (.abc) output.

Written from the format notes on Alembic 1.8.12's Ogawa container and
AbcCoreOgawa layout; it shares no code with the writer (core/io/abc.c,
core/io/ogawa.c). It reads every file the CLI writes, checks the container and
the archive structure, and compares what it reads with values obtained
independently:

- P of every frame against the .pc2 of the same bake (a different writer
  and format), bit for bit;
- .selfBnds against numpy's min/max of P;
- N against area-weighted normals recomputed with numpy from P and the
  triangles read back (which also checks the winding and the indices);
- sample keys against a MurmurHash3_x64_128 written here, itself checked
  with SMHasher's verification value;
- time sampling and archive metadata against the bake's options.

Needs the CLI (SSK_CLI, set by CTest) and the Debian assimp test models
(SSK_MODELS_DIR). Debian's python3-pytest and python3-numpy.
"""

import os
import re
import struct
import subprocess
import time

import numpy as np
import pytest

MODELS = os.environ.get("SSK_MODELS_DIR", "/usr/share/assimp/models")
MODEL = os.path.join(MODELS, "X", "BCN_Epileptic.X")
CLI = os.environ.get("SSK_CLI", "")

EMPTY_DATA = 0x8000000000000000
DATA_BIT = 0x8000000000000000

# POD codes of the property info word, with their numpy types.
POD_DTYPES = {
    0: np.dtype("u1"),   # bool
    1: np.dtype("u1"),
    2: np.dtype("i1"),
    3: np.dtype("<u2"),
    4: np.dtype("<i2"),
    5: np.dtype("<u4"),
    6: np.dtype("<i4"),
    7: np.dtype("<u8"),
    8: np.dtype("<i8"),
    9: np.dtype("<f2"),
    10: np.dtype("<f4"),
    11: np.dtype("<f8"),
}

pytestmark = pytest.mark.skipif(
    not CLI or not os.path.exists(CLI) or not os.path.exists(MODEL),
    reason="needs SSK_CLI (the springskin executable) and the assimp test models")


# --------------------------------------------------------------------------
# MurmurHash3_x64_128 (Austin Appleby's public-domain algorithm), from its
# description: 16-byte blocks as two little-endian uint64, tail, fmix64.
# --------------------------------------------------------------------------

M64 = (1 << 64) - 1
C1 = 0x87C37B91114253D5
C2 = 0x4CF5AD432745937F


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _fmix(k):
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    k ^= k >> 33
    return k


def murmur3_x64_128(data, seed=0):
    """Returns the 16 key bytes: h1 then h2, little-endian."""
    n = len(data)
    h1 = h2 = seed
    nblocks = n // 16
    if nblocks:
        words = np.frombuffer(data, dtype="<u8", count=2 * nblocks).reshape(-1, 2)
        # The per-block mixing of k1, k2 does not depend on the state:
        # vectorized (uint64 arithmetic wraps modulo 2^64).
        with np.errstate(over="ignore"):
            k1 = words[:, 0] * np.uint64(C1)
            k1 = (k1 << np.uint64(31)) | (k1 >> np.uint64(33))
            k1 = k1 * np.uint64(C2)
            k2 = words[:, 1] * np.uint64(C2)
            k2 = (k2 << np.uint64(33)) | (k2 >> np.uint64(31))
            k2 = k2 * np.uint64(C1)
        for a, b in zip(k1.tolist(), k2.tolist()):
            h1 ^= a
            h1 = _rotl(h1, 27)
            h1 = (h1 + h2) & M64
            h1 = (h1 * 5 + 0x52DCE729) & M64
            h2 ^= b
            h2 = _rotl(h2, 31)
            h2 = (h2 + h1) & M64
            h2 = (h2 * 5 + 0x38495AB5) & M64
    tail = data[16 * nblocks:]
    k1 = k2 = 0
    for i in range(len(tail) - 1, 7, -1):
        k2 ^= tail[i] << (8 * (i - 8))
    if len(tail) > 8:
        k2 = (k2 * C2) & M64
        k2 = _rotl(k2, 33)
        k2 = (k2 * C1) & M64
        h2 ^= k2
    for i in range(min(len(tail), 8) - 1, -1, -1):
        k1 ^= tail[i] << (8 * i)
    if len(tail) > 0:
        k1 = (k1 * C1) & M64
        k1 = _rotl(k1, 31)
        k1 = (k1 * C2) & M64
        h1 ^= k1
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    return struct.pack("<QQ", h1, h2)


def test_murmur3_smhasher_verification_value():
    # SMHasher's VerificationTest: hash keys {0}, {0,1}, ... of length
    # 0..255 with seed 256 - length, hash the concatenated results with
    # seed 0; the first 4 bytes, little-endian, are 0x6384BA69 for
    # MurmurHash3_x64_128.
    key = bytes(range(256))
    hashes = b"".join(murmur3_x64_128(key[:i], 256 - i) for i in range(256))
    final = murmur3_x64_128(hashes, 0)
    assert struct.unpack("<I", final[:4])[0] == 0x6384BA69
    assert murmur3_x64_128(b"") == bytes(16)


# --------------------------------------------------------------------------
# Ogawa container.
# --------------------------------------------------------------------------

class Ogawa:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        b = self.buf
        assert len(b) >= 16, "shorter than the Ogawa header"
        assert b[0:5] == b"Ogawa", "bad magic"
        self.frozen = b[5] == 0xFF
        self.version = (b[6] << 8) | b[7]   # the one big-endian field
        self.root = struct.unpack_from("<Q", b, 8)[0]

    def u64(self, offset):
        return struct.unpack_from("<Q", self.buf, offset)[0]

    def group(self, entry):
        """Child entries of the group at `entry` (0: no children)."""
        assert not entry & DATA_BIT, "expected a group, found data"
        if entry == 0:
            return []
        assert 8 < entry <= len(self.buf) - 8, "group offset outside the file"
        n = self.u64(entry)
        assert 0 < n <= (len(self.buf) - entry - 8) // 8, "bad child count"
        return list(struct.unpack_from("<%dQ" % n, self.buf, entry + 8))

    def data(self, entry):
        """Bytes of the data block at `entry`."""
        assert entry & DATA_BIT, "expected data, found a group"
        if entry == EMPTY_DATA:
            return b""
        off = entry & ~DATA_BIT
        size = self.u64(off)
        assert off + 8 + size <= len(self.buf), "data block beyond the end"
        return self.buf[off + 8: off + 8 + size]

    def is_data(self, entry):
        return bool(entry & DATA_BIT)


# --------------------------------------------------------------------------
# AbcCoreOgawa archive.
# --------------------------------------------------------------------------

def parse_metadata(text):
    if not text:
        return {}
    pairs = [p.split("=", 1) for p in text.split(";")]
    assert all(len(p) == 2 for p in pairs), text
    return dict(pairs)


class Reader:
    """Fixed-width little-endian fields from a bytes object."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        assert self.pos + n <= len(self.data), "header block too short"
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint(self, width):
        return int.from_bytes(self.take(width), "little")

    def done(self):
        return self.pos == len(self.data)


class Property:
    def __init__(self, archive, header, entry):
        self.archive = archive
        self.entry = entry
        self.__dict__.update(header)

    # sample index -> stored entry (first/last changed rule)
    def stored_index(self, i):
        assert 0 <= i < self.num_samples
        if self.first == 0 and self.last == 0:
            return 0
        if i < self.first:
            return 0
        if i >= self.last:
            return self.last - self.first + 1
        return i - self.first + 1

    def stored_count(self):
        children = self.archive.ogawa.group(self.entry)
        return len(children) // (2 if self.kind_name == "array" else 1)

    def raw(self, i):
        """(key bytes, payload bytes) of sample i."""
        children = self.archive.ogawa.group(self.entry)
        j = self.stored_index(i)
        if self.kind_name == "array":
            data_entry, dims_entry = children[2 * j], children[2 * j + 1]
            assert dims_entry == EMPTY_DATA  # rank-1, non-string
        else:
            data_entry = children[j]
        block = self.archive.ogawa.data(data_entry)
        if not block:
            return b"", b""
        assert len(block) >= 16
        return block[:16], block[16:]

    def value(self, i):
        _, payload = self.raw(i)
        dtype = POD_DTYPES[self.pod]
        assert len(payload) % (dtype.itemsize * self.extent) == 0
        a = np.frombuffer(payload, dtype=dtype)
        if self.kind_name == "scalar":
            assert a.size == self.extent, "scalar sample of the wrong size"
            return a
        return a.reshape(-1, self.extent) if self.extent > 1 else a


class Compound:
    def __init__(self, archive, entry, metadata=None):
        self.archive = archive
        self.metadata = metadata or {}
        self.props = {}
        self.order = []
        children = archive.ogawa.group(entry)
        if not children:
            return
        assert archive.ogawa.is_data(children[-1])
        headers = parse_property_headers(archive, archive.ogawa.data(children[-1]))
        assert len(headers) == len(children) - 1
        for h, child in zip(headers, children[:-1]):
            assert not archive.ogawa.is_data(child)
            if h["kind_name"] == "compound":
                prop = Compound(archive, child, h["metadata"])
            else:
                prop = Property(archive, h, child)
            self.props[h["name"]] = prop
            self.order.append(h["name"])


def parse_property_headers(archive, data):
    r = Reader(data)
    out = []
    while not r.done():
        info = r.uint(4)
        hint = (info >> 2) & 3
        assert hint in (0, 1, 2)
        width = (1, 2, 4)[hint]
        kind = info & 3
        h = {"info": info}
        md_index = (info >> 20) & 0xFF
        if kind == 0:
            h["kind_name"] = "compound"
        else:
            h["kind_name"] = "scalar" if kind == 1 else "array"
            h["scalar_like"] = kind == 3
            h["pod"] = (info >> 4) & 0xF
            assert h["pod"] in POD_DTYPES
            h["extent"] = (info >> 12) & 0xFF
            h["num_samples"] = r.uint(width)
            if info & 0x200:
                h["first"] = r.uint(width)
                h["last"] = r.uint(width)
            elif info & 0x800:
                h["first"] = h["last"] = 0
            else:
                h["first"] = 1
                h["last"] = h["num_samples"] - 1
            h["ts_index"] = r.uint(width) if info & 0x100 else 0
            h["constant_flag"] = bool(info & 0x800)
            h["homogeneous"] = bool(info & 0x400)
        name_len = r.uint(width)
        assert name_len > 0
        h["name"] = r.take(name_len).decode()
        if md_index == 0xFF:
            h["metadata"] = parse_metadata(r.take(r.uint(width)).decode())
        else:
            assert md_index <= len(archive.indexed_md)
            h["metadata"] = parse_metadata(archive.indexed_md[md_index])
        out.append(h)
    return out


class Object:
    def __init__(self, archive, entry, name, full_name, metadata):
        self.archive = archive
        self.name = name
        self.full_name = full_name
        self.metadata = metadata
        o = archive.ogawa
        children = o.group(entry)
        assert len(children) >= 2
        assert o.is_data(children[-1])
        block = o.data(children[-1])
        assert len(block) >= 32, "object header block without its 32 hash bytes"
        self.hashes = block[-32:]
        r = Reader(block[:-32])
        headers = []
        while not r.done():
            name_len = r.uint(4)
            assert name_len > 0
            child_name = r.take(name_len).decode()
            assert "/" not in child_name
            md_index = r.uint(1)
            if md_index == 0xFF:
                md = r.take(r.uint(4)).decode()
            else:
                md = archive.indexed_md[md_index]
            headers.append((child_name, parse_metadata(md)))
        assert len(headers) == len(children) - 2
        self.properties = Compound(archive, children[0])
        self.children = []
        for (child_name, md), child_entry in zip(headers, children[1:-1]):
            prefix = "" if full_name == "/" else full_name
            self.children.append(Object(archive, child_entry, child_name,
                                        prefix + "/" + child_name, md))


class Archive:
    def __init__(self, path):
        self.ogawa = o = Ogawa(path)
        assert o.frozen, "not cleanly closed"
        assert o.version == 1
        root = o.group(o.root)
        assert len(root) >= 6
        kinds = [o.is_data(e) for e in root[:6]]
        assert kinds == [True, True, False, True, True, True]
        self.file_version = struct.unpack("<i", o.data(root[0]))[0]
        self.library_version = struct.unpack("<i", o.data(root[1]))[0]
        self.metadata_text = o.data(root[3]).decode()
        self.metadata = parse_metadata(self.metadata_text)
        self.time_samplings = []
        r = Reader(o.data(root[4]))
        while not r.done():
            max_sample = r.uint(4)
            tpc = struct.unpack("<d", r.take(8))[0]
            n = r.uint(4)
            assert n >= 1
            times = struct.unpack("<%dd" % n, r.take(8 * n))
            self.time_samplings.append((max_sample, tpc, times))
        self.indexed_md = [""]
        r = Reader(o.data(root[5]))
        while not r.done():
            self.indexed_md.append(r.take(r.uint(1)).decode())
        self.top = Object(self, root[2], "ABC", "/", {})


# --------------------------------------------------------------------------
# Independent data: the .pc2 of the same bake, numpy geometry.
# --------------------------------------------------------------------------

def read_pc2(path):
    with open(path, "rb") as f:
        b = f.read()
    assert b[:12] == b"POINTCACHE2\0"
    _, points, start, rate, samples = struct.unpack_from("<iiffi", b, 12)
    data = np.frombuffer(b, dtype="<f4", offset=32).reshape(samples, points, 3)
    return start, rate, data


def vertex_normals(points, faces_ccw, weld=False):
    """Area-weighted vertex normals (unnormalized cross products summed).
    weld: vertices at exactly the same position sum their triangles
    together (the smooth side of SpringSkin's welded shading)."""
    p = points.astype(np.float64)
    a, b, c = p[faces_ccw[:, 0]], p[faces_ccw[:, 1]], p[faces_ccw[:, 2]]
    fn = np.cross(b - a, c - a)
    n = np.zeros_like(p)
    for k in range(3):
        np.add.at(n, faces_ccw[:, k], fn)
    if weld:
        _, group = np.unique(points, axis=0, return_inverse=True)
        group = group.reshape(-1)
        sums = np.zeros((group.max() + 1, 3))
        np.add.at(sums, group, n)
        n = sums[group]
    length = np.linalg.norm(n, axis=1)
    ok = length > 0
    n[ok] /= length[ok][:, None]
    return n, ok


def run_cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


def bake(tmp_path, name, *options):
    out = str(tmp_path / name)
    r = run_cli("bake", MODEL, "-o", out, "--backend", "cpu", *options)
    assert r.returncode == 0, r.stderr
    return out


def cli_version():
    r = run_cli("--version")
    assert r.returncode == 0
    m = re.search(r"(\d+\.\d+\.\d+)", r.stdout)
    assert m, r.stdout
    return m.group(1)


def meshes_of(archive):
    """[(xform, polymesh)] in file order."""
    out = []
    for xf in archive.top.children:
        assert xf.metadata.get("schema") == "AbcGeom_Xform_v3"
        assert len(xf.children) == 1
        mesh = xf.children[0]
        assert mesh.metadata.get("schemaObjTitle") == "AbcGeom_PolyMesh_v1:.geom"
        out.append((xf, mesh))
    return out


# --------------------------------------------------------------------------
# Tests.
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("abc")
    abc = bake(tmp, "bcn.abc", "--normals")
    pc2 = bake(tmp, "bcn.pc2")
    info = run_cli("info", MODEL)
    assert info.returncode == 0
    return abc, pc2, info.stdout


def test_container_and_archive_header(baked):
    a = Archive(baked[0])
    assert a.file_version == 0
    assert a.library_version >= 9999
    # The root is the last block: children are written before parents.
    assert a.ogawa.root + 8 + 8 * 6 == len(a.ogawa.buf)


def test_hierarchy_matches_the_source_meshes(baked):
    abc, _, info = baked
    names = re.findall(r"^\s+'([^']*)': (\d+) vertices, (\d+) triangles", info, re.M)
    assert names, info
    a = Archive(abc)
    meshes = meshes_of(a)
    assert [(xf.name, m.name) for xf, m in meshes] == [(n, n + "Shape") for n, _, _ in names]
    for (xf, mesh), (n, nv, nf) in zip(meshes, names):
        assert mesh.full_name == "/%s/%sShape" % (n, n)
        geom = mesh.properties.props[".geom"]
        assert isinstance(geom, Compound)
        assert geom.metadata["schema"] == "AbcGeom_PolyMesh_v1"
        P = geom.props["P"]
        assert P.value(0).shape == (int(nv), 3)
        counts = geom.props[".faceCounts"].value(0)
        assert counts.shape == (int(nf),) and np.all(counts == 3)
        indices = geom.props[".faceIndices"].value(0)
        assert indices.shape == (3 * int(nf),)
        assert indices.min() >= 0 and indices.max() < int(nv)
        # Every vertex is used by some triangle in these meshes.
        assert np.unique(indices).size == int(nv)


def test_topology_is_constant_and_animated_properties_are_not(baked):
    abc, pc2, _ = baked
    _, _, frames = read_pc2(pc2)
    a = Archive(abc)
    for xf, mesh in meshes_of(a):
        geom = mesh.properties.props[".geom"]
        for name in (".faceIndices", ".faceCounts"):
            p = geom.props[name]
            assert p.constant_flag and p.first == 0 and p.last == 0
            assert p.stored_count() == 1
            assert p.num_samples == len(frames)
            assert p.ts_index == 1
        for name in ("P", ".selfBnds", "N"):
            p = geom.props[name]
            assert p.num_samples == len(frames) and p.ts_index == 1
            assert not p.constant_flag
        P = geom.props["P"]
        assert P.kind_name == "array" and P.pod == 10 and P.extent == 3
        assert P.metadata == {"geoScope": "vtx", "interpretation": "point"}
        B = geom.props[".selfBnds"]
        assert B.kind_name == "scalar" and B.pod == 11 and B.extent == 6
        assert B.metadata == {"interpretation": "box"}
        assert geom.order[:4] == [".selfBnds", "P", ".faceIndices", ".faceCounts"]


def test_every_P_sample_equals_the_pc2_of_the_same_bake(baked):
    abc, pc2, _ = baked
    start, rate, frames = read_pc2(pc2)
    a = Archive(abc)
    meshes = meshes_of(a)
    for f in range(len(frames)):
        parts = [m.properties.props[".geom"].props["P"].value(f) for _, m in meshes]
        whole = np.concatenate(parts)
        assert whole.shape == frames[f].shape
        # Bit for bit: same floats through two different writers.
        assert whole.tobytes() == frames[f].astype("<f4").tobytes(), "frame %d" % f
    # The animation moves: not every frame is the same.
    assert np.abs(frames[-1] - frames[0]).max() > 0


def test_bounds_are_the_box_of_P(baked):
    a = Archive(baked[0])
    for _, mesh in meshes_of(a):
        geom = mesh.properties.props[".geom"]
        P, B = geom.props["P"], geom.props[".selfBnds"]
        for f in range(P.num_samples):
            p = P.value(f).astype(np.float64)
            box = B.value(f)
            assert np.array_equal(box[:3], p.min(axis=0))
            assert np.array_equal(box[3:], p.max(axis=0))


def test_normals_match_numpy_normals_of_the_read_triangles(baked):
    a = Archive(baked[0])
    for _, mesh in meshes_of(a):
        geom = mesh.properties.props[".geom"]
        N = geom.props["N"]
        assert N.metadata["geoScope"] == "vtx"
        assert N.metadata["interpretation"] == "normal"
        cw = geom.props[".faceIndices"].value(0).reshape(-1, 3)
        ccw = cw[:, ::-1]  # Alembic winds front faces clockwise
        for f in (0, N.num_samples // 2, N.num_samples - 1):
            P = geom.props["P"].value(f)
            expected, ok = vertex_normals(P, ccw)
            got = N.value(f).astype(np.float64)
            assert ok.mean() > 0.99
            # Vertices that share their position with another (UV seams,
            # hard edges) shade welded unless the source marks a hard edge:
            # each has either the welded normal or its own.
            _, group, count = np.unique(P, axis=0, return_inverse=True, return_counts=True)
            shared = count[group.reshape(-1)] > 1
            alone = ok & ~shared
            assert alone.mean() > 0.5
            assert np.abs(got[alone] - expected[alone]).max() < 1e-4
            welded, _ = vertex_normals(P, ccw, weld=True)
            on_seam = ok & shared
            own = np.abs(got - expected).max(axis=1) < 1e-4
            smooth = np.abs(got - welded).max(axis=1) < 1e-4
            assert (own | smooth)[on_seam].all()
            assert smooth[on_seam].any()  # the weld does shade some seams
            # With the winding read as counter-clockwise the normals flip.
            flipped, _ = vertex_normals(P, cw)
            assert np.abs(got[alone] + flipped[alone]).max() < 1e-4


def test_uvs_are_per_corner_copies_of_per_vertex_uvs(baked):
    a = Archive(baked[0])
    seen = 0
    for _, mesh in meshes_of(a):
        geom = mesh.properties.props[".geom"]
        if "uv" not in geom.props:
            continue
        seen += 1
        uv = geom.props["uv"]
        assert uv.constant_flag and uv.stored_count() == 1
        assert uv.metadata["geoScope"] == "fvr" and uv.metadata["podExtent"] == "2"
        corners = geom.props[".faceIndices"].value(0)
        values = uv.value(0)
        assert values.shape == (corners.size, 2)
        assert np.all(np.isfinite(values))
        # Each vertex has one uv: all corners on the same vertex agree.
        order = np.argsort(corners, kind="stable")
        v_sorted, uv_sorted = corners[order], values[order]
        same = v_sorted[1:] == v_sorted[:-1]
        assert np.array_equal(uv_sorted[1:][same], uv_sorted[:-1][same])
        assert np.ptp(values[:, 0]) > 0 or np.ptp(values[:, 1]) > 0
    # BCN_Epileptic.X is textured: every mesh has texture coordinates.
    assert seen == len(meshes_of(a))


def test_sample_keys_are_murmur3_of_the_payload(baked):
    a = Archive(baked[0])
    checked = 0
    for xf, mesh in meshes_of(a):
        geom = mesh.properties.props[".geom"]
        props = list(geom.props.values()) + [
            p for p in xf.properties.props[".xform"].props.values()]
        for p in props:
            for j in sorted({p.stored_index(i) for i in range(p.num_samples)}):
                i = next(i for i in range(p.num_samples) if p.stored_index(i) == j)
                key, payload = p.raw(i)
                if payload:
                    assert key == murmur3_x64_128(payload), (p.name, i)
                    checked += 1
    assert checked > 3 * 80 * 3


def test_xform_holds_a_matrix_op(baked):
    a = Archive(baked[0])
    for xf, _ in meshes_of(a):
        x = xf.properties.props[".xform"]
        assert x.metadata == {"schema": "AbcGeom_Xform_v3"}
        ops = x.props[".ops"]
        assert ops.kind_name == "scalar" and ops.extent == 1
        assert ops.value(0).tolist() == [0x30]  # matrix op, hint 0
        vals = x.props[".vals"]
        assert vals.pod == 11 and vals.extent == 16
        for i in range(vals.num_samples):
            m = vals.value(i).reshape(4, 4)
            assert np.all(np.isfinite(m))
            # Row-vector layout: the last column is (0, 0, 0, 1).
            assert np.array_equal(m[:, 3], [0, 0, 0, 1])
        assert x.props[".inherits"].value(0).tolist() == [1]


def test_time_sampling_and_metadata_default_bake(baked):
    abc, pc2, _ = baked
    _, _, frames = read_pc2(pc2)
    a = Archive(abc)
    assert len(a.time_samplings) == 2
    assert a.time_samplings[0][1:] == (1.0, (0.0,))
    max_sample, tpc, times = a.time_samplings[1]
    assert max_sample == len(frames)
    assert tpc == 1.0 / 24.0 and times == (0.0,)
    md = a.metadata
    assert md["_ai_Application"] == "SpringSkin " + cli_version()
    assert md["_ai_DCC_FPS"] == "24"
    written = time.strptime(md["_ai_DateWritten"], "%a %b %d %H:%M:%S %Y")
    assert abs(time.mktime(written) - time.time()) < 3600
    # Serialized in sorted key order.
    keys = [p.split("=")[0] for p in a.metadata_text.split(";")]
    assert keys == sorted(keys)


def test_time_sampling_of_a_frame_range_and_fps(tmp_path):
    abc = bake(tmp_path, "range.abc", "--frames", "5:20", "--fps", "30")
    pc2 = bake(tmp_path, "range.pc2", "--frames", "5:20", "--fps", "30")
    start, _, frames = read_pc2(pc2)
    assert start == 5.0 and len(frames) == 16
    a = Archive(abc)
    max_sample, tpc, times = a.time_samplings[1]
    assert max_sample == 16
    assert tpc == 1.0 / 30.0
    assert times == (5.0 / 30.0,)
    assert a.metadata["_ai_DCC_FPS"] == "30"
    meshes = meshes_of(a)
    whole = np.concatenate([m.properties.props[".geom"].props["P"].value(15)
                            for _, m in meshes])
    assert whole.tobytes() == frames[15].tobytes()
    assert "N" not in meshes[0][1].properties.props[".geom"].props


@pytest.mark.parametrize("args, needle", [
    (["-o", "{d}/no-such-dir/x.abc"], "no-such-dir"),
    (["-o", "{d}/x.abc", "--frames", "0:100000"], "frames"),
    (["-o", "{d}/x.pc2", "--normals"], ".abc"),
])
def test_failed_bakes_leave_no_file(tmp_path, args, needle):
    args = [a.replace("{d}", str(tmp_path)) for a in args]
    r = run_cli("bake", MODEL, "--backend", "cpu", *args)
    assert r.returncode == 1
    assert needle in r.stderr
    assert os.listdir(tmp_path) == []
