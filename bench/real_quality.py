"""Artifact measures of every method on real characters, against LBS of the
same rig and frames (issue #15: spikes, crumples and tears of IRS and the
springs on Rigify and Mixamo-style bodies).

    PYTHONPATH=build/python /usr/bin/python3 bench/real_quality.py FILE [FILE ...]
        [--methods dqs,cor,rigid,irs,spring,irs@binding,spring@binding]
        [--fps 24] [--frames N] [--backend cpu] [--joints shin.L,forearm.R]
        [--twist forearm.R] [--spring '{"max_iterations": 1000}']

A method ``M@binding`` is method M with the paper's attachment (one bone
per vertex from the attachment binding) instead of the default
attachment per skin weight influence (``"attachment"`` of the deformer
graph); for the springs ``spring@binding`` is the paper's whole model:
rigid first stage, anchors from the binding, no detail force.
``spring+M`` runs the springs after skinning method M (``spring``: after
IRS, the default of ``--method spring``); ``--spring JSON`` adds spring
node fields (stiffness, max_iterations...) to every spring variant. For each file and method, over the frames of the first animation
(all of them, or N spread evenly with --frames):

- turned: the share of (triangle, frame) pairs whose face normal turns more
  than 60 degrees away from LBS's face normal at the same frame (a spike, a
  fold or a crumple turns faces; LBS's own candy wrapper does not count,
  since LBS is the reference), and the largest share at one frame;
- stretch: the largest edge stretch (deformed length / rest length, over
  every triangle edge and frame) divided by LBS's largest edge stretch;
- seams: the largest distance between vertices that coincide at rest (the
  welded topology, `Rig.weld`), as a fraction of the rest diagonal;
- volume: the smallest enclosed volume over the frames, over the rest
  volume (signed, divergence theorem; meaningful for closed meshes);
- thickness (--joints): at the head joint of each named bone, at the
  frame where the bone is bent most against its parent, the mean distance
  of the joint's skin (vertices weighted at least 0.1 to both the bone and
  its parent, most of their weight on the two) to the nearer of the two
  posed bone segments, over the same at rest: LBS's collapse on the inside
  of a bend lowers it, a bulge raises it;
- twist (--twist BONE): the section of the same skin at BONE's head joint
  in the rest pose with BONE and its descendants turned 180 degrees about
  BONE's own axis (the candy wrapper): the mean squared distance of those
  vertices to the axis over the same at rest (1: the ring keeps its area).

Prints a Markdown table. Rest lengths, normals and distances are in rig
space (each mesh's rows moved by its object matrix at the frame).
"""

import argparse
import json
import os
import sys

import numpy as np

import springskin

TURN_DEGREES = 60.0
DEFAULT_METHODS = "dqs,cor,rigid,irs,spring"


def rig_space(rig, positions, objects):
    out = np.empty(positions.shape, dtype=np.float64)
    for i, mesh in enumerate(rig.meshes):
        m = np.asarray(objects[i], dtype=np.float64)
        out[mesh.rows] = np.asarray(positions[mesh.rows], np.float64) @ m[:3, :3].T + m[:3, 3]
    return out


def triangles_of(rig):
    return np.concatenate([mesh.triangles.astype(np.int64) + mesh.first_vertex
                           for mesh in rig.meshes if mesh.triangle_count])


