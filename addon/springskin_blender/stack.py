"""What the modifier stack above Spring Skin gives it (issue #37, item 3).

Blender's Armature modifier deforms whatever the stack gives it: shape keys
(always evaluated first) and the modifiers before it. Spring Skin's
modifier is a Mesh Cache that overwrites the positions with the deformed
rest shape, so the runtime adds what the stack above changed:

    out = method(rest) + J d,   d = (the stack's output) - rest

with J the linear part of the frame's skinning at each vertex
(springskin.Rig.skin_vectors: LBS, or DQS for the DQS-based methods: DQS,
CoR, implicit). Skinning is affine per vertex, so for LBS and DQS this is
exactly the Armature modifier on the same stack (tests/blender,
test_addon_basics 'stack'); the other methods carry the offsets with the
skinning they start from (the springs and implicit skinning see the rest
shape).

Shape keys are evaluated here, as Blender's key.cc does for relative keys
(the reference key plus, per unmuted key of non-zero value, value x its
vertex group's weight x (key - its relative key)); the values are the
evaluated Key's (animation and drivers included). Modifiers above Spring
Skin: ones that keep the vertex count are evaluated by Blender (runtime:
the frame's first depsgraph pass runs them alone); ones that change it are
refused (topology).
"""

import numpy as np

#: Modifier types that move vertices and keep the vertex count: Spring Skin
#: deforms what they give.
DEFORMING = frozenset((
    "ARMATURE", "CAST", "CURVE", "DISPLACE", "HOOK", "LAPLACIANDEFORM", "LATTICE",
    "MESH_DEFORM", "SHRINKWRAP", "SIMPLE_DEFORM", "SMOOTH", "CORRECTIVE_SMOOTH",
    "LAPLACIANSMOOTH", "SURFACE_DEFORM", "WARP", "WAVE", "MESH_CACHE", "SOFT_BODY",
    "CLOTH"))

#: Modifier types that change no position (data layers only): ignored.
NO_POSITIONS = frozenset((
    "UV_PROJECT", "UV_WARP", "VERTEX_WEIGHT_EDIT", "VERTEX_WEIGHT_MIX",
    "VERTEX_WEIGHT_PROXIMITY", "NORMAL_EDIT", "WEIGHTED_NORMAL", "DATA_TRANSFER",
    "COLLISION"))


class StackError(Exception):
    """The stack above Spring Skin gives it something it cannot deform
    (the message says what and what to do). `topology`: the stack changes
    the vertex count or order (nothing can be shown); else Spring Skin
    deforms the rest shape and says what it left out."""

    def __init__(self, message, topology=False):
        super().__init__(message)
        self.topology = topology


def keeps_vertices(exc):
    """False when StackError `exc` is about the vertex count or order."""
    return not getattr(exc, "topology", False)


def modifiers_above(obj, spring_mod, render=False):
    """The modifiers before `spring_mod` that run (enabled for the viewport,
    or for the render with `render`, or for either with None) and move
    vertices."""
    out = []
    for mod in obj.modifiers:
        if mod == spring_mod:
            break
        if render is None:
            if not (mod.show_viewport or mod.show_render):
                continue
        elif not (mod.show_render if render else mod.show_viewport):
            continue
        if mod.type in NO_POSITIONS:
            continue
        out.append(mod)
    return out


def type_name(mod):
    """The modifier type's name as Blender's UI shows it ("Subdivision
    Surface")."""
    try:
        return mod.bl_rna.properties["type"].enum_items[mod.type].name
    except (KeyError, AttributeError):
        return mod.type.replace("_", " ").title()


def used_groups(obj):
    """Names of the vertex groups the shape keys and the modifiers of `obj`
    use (not skin weights: no warning that they name no bone)."""
    names = set()
    key = obj.data.shape_keys if obj.type == "MESH" else None
    if key is not None:
        names.update(kb.vertex_group for kb in key.key_blocks if kb.vertex_group)
    for mod in obj.modifiers:
        for attr in ("vertex_group", "vertex_group_a", "vertex_group_b", "mask_vertex_group"):
            name = getattr(mod, attr, None)
            if isinstance(name, str) and name:
                names.add(name)
    return names