def face_normals(points, triangles):
    a, b, c = (points[triangles[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    length = np.linalg.norm(n, axis=1)
    ok = length > 0
    n[ok] /= length[ok][:, None]
    return n, ok


def edge_lengths(points, edges):
    return np.linalg.norm(points[edges[:, 0]] - points[edges[:, 1]], axis=1)


#: extra fields of the spring node of every graph variant (--spring)
SPRING_FIELDS = {}


def make_deformer(rig, method, backend):
    """Method name; ``M@binding``: M with the paper's attachment (for the
    springs, the paper's model: rigid first stage and spring anchors from
    the binding, no detail force); ``spring+M``: the springs after
    skinning method M (``spring`` alone: after IRS, the default)."""
    if "@" not in method and "+" not in method and not (method == "spring" and SPRING_FIELDS):
        return springskin.Deformer(rig, method=method, backend=backend)
    name, _, attachment = method.partition("@")
    name, _, first = name.partition("+")
    attachment = attachment or "weights"
    paper = attachment == "binding"
    if name == "spring":
        first = first or ("rigid" if paper else "irs")
    skin = {"id": "skin", "type": "skinning", "method": first or name}
    if skin["method"] in ("rigid", "irs"):
        skin["attachment"] = attachment
    nodes = [skin]
    edges = []
    last = "skin"
    if name == "spring":
        relax = {"id": "relax", "type": "spring", "attachment": attachment}
        if paper:
            relax["stiffness"] = {"detail": 0}
        relax.update(SPRING_FIELDS)
        nodes.append(relax)
        edges.append({"from": "skin", "to": "relax"})
        last = "relax"
    nodes.append({"id": "out", "type": "output"})
    edges.append({"from": last, "to": "out"})
    graph = {"version": 1, "nodes": nodes, "edges": edges}
    return springskin.Deformer(rig, graph=graph, backend=backend)


def deform(deformer, sample, frame):
    s, o = sample
    try:
        return deformer.deform(s, o, frame=frame)
    except springskin.SpringDivergedError:
        return deformer.deform(s, o, frame=frame)


def enclosed_volume(points, triangles):
    a, b, c = (points[triangles[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def weights_matrix(rig):
    """#V by #B dense skin weights (the rigs here are small)."""
    w = np.zeros((rig.vertex_count, len(rig.bones)))
    for mesh in rig.meshes:
        rows = np.arange(mesh.first_vertex, mesh.first_vertex + mesh.vertex_count)
        for k in range(mesh.influence_count):
            np.add.at(w, (rows, mesh.bone_indices[:, k]), mesh.weights[:, k])
    return w


def posed_joint(rig, skinning, bone):
    """Posed head of `bone` and unit directions of it and its parent."""
    bones = rig.bones
    parent = int(bones.parents[bone])
    s = np.asarray(skinning, np.float64)

    def apply(b, p):
        return s[b, :3, :3] @ p + s[b, :3, 3]
    head = apply(bone, np.asarray(bones.heads[bone], np.float64))
    tail = apply(bone, np.asarray(bones.tails[bone], np.float64))
    d = tail - head
    if parent >= 0:
        ph = apply(parent, np.asarray(bones.heads[parent], np.float64))
        pd = head - ph if np.linalg.norm(head - ph) > 0 else apply(
            parent, np.asarray(bones.tails[parent], np.float64)) - ph
    else:
        pd = d
    return head, d / np.linalg.norm(d), pd / np.linalg.norm(pd)


def segment_distance(points, a, b):
    d = b - a
    t = np.clip(((points - a) @ d) / max(float(d @ d), 1e-30), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * d), axis=1)


def joint_vertices(rig, weights, rest, bone):
    """The skin at `bone`'s head joint: vertices with most of their weight
    on the bone and its parent, and both weights at least 0.1 (where the
    two bones' transforms blend)."""
    parent = int(rig.bones.parents[bone])
    w, wp = weights[:, bone], weights[:, parent]
    return np.where((w + wp > 0.5) & (w >= 0.1) & (wp >= 0.1))[0]


def joint_segments(rig, skinning, bone):
    """Posed segments (head, tail) of the bone and its parent."""
    s = np.asarray(skinning, np.float64)
    out = []
    for b in (int(rig.bones.parents[bone]), bone):
        h = np.asarray(rig.bones.heads[b], np.float64)
        t = np.asarray(rig.bones.tails[b], np.float64)
        out.append((s[b, :3, :3] @ h + s[b, :3, 3], s[b, :3, :3] @ t + s[b, :3, 3]))
    return out


def thickness(points, verts, segments):
    """Mean distance of `verts` to the nearer of the two bone segments."""
    d = np.minimum(segment_distance(points[verts], *segments[0]),
                   segment_distance(points[verts], *segments[1]))
    return float(d.mean())


def axis_section(points, verts, origin, axis):
    """Mean squared distance of `verts` to the line (origin, axis): the
    area of their ring up to the factor pi."""
    r = np.cross(points[verts] - origin, axis)
    return float((r * r).sum(axis=1).mean())


def twist_skinning(rig, skinning, bone, angle):
    """`skinning` with `bone` and its descendants turned by `angle` about
    the bone's own posed axis through its posed head."""
    head, axis, _ = posed_joint(rig, skinning, bone)
    c, s_ = np.cos(angle), np.sin(angle)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    r = np.eye(3) + s_ * k + (1 - c) * (k @ k)
    t = np.eye(4)
    t[:3, :3] = r
    t[:3, 3] = head - r @ head
    parents = rig.bones.parents
    moved = np.zeros(len(parents), bool)
    for b in range(len(parents)):  # parents come before children in the rig
        moved[b] = b == bone or (parents[b] >= 0 and moved[parents[b]])
    out = np.array(skinning, np.float64)
    out[moved] = t @ out[moved]
    return out.astype(np.float32)


def measure(path, methods, fps, frame_limit, backend, joints=(), twist=None):
    rig = springskin.load(path)
    if rig.animation is None:
        raise SystemExit("%s: no animation" % path)
    count = rig.animation.frame_count(fps=fps)
    frames = sorted(set(int(round(x)) for x in np.linspace(0, count - 1,
                                                           min(count, frame_limit or count))))
    triangles = triangles_of(rig)
    edges = np.unique(np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]],
                                              triangles[:, [2, 0]]]), axis=1), axis=0)
    rest = rig_space(rig, rig.rest_positions(), [m.object_matrix for m in rig.meshes])
    rest_length = edge_lengths(rest, edges)
    keep = rest_length > 0
    edges, rest_length = edges[keep], rest_length[keep]
    diagonal = float(np.linalg.norm(rest.max(axis=0) - rest.min(axis=0)))
    rest_volume = enclosed_volume(rest, triangles)
    weld = rig.weld
    members = np.asarray(weld["members"], dtype=np.int64)
    representatives = np.asarray(weld["points"], dtype=np.int64)[members]
    cos_limit = np.cos(np.radians(TURN_DEGREES))
    weights = weights_matrix(rig)

    samples = [rig.sample(frame=f, fps=fps) for f in frames]
    identity = np.tile(np.eye(4, dtype=np.float32), (len(rig.bones), 1, 1))
    # each joint at its most bent frame: the joint's skin, its rest thickness
    sections = []
    for name in joints:
        b = rig.bones.index(name)
        bends = []
        for s, _ in samples:
            _, d, pd = posed_joint(rig, s, b)
            bends.append(float(np.dot(d, pd)))
        i = int(np.argmin(bends))
        verts = joint_vertices(rig, weights, rest, b)
        rest_thickness = thickness(rest, verts, joint_segments(rig, identity, b))
        sections.append((name, b, i, verts, rest_thickness,
                         float(np.degrees(np.arccos(np.clip(bends[i], -1, 1))))))
    twist_case = None
    if twist:
        b = rig.bones.index(twist)
        skin = twist_skinning(rig, identity, b, np.pi)
        objects = np.asarray([m.object_matrix for m in rig.meshes], np.float32)
        head, d, _ = posed_joint(rig, identity, b)
        verts = joint_vertices(rig, weights, rest, b)
        twist_case = (b, (skin, objects), head, d, verts, axis_section(rest, verts, head, d))

    lbs = springskin.Deformer(rig, method="lbs", backend=backend)
    lbs_points = [rig_space(rig, lbs.deform(s, o), o) for s, o in samples]
    lbs_normals = [face_normals(p, triangles) for p in lbs_points]
    lbs_stretch = max(float((edge_lengths(p, edges) / rest_length).max()) for p in lbs_points)

    rows = []
    for method in ["lbs"] + list(methods):
        deformer = make_deformer(rig, method, backend)
        turned = total = 0
        worst_frame_share, worst_frame = 0.0, frames[0]
        stretch, seam, volume = 0.0, 0.0, np.inf
        points_at = {}
        for k, (f, sample, (ln, lok)) in enumerate(zip(frames, samples, lbs_normals)):
            points = rig_space(rig, deform(deformer, sample, f), sample[1])
            points_at[k] = points if any(sec[2] == k for sec in sections) else None
            n, ok = face_normals(points, triangles)
            valid = ok & lok
            bad = valid & ((n * ln).sum(axis=1) < cos_limit)
            turned += int(bad.sum())
            total += int(valid.sum())
            share = float(bad.sum()) / max(1, int(valid.sum()))
            if share > worst_frame_share:
                worst_frame_share, worst_frame = share, f
            stretch = max(stretch, float((edge_lengths(points, edges) / rest_length).max()))
            volume = min(volume, enclosed_volume(points, triangles) / rest_volume)
            if len(members):
                seam = max(seam, float(np.linalg.norm(points[members] - points[representatives],
                                                      axis=1).max()))
        joint_ratios = []
        for name, b, k, verts, rest_thickness, _ in sections:
            segments = joint_segments(rig, samples[k][0], b)
            joint_ratios.append(thickness(points_at[k], verts, segments) / rest_thickness)
        twist_ratio = None
        if twist_case:
            b, sample, head, d, verts, rest_section = twist_case
            points = rig_space(rig, deform(deformer, sample, 0), sample[1])
            twist_ratio = axis_section(points, verts, head, d) / rest_section
        rows.append((method, turned / max(1, total), worst_frame_share, worst_frame,
                     stretch / lbs_stretch, seam / diagonal, volume, joint_ratios, twist_ratio))
    return rig, frames, sections, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--fps", type=float, default=24.0)
    parser.add_argument("--frames", type=int, default=0, help="frames spread evenly (0: all)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--joints", default="", help="bones whose head joint's section is measured")
    parser.add_argument("--twist", default="", help="bone twisted 180 degrees (section at its head)")
    parser.add_argument("--spring", default="{}",
                        help="JSON object of spring node fields for every spring variant, "
                             "e.g. '{\"max_iterations\": 1000}'")
    args = parser.parse_args()
    SPRING_FIELDS.update(json.loads(args.spring))
    methods = [m for m in args.methods.split(",") if m]
    joints = [j for j in args.joints.split(",") if j]
    for path in args.files:
        rig, frames, sections, rows = measure(path, methods, args.fps, args.frames,
                                              args.backend, joints, args.twist or None)
        name = os.path.basename(path)
        head = ("| rig | vertices | frames | method | triangles turned > 60 deg from LBS "
                "(all frames / worst frame) | largest edge stretch / LBS's | seam gap / "
                "diagonal | smallest volume / rest")
        head += "".join(" | thickness at %s (%.0f deg) / rest" % (n, deg)
                        for n, _, _, _, _, deg in sections)
        if args.twist:
            head += " | section at %s twisted 180 / rest" % args.twist
        print(head + " |")
        print("|---|---:|---:|---|" + "---:|" * (4 + len(sections) + (1 if args.twist else 0)))
        for method, share, worst, worst_frame, stretch, seam, volume, js, tw in rows:
            line = "| %s | %d | %d | %s | %.2f%% / %.2f%% (frame %d) | %.2f | %.1e | %.3f" % (
                name, rig.vertex_count, len(frames), method, 100 * share, 100 * worst,
                worst_frame, stretch, seam, volume)
            line += "".join(" | %.3f" % j for j in js)
            if tw is not None:
                line += " | %.3f" % tw
            print(line + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