def check_modifiers(mods):
    """Raise StackError when a modifier of `mods` (modifiers_above) changes
    the vertex count or is of a kind Spring Skin does not follow."""
    other = [m for m in mods if m.type not in DEFORMING]
    if other:
        names = ", ".join("'%s' (%s)" % (m.name, type_name(m)) for m in other[:3])
        raise StackError(
            "%s above Spring Skin change%s the mesh's vertices (their number or order), and "
            "Spring Skin deforms the mesh it was bound to: move %s below Spring Skin in the "
            "modifier stack" % (names, "s" if len(other) == 1 else "",
                                "it" if len(other) == 1 else "them"), topology=True)


def has_shape_keys(obj):
    key = obj.data.shape_keys
    return key is not None and len(key.key_blocks) > 1


def _group_weights(obj, name, nv, cache):
    """(V,) float32 weights of vertex group `name` of `obj` (1 where the
    name is empty or unknown, as Blender), cached in `cache` by name."""
    if not name:
        return None
    if name in cache:
        return cache[name]
    vg = obj.vertex_groups.get(name)
    weights = None
    if vg is not None:
        gi = vg.index
        weights = np.zeros(nv, dtype=np.float32)
        for v in obj.data.vertices:
            for g in v.groups:
                if g.group == gi:
                    weights[v.index] = g.weight
                    break
    cache[name] = weights
    return weights


def _co(block, nv):
    out = np.empty(3 * nv, dtype=np.float32)
    block.data.foreach_get("co", out)
    return out.reshape(nv, 3)


def shape_key_positions(obj, depsgraph, nv, group_cache):
    """(V, 3) float32 positions Blender's shape keys give the object at
    `depsgraph`'s frame (relative keys), or None without shape keys.
    `group_cache`: a dict kept by the caller for the vertex group weights
    (cleared when the weights may have changed). Raises StackError for
    absolute keys and a key of another vertex count."""
    key = obj.data.shape_keys
    if key is None or not len(key.key_blocks):
        return None
    if not key.use_relative:
        raise StackError("absolute shape keys (Relative off) are not followed: turn Relative on "
                         "in the Shape Keys panel, or apply them")
    try:
        evaluated = key.evaluated_get(depsgraph)
    except (AttributeError, RuntimeError):
        evaluated = key
    blocks = evaluated.key_blocks
    originals = key.key_blocks
    ref = key.reference_key
    if len(ref.data) != nv:
        raise StackError("the shape keys hold %d vertices, the mesh %d" % (len(ref.data), nv),
                         topology=True)
    out = _co(ref, nv).astype(np.float64)
    if obj.show_only_shape_key:  # the pinned key alone, at 1 (its group's weight)
        index = obj.active_shape_key_index
        kb = originals[index] if 0 <= index < len(originals) else ref
        if kb.name == ref.name or kb.mute:
            return out.astype(np.float32)
        delta = _co(kb, nv) - out
        w = _group_weights(obj, kb.vertex_group, nv, group_cache)
        out += delta if w is None else delta * w[:, None]
        return out.astype(np.float32)
    refs = {}
    for i, kb in enumerate(blocks):
        if kb.name == ref.name or kb.mute:
            continue
        value = kb.value
        if value == 0.0:
            continue
        original = originals[i]
        relative = original.relative_key
        if relative.name not in refs:
            refs[relative.name] = _co(relative, nv)
        delta = (_co(original, nv) - refs[relative.name]).astype(np.float64) * value
        w = _group_weights(obj, original.vertex_group, nv, group_cache)
        out += delta if w is None else delta * w[:, None]
    return out.astype(np.float32)


def offset_rows(positions, rest):
    """(rows, offsets): the vertices whose `positions` differ from `rest`
    and their offsets (positions - rest), float32."""
    d = positions - rest
    rows = np.flatnonzero(np.any(d != 0.0, axis=1))
    return rows, d[rows]
