"""The deformer graph as a Blender node tree ("Spring Skin Graph").

A node per deformer of the core (Toothman 2020, 6.1: "each node represents a
deformation operation, and the directed edges between them represent the
execution order and input/output mappings"): Skinning (with its method),
Radial, Spring, Implicit, Surface Edit, Normals and Output. :func:`compile_tree` turns a
tree into the core's deformer-graph JSON document (``docs/deformer-graph.md``)
for one mesh object, the same document ``springskin bake --graph`` and
``springskin.Graph`` read.

Sockets
-------
Three socket types, told apart by color:

- **Positions** (blue-violet): vertex positions, the output of Skinning,
  Radial, Spring and Implicit nodes; the ``positions`` input of Radial,
  Spring, Implicit, Normals and Output nodes (edges with ``"input":
  "positions"``).
- **Normals** (cyan): the output of a Normals node, the optional ``normals``
  input of the Output node (``"input": "normals"``).
- **Edit** (orange): the output of a Surface Edit node. It is not an edge of
  the core's graph: surface edits are part of a spring node
  (``"edits"``). A Spring node has one *Edit* input per connected Surface
  Edit plus one free input at the end: connecting the free one adds another
  (Blender 3.4 gives Python nodes no multi-input sockets), disconnecting one
  removes it. The edits are compiled in socket order. One Surface Edit may
  feed several Spring nodes.

A link between sockets of different types (Normals into Positions, Edit into
Positions, ...) is drawn red (``NodeLink.is_valid``; Blender resets that flag
on every tree update, so it is set again just after, from a timer and on file
load: :func:`validate_links`), the node shows a warning, and
:func:`compile_tree` refuses it.

Muting (M)
----------
A muted Radial, Spring or Implicit node passes its Positions input through; a muted
Normals node leaves the Output's Normals input unconnected; a muted Surface
Edit is left out of its Spring nodes. A Skinning or Output node cannot be
muted (a :class:`GraphError` says so). Reroute and Frame nodes are allowed.

Animation
---------
A Radial node's *Amount* and a Surface Edit's *Weight* can be keyframed like
any property; the core wants keys ``[[frame, value], ...]`` and interpolates
linearly between them, so an animated property's F-curve is sampled at every
integer frame of the scene's range (collinear samples dropped). Drivers are
not sampled: a driven value is used at the current frame.

Saved files
-----------
All state is in Blender properties of the tree, its nodes and sockets, so a
.blend keeps the graph. Opened without the addon, Blender keeps the tree as
``NodeTreeUndefined`` (nodes ``NodeUndefined``, properties as ID properties);
registering this module gives the tree and its nodes back their types and
properties. Trees made by :func:`new_graph_tree` get a fake user, so a graph
is saved even while no object uses it.

Changes to a property, to the links (a tree update) or to the keyframes of the
tree's action call the functions registered with :func:`add_change_listener`
(the addon's ``runtime.graph_changed``).
"""

import functools

import bpy
import nodeitems_utils
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty,
                       FloatVectorProperty, IntProperty, StringProperty)
from bpy.types import Node, NodeSocket, NodeTree, Operator, PropertyGroup
from nodeitems_utils import NodeCategory, NodeItem

__all__ = [
    "GraphError", "TREE_IDNAME", "classes", "compile_tree", "new_graph_tree", "node_problems",
    "notify_changed", "register", "unregister", "validate_links",
]

TREE_IDNAME = "SpringSkinGraphTree"
POSITIONS_SOCKET = "SpringSkinPositionsSocket"
NORMALS_SOCKET = "SpringSkinNormalsSocket"
EDIT_SOCKET = "SpringSkinEditSocket"
_CATEGORY_ID = "SPRINGSKIN_GRAPH_NODES"

#: The core's graph document version (docs/deformer-graph.md).
GRAPH_VERSION = 1
#: Core limits and defaults (core/graph/graph_spring.c, core/bind/spring_rest.c), so that a
#: property cannot hold a value the core's parser refuses.
MAX_ITERATIONS_LIMIT = 100000
EDIT_GROW_LIMIT = 1000
DEFAULT_EDIT_GROW = 4
DEFAULT_STIFFNESS = {"surface": 6.0, "length": 18.0, "torsion": 18.0, "bone": 0.2, "edit": 5.0,
                     "detail": 200.0, "twist": 0.0}
DEFAULT_DT = 1.0 / 30.0
DEFAULT_DAMPING = 0.1
DEFAULT_MAX_ITERATIONS = 100
DEFAULT_CHEBYSHEV_RHO = 0.96
#: Smallest IRS joint influence and time step a property accepts: the core
#: wants p_i, c_i in (0, 1] and dt > 0 (open bounds; Blender's are closed).
MIN_INFLUENCE = 1e-3
MIN_DT = 1e-6
#: Damping must be < 1 (core: [0, 1)).
MAX_DAMPING = 0.999
#: Chebyshev acceleration's spectral radius estimate: (0, 1) for the core's
#: Chebyshev solver (0 is its Jacobi solver, the Solver menu).
MIN_CHEBYSHEV_RHO = 0.01
MAX_CHEBYSHEV_RHO = 0.9999
#: Implicit node (core/graph/graph_implicit.c, ssk_implicit_params_default):
#: iteration counts in [0, SSK_IMPLICIT_MAX_ITERATIONS], sigma in (0, 1],
#: contact angle in (0, 180) degrees, bulge in [0, 1].
IMPLICIT_MAX_ITERATIONS = 1000
DEFAULT_IMPLICIT = {"operator": "CONTACT", "iterations": 20, "sigma": 0.35,
                    "contact_angle": 55.0, "smoothing_iterations": 3,
                    "diffusion_iterations": 3, "bulge": 1.0, "tracking": "INDEPENDENT",
                    "substep_angle": 15.0, "relaxation_iterations": 3}
#: Elastic tracking's virtual frames: at most this many degrees of bone
#: rotation each, (0, 180].
MIN_SUBSTEP_ANGLE = 0.1
MAX_SUBSTEP_ANGLE = 180.0
MIN_SIGMA = 1e-3
MIN_CONTACT_ANGLE = 0.1
MAX_CONTACT_ANGLE = 179.9
#: Sampled keys whose value lies on the line through its neighbours within
#: this tolerance (relative to max(1, |value|)) are dropped: F-curves are
#: evaluated in float32, so exactly linear stretches differ by ~1e-7.
KEY_COLLINEAR_TOLERANCE = 1e-6

FORCES = ("surface", "length", "torsion", "bone", "edit", "detail", "twist")


class GraphError(Exception):
    """A tree that does not make a valid deformer graph.

    ``str(error)`` names the node (by label, else name) and the problem;
    ``error.node`` is the node's name (None for a tree-level problem).
    """

    def __init__(self, message, node=None):
        super().__init__(message)
        self.node = node


# --- notification of the addon's runtime ---------------------------------

_suspended = 0  # > 0 while new_graph_tree builds a tree


# Functions called with a tree when it changed (the runtime registers one,
# so that this module, below it, never imports it).
_change_listeners = []


def add_change_listener(fn):
    """Call `fn(tree)` whenever a Spring Skin graph tree changes (a property,
    the links, the keyframes of its action). Idempotent."""
    if fn not in _change_listeners:
        _change_listeners.append(fn)


def remove_change_listener(fn):
    """Undo :func:`add_change_listener` (no error when `fn` is not there)."""
    if fn in _change_listeners:
        _change_listeners.remove(fn)


def _notify(tree):
    """Tell the listeners (the addon's runtime: re-evaluate the meshes using
    it) that `tree` changed. With none (standalone use), nothing."""
    if _suspended or tree is None or getattr(tree, "bl_idname", None) != TREE_IDNAME:
        return
    for fn in list(_change_listeners):
        fn(tree)


#: Public name of :func:`_notify`, for changes Blender does not report (ID
#: properties of a node: a stroke edit's region, redrawn by the sketch tools).
notify_changed = _notify


def _on_property_update(self, _context):
    _notify(self.id_data)


def _node_title(node):
    return node.label or node.name


# --- sockets --------------------------------------------------------------

class SpringSkinPositionsSocket(NodeSocket):
    """Vertex positions (the core's "positions" input and output kind)"""
    bl_idname = POSITIONS_SOCKET
    bl_label = "Positions"

    def draw(self, _context, layout, _node, text):
        layout.label(text=text)

    def draw_color(self, _context, _node):
        return (0.39, 0.39, 0.78, 1.0)


class SpringSkinNormalsSocket(NodeSocket):
    """Vertex normals (the core's "normals" input and output kind)"""
    bl_idname = NORMALS_SOCKET
    bl_label = "Normals"

    def draw(self, _context, layout, _node, text):
        layout.label(text=text)

    def draw_color(self, _context, _node):
        return (0.2, 0.78, 0.9, 1.0)


class SpringSkinEditSocket(NodeSocket):
    """A surface edit (region of interest) for a Spring node"""
    bl_idname = EDIT_SOCKET
    bl_label = "Edit"

    def draw(self, _context, layout, _node, text):
        layout.label(text=text)

    def draw_color(self, _context, _node):
        return (0.95, 0.55, 0.15, 1.0)


# --- tree -------------------------------------------------------------------

class SpringSkinGraphTree(NodeTree):
    """SpringSkin deformer graph: skinning, radial, spring, implicit, surface
    edit and normals nodes feeding one output"""
    bl_idname = TREE_IDNAME
    bl_label = "Spring Skin Graph"
    bl_icon = "MOD_ARMATURE"

    @classmethod
    def get_from_context(cls, context):
        """(tree, owner, from) for an unpinned Spring Skin Graph editor:
        the active mesh's graph, so an editor opened at any time shows it
        (it showed "New" until the graph was browsed by hand, issue #37,
        item 8) and follows the active object, as the Shader editor follows
        its material. Nothing for an object without a graph (pin the editor
        to keep another one)."""
        obj = getattr(context, "active_object", None)
        settings = getattr(obj, "springskin", None) \
            if obj is not None and obj.type == "MESH" else None
        tree = settings.graph if settings is not None else None
        if tree is None or tree.bl_idname != TREE_IDNAME:
            return None, None, None
        return tree, tree, obj

    def update(self):
        # Blender recomputes NodeLink.is_valid after this callback (cycles
        # only), so the type check is applied just after, from a timer.
        _schedule_link_validation(self)
        _notify(self)


# --- nodes ------------------------------------------------------------------

class _SpringSkinNode:
    """Mix-in of every node of the tree: poll, warnings in the node."""

    @classmethod
    def poll(cls, ntree):
        return ntree.bl_idname == TREE_IDNAME

    def draw_buttons(self, context, layout):
        self.draw_settings(context, layout, False)
        _draw_problems(self, context, layout)

    def draw_buttons_ext(self, context, layout):
        self.draw_settings(context, layout, True)
        _draw_problems(self, context, layout)

    def draw_settings(self, context, layout, extended):
        pass


def _labeled(layout, node, prop, label):
    """A property with its label on the left of the node (issue #17: bare
    drop-downs gave no clue what they set)."""
    split = layout.split(factor=0.42, align=True)
    split.label(text=label)
    split.prop(node, prop, text="")


def _draw_problems(node, context, layout):
    obj = getattr(context, "object", None)
    for problem in node_problems(node, obj):
        layout.label(text=problem, icon="ERROR")


def _armature_of(obj):
    """The armature object deforming mesh `obj`, as the addon's runtime picks
    it (rig.armature_of when the rest of the addon is present): the armature
    the Spring Skin modifier took over (``obj.springskin.armature``),
    else the Armature modifier named by ``obj.springskin.armature_modifier``,
    else the first Armature modifier with an armature, else the parent
    armature (Object.find_armature)."""
    try:
        from . import rig as _rig
    except ImportError:  # standalone use (tests of this module alone)
        _rig = None
    if _rig is not None:
        return _rig.armature_of(obj)
    wanted = getattr(getattr(obj, "springskin", None), "armature_modifier", "")
    mods = [m for m in obj.modifiers if m.type == "ARMATURE" and m.object is not None
            and m.object.type == "ARMATURE"]
    for mod in mods:
        if wanted and mod.name == wanted:
            return mod.object
    return mods[0].object if mods else obj.find_armature()


def _active_armature(context):
    obj = getattr(context, "object", None)
    if obj is None or obj.type != "MESH":
        return None
    return _armature_of(obj)


_ATTACHMENTS = (
    ("WEIGHTS", "Skin Weights",
     "One attachment per skin weight bone, blended with the weights: no tears where "
     "neighbors are weighted to bones that move apart (the default)"),
    ("BINDING", "Binding (Paper)",
     "The attachment binding's one bone per vertex, as Toothman 2020 does"),
)

_METHODS = (
    ("LBS", "Linear Blend", "Linear blend skinning"),
    ("DQS", "Dual Quaternion", "Dual quaternion skinning (Blender's Preserve Volume)"),
    ("RIGID", "Rigid Attachment", "Rigid attachment skinning (Toothman 2020, 4.1)"),
    ("IRS", "Incremental Rotation", "Incremental rotation skinning (Toothman 2020, Eq. 14-18)"),
    ("COR", "Centers of Rotation",
     "Skinning with optimized centers of rotation (Le & Hodgins 2016)"),
)


class SpringSkinJointInfluence(PropertyGroup):
    """An IRS per-bone override: [p_i, c_i] for one joint"""
    bone: StringProperty(name="Bone", description="Bone of the armature",
                         update=_on_property_update)
    parent_influence: FloatProperty(
        name="Parent", description="p_i of Eq. 14 for this joint", default=0.5,
        min=MIN_INFLUENCE, max=1.0, update=_on_property_update)
    child_influence: FloatProperty(
        name="Child", description="c_i of Eq. 14 for this joint", default=0.5,
        min=MIN_INFLUENCE, max=1.0, update=_on_property_update)


class SpringSkinSkinningNode(_SpringSkinNode, Node):
    """Skinning: bind pose to posed positions (a source of the graph)"""
    bl_idname = "SpringSkinSkinningNode"
    bl_label = "Skinning"
    bl_icon = "MOD_ARMATURE"
    bl_width_default = 260.0  # "Incremental Rotation" in full (issue #37, item 9)

    method: EnumProperty(name="Method", items=_METHODS, default="LBS",
                         update=_on_property_update)
    parent_influence: FloatProperty(
        name="Parent Influence",
        description="IRS: p_i of Eq. 14, how far the parent joint's rotation reaches into "
                    "the bone", default=0.5, min=MIN_INFLUENCE, max=1.0,
        update=_on_property_update)
    child_influence: FloatProperty(
        name="Child Influence",
        description="IRS: c_i of Eq. 14, how far the child joint's rotation reaches into "
                    "the bone", default=0.5, min=MIN_INFLUENCE, max=1.0,
        update=_on_property_update)
    length_adjust: BoolProperty(
        name="Length Adjust",
        description="IRS: move each vertex back to its rest distance from the posed "
                    "skeleton along its scale vector", default=False,
        update=_on_property_update)
    attachment: EnumProperty(
        name="Attachment", items=_ATTACHMENTS, default="WEIGHTS",
        description="Rigid and IRS: where each vertex is attached to the skeleton",
        update=_on_property_update)
    joint_influences: CollectionProperty(type=SpringSkinJointInfluence)

    def init(self, _context):
        self.outputs.new(POSITIONS_SOCKET, "Positions")

    def draw_label(self):
        return "Skinning (%s)" % self.method

    def draw_settings(self, context, layout, extended):
        _labeled(layout, self, "method", "Method")
        if self.method in ("RIGID", "IRS"):
            _labeled(layout, self, "attachment", "Attachment")
        if self.method != "IRS":
            return
        col = layout.column(align=True)
        col.prop(self, "parent_influence", text="Parent")
        col.prop(self, "child_influence", text="Child")
        layout.prop(self, "length_adjust")
        if not extended:
            if len(self.joint_influences):
                layout.label(text="%d joint override(s)" % len(self.joint_influences))
            return
        layout.label(text="Joint Overrides:")
        armature = _active_armature(context)
        for i, joint in enumerate(self.joint_influences):
            box = layout.box()
            row = box.row(align=True)
            if armature is not None:
                row.prop_search(joint, "bone", armature.data, "bones", text="")
            else:
                row.prop(joint, "bone", text="")
            op = row.operator(SPRINGSKIN_OT_graph_joint_remove.bl_idname, text="", icon="X")
            op.tree_name, op.node_name, op.index = self.id_data.name, self.name, i
            row = box.row(align=True)
            row.prop(joint, "parent_influence")
            row.prop(joint, "child_influence")
        op = layout.operator(SPRINGSKIN_OT_graph_joint_add.bl_idname, icon="ADD")
        op.tree_name, op.node_name = self.id_data.name, self.name


_PROFILES = (
    ("BULGE", "Bulge", "-(0.5 - t)^2 + 1.25: 1 at the joints, 1.25 mid-bone"),
    ("LINEAR", "Linear", "t"),
    ("QUAD_IN", "Quadratic In", "t^2"),
    ("QUAD_OUT", "Quadratic Out", "1 - (1 - t)^2"),
    ("CUBIC_IN", "Cubic In", "t^3"),
    ("CUBIC_OUT", "Cubic Out", "1 - (1 - t)^3"),
    ("QUARTIC_IN", "Quartic In", "t^4"),
    ("QUARTIC_OUT", "Quartic Out", "1 - (1 - t)^4"),
    ("SINE_IN_OUT", "Sine In-Out", "(1 - cos(pi t)) / 2"),
)


def _split_bones(text):
    return [name.strip() for name in text.split(",") if name.strip()]


def _on_bone_pick(self, context):
    """Radial: the bone chosen in the picker is appended to `bones`."""
    name = self.bone_pick
    if not name:
        return
    bones = _split_bones(self.bones)
    self.bone_pick = ""
    if name not in bones:
        self.bones = ", ".join(bones + [name])  # its own update notifies


class SpringSkinRadialNode(_SpringSkinNode, Node):
    """Radial: scale the scale vectors of the vertices attached to some bones
    along their bone (Toothman 2020, 5.1)"""
    bl_idname = "SpringSkinRadialNode"
    bl_label = "Radial"
    bl_icon = "FORCE_FORCE"
    bl_width_default = 220.0

    bones: StringProperty(
        name="Bones", description="Names of the selected bones, separated by commas",
        update=_on_property_update)
    bone_pick: StringProperty(
        name="Add Bone", description="Append a bone of the active object's armature",
        update=_on_bone_pick)
    profile: EnumProperty(name="Profile", items=_PROFILES, default="BULGE",
                          update=_on_property_update)
    amount: FloatProperty(
        name="Amount", description="Strength (0: no change, negative: shrink); keyframe it "
                                   "to animate", default=1.0, update=_on_property_update)

    def init(self, _context):
        self.inputs.new(POSITIONS_SOCKET, "Positions")
        self.outputs.new(POSITIONS_SOCKET, "Positions")

    def draw_settings(self, context, layout, extended):
        _labeled(layout, self, "bones", "Bones")
        armature = _active_armature(context)
        if armature is not None:
            layout.prop_search(self, "bone_pick", armature.data, "bones", text="",
                               icon="BONE_DATA")
        _labeled(layout, self, "profile", "Profile")
        layout.prop(self, "amount")


_INTEGRATORS = (
    ("EXPLICIT", "Explicit", "v += dt F_net (Eq. 23)"),
    ("SEMI_IMPLICIT", "Semi-Implicit",
     "u = (1 - damping)(u + dt F_net); v += dt u"),
)
# Items carry their numbers: a .blend stores an enum as its number, so the
# numbers of files saved before an item was added stay what they meant.
_CONVERGENCE = (
    ("RELATIVE", "Relative", "Stop when the estimated distance to the equilibrium is below the "
     "threshold times the mean edge length (issue #36): the same on a mesh of any density",
     "NONE", 4),
    ("DISPLACEMENT", "Displacement", "Stop when the largest vertex move is below the threshold "
     "in model units (the paper's rule: a smaller fraction of an edge on a dense mesh)",
     "NONE", 0),
    ("FORCE", "Force", "Stop when the largest |F_net| is below the threshold", "NONE", 1),
    ("ENERGY", "Energy", "Stop when the total spring energy stops decreasing", "NONE", 2),
    ("ITERATIONS", "Iterations", "Always run Max Iterations", "NONE", 3),
)
_SOLVERS = (
    ("AUTO", "Auto", "Multigrid, or Multilevel for a spring with surface edits", "NONE", 3),
    ("MULTIGRID", "Multigrid", "A multigrid correction over the whole surface (not in the "
     "paper): about as many iterations on a dense character as on a light one", "NONE", 4),
    ("MULTILEVEL", "Multilevel", "Chebyshev plus a coarse correction over slabs of each bone "
     "(not in the paper): few iterations on light meshes, more on dense ones", "NONE", 0),
    ("CHEBYSHEV", "Chebyshev", "The plain update accelerated by Chebyshev's semi-iterative "
     "method (Golub & Varga 1961; not in the paper): the same equilibrium in fewer iterations",
     "NONE", 1),
    ("JACOBI", "Jacobi", "The paper's plain update of Eq. 23", "NONE", 2),
)
_MODES = (
    ("FRAME_INDEPENDENT", "Frame Independent",
     "Every frame's solve starts from that frame's first stage"),
    ("FRAME_DEPENDENT", "Frame Dependent",
     "A frame's solve starts from the previous frame's output (deform frames in order)"),
)


def _stiffness_property(force, meaning, soft_max=100.0):
    return FloatProperty(
        name=force.capitalize(), description="Stiffness k of the %s force (%s)" % (force, meaning),
        default=DEFAULT_STIFFNESS[force], min=0.0, soft_max=soft_max, update=_on_property_update)


def _map_property(force):
    return StringProperty(
        name=force.capitalize(),
        description="Vertex group whose weights multiply the %s stiffness per vertex (0 where "
                    "a vertex is not in the group); empty: 1 everywhere" % force,
        update=_on_property_update)


class SpringSkinSpringNode(_SpringSkinNode, Node):
    """Spring: relax the positions it is fed toward an equilibrium of spring
    forces (Toothman 2020, 4.2, Eq. 21-23), with surface edits (5.2)"""
    bl_idname = "SpringSkinSpringNode"
    bl_label = "Spring"
    bl_icon = "FORCE_HARMONIC"
    bl_width_default = 260.0

    stiffness_surface: _stiffness_property("surface", "edge lengths")
    stiffness_length: _stiffness_property("length", "scale-vector lengths")
    stiffness_torsion: _stiffness_property("torsion", "angles between scale vectors")
    stiffness_bone: _stiffness_property("bone", "angle of the scale vector to its bone")
    stiffness_edit: _stiffness_property("edit", "pull of surface edits, times each edit's own")
    stiffness_detail: _stiffness_property(
        "detail", "keeps the fed positions' local shape, so the springs cannot fold the skin; "
        "0 is the paper's model", soft_max=500.0)
    stiffness_twist: _stiffness_property(
        "twist", "turns each scale vector back toward the fed positions' twist about its bone; "
        "0.2 makes the paper's model (Detail 0) settle a twisted limb", soft_max=10.0)
    map_surface: _map_property("surface")
    map_length: _map_property("length")
    map_torsion: _map_property("torsion")
    map_bone: _map_property("bone")
    map_edit: _map_property("edit")
    map_detail: _map_property("detail")
    map_twist: _map_property("twist")
    dt: FloatProperty(name="Time Step", description="dt of the update (Eq. 23)",
                      default=DEFAULT_DT, min=MIN_DT, soft_max=1.0, precision=4,
                      update=_on_property_update)
    integrator: EnumProperty(name="Integrator", items=_INTEGRATORS, default="EXPLICIT",
                             update=_on_property_update)
    damping: FloatProperty(name="Damping", description="Velocity damping of Semi-Implicit",
                           default=DEFAULT_DAMPING, min=0.0, max=MAX_DAMPING,
                           update=_on_property_update)
    max_iterations: IntProperty(name="Max Iterations", description="Iterations per frame at most",
                                default=DEFAULT_MAX_ITERATIONS, min=1, max=MAX_ITERATIONS_LIMIT,
                                update=_on_property_update)
    convergence: EnumProperty(name="Convergence", items=_CONVERGENCE, default="RELATIVE",
                              update=_on_property_update)
    threshold: FloatProperty(
        name="Threshold", description="Convergence threshold: Relative, a fraction of the mean "
                                      "edge length (0: 0.001); the others, model units (0: "
                                      "the smallest side of the rest bounding box x 1e-4)",
        default=0.0, min=0.0, precision=6, update=_on_property_update)
    mode: EnumProperty(name="Mode", items=_MODES, default="FRAME_INDEPENDENT",
                       update=_on_property_update)
    solver: EnumProperty(
        name="Solver", items=_SOLVERS, default="AUTO",
        description="How the Explicit update iterates (Semi-Implicit and the Energy scheme "
                    "always use Jacobi)", update=_on_property_update)
    chebyshev_rho: FloatProperty(
        name="Acceleration", description="Chebyshev solver: the estimated spectral radius rho "
        "of the iteration: the same equilibrium in fewer iterations (0.96 suits Multilevel, and "
        "Auto on the GPU; 0.99 Chebyshev alone)",
        default=DEFAULT_CHEBYSHEV_RHO, min=MIN_CHEBYSHEV_RHO, max=MAX_CHEBYSHEV_RHO,
        precision=4, update=_on_property_update)
    attachment: EnumProperty(
        name="Attachment", items=_ATTACHMENTS, default="WEIGHTS",
        description="Where the scale vectors of the length, torsion and bone springs start: "
                    "the weighted mean of the skin-weight bones' attachments, or the "
                    "binding's one bone", update=_on_property_update)

    def init(self, _context):
        self.inputs.new(POSITIONS_SOCKET, "Positions")
        self.inputs.new(EDIT_SOCKET, "Edit")
        self.outputs.new(POSITIONS_SOCKET, "Positions")

    def update(self):
        _sync_edit_inputs(self)

    def draw_settings(self, context, layout, extended):
        col = layout.column(align=True)
        col.label(text="Stiffness:")
        for force in FORCES:
            col.prop(self, "stiffness_" + force)
        if extended:
            col = layout.column(align=True)
            col.label(text="Stiffness Maps:")
            obj = getattr(context, "object", None)
            for force in FORCES:
                if obj is not None and obj.type == "MESH":
                    col.prop_search(self, "map_" + force, obj, "vertex_groups")
                else:
                    col.prop(self, "map_" + force)
        col = layout.column(align=True)
        col.prop(self, "dt")
        col.prop(self, "max_iterations")
        _labeled(layout, self, "integrator", "Integrator")
        if self.integrator == "SEMI_IMPLICIT":
            layout.prop(self, "damping")
        elif self.convergence != "ENERGY":
            _labeled(layout, self, "solver", "Solver")
            if self.solver in ("AUTO", "MULTILEVEL", "CHEBYSHEV"):
                layout.prop(self, "chebyshev_rho")
        _labeled(layout, self, "convergence", "Stop When")
        if self.convergence in ("RELATIVE", "DISPLACEMENT", "FORCE"):
            layout.prop(self, "threshold")
        _labeled(layout, self, "mode", "Frames")
        _labeled(layout, self, "attachment", "Anchors")


_IMPLICIT_OPERATORS = (
    ("CONTACT", "Contact", "Clean union of the two fields, turning into contact as the joint "
     "bends beyond 90 degrees (g_dc, Vaillant 2015, 4.5): the skin folds and presses "
     "against itself"),
    ("BULGE", "Bulge", "Contact with a bulge: the skin pushed out around the contact region "
     "(g_db, Vaillant 2015, 4.5), as at fingers and elbows"),
    ("UNION", "Union", "The clean union alone, no contact (g_dc with d = 0)"),
)


class SpringSkinImplicitJointOperator(PropertyGroup):
    """An Implicit per-joint operator: the operator at the joint between a
    bone and its parent"""
    bone: StringProperty(
        name="Bone", description="Bone of the armature: its joint with its parent takes the "
                                 "operator", update=_on_property_update)
    operator: EnumProperty(
        name="Operator", items=_IMPLICIT_OPERATORS, default="BULGE",
        description="Composition operator at this joint", update=_on_property_update)


class SpringSkinImplicitNode(_SpringSkinNode, Node):
    """Implicit: track the positions it is fed (DQS in the paper) onto the
    per-bone implicit surfaces composed at the joints, with contact at folds
    (implicit skinning, Vaillant 2015, 4.6.2)"""
    bl_idname = "SpringSkinImplicitNode"
    bl_label = "Implicit"
    bl_icon = "META_BALL"
    bl_width_default = 280.0

    operator: EnumProperty(
        name="Operator", items=_IMPLICIT_OPERATORS, default=DEFAULT_IMPLICIT["operator"],
        description="Composition operator at every joint without a per-joint operator",
        update=_on_property_update)
    iterations: IntProperty(
        name="Iterations", description="Newton projection steps per frame (Eq. 4.5), a "
                                       "tangential relaxation after every second one",
        default=DEFAULT_IMPLICIT["iterations"], min=0, max=IMPLICIT_MAX_ITERATIONS,
        update=_on_property_update)
    sigma: FloatProperty(
        name="Step (Sigma)", description="sigma of Eq. 4.5: the fraction of the Newton step "
                                         "taken (the paper: 0.35)",
        default=DEFAULT_IMPLICIT["sigma"], min=MIN_SIGMA, max=1.0, precision=3,
        update=_on_property_update)
    contact_angle: FloatProperty(
        name="Contact Angle", description="A vertex stops at contact when its field gradient "
                                          "turns by more than this between two steps (the "
                                          "paper: 55 degrees)",
        default=DEFAULT_IMPLICIT["contact_angle"], min=MIN_CONTACT_ANGLE,
        max=MAX_CONTACT_ANGLE, precision=1, update=_on_property_update)
    smoothing_iterations: IntProperty(
        name="Smoothing", description="Laplacian smoothing steps of the contact regions "
                                      "(Eq. 4.8)",
        default=DEFAULT_IMPLICIT["smoothing_iterations"], min=0, max=IMPLICIT_MAX_ITERATIONS,
        update=_on_property_update)
    diffusion_iterations: IntProperty(
        name="Diffusion", description="Diffusion steps of the contact regions' smoothing "
                                      "weights (beta, Eq. 4.8)",
        default=DEFAULT_IMPLICIT["diffusion_iterations"], min=0, max=IMPLICIT_MAX_ITERATIONS,
        update=_on_property_update)
    bulge: FloatProperty(
        name="Bulge", description="Scale of the Bulge operator's controller d_b: 0 no bulge, "
                                  "1 the paper's",
        default=DEFAULT_IMPLICIT["bulge"], min=0.0, max=1.0, update=_on_property_update)
    tracking: EnumProperty(
        name="Tracking", items=(
            ("INDEPENDENT", "Independent",
             "Every frame from its first stage (implicit skinning, 4.6.2): frames in any "
             "order, sharded bakes give the same result"),
            ("ELASTIC", "Elastic",
             "Every frame from the previous result through virtual frames, relaxed as an "
             "elastic skin (elastic implicit skinning, 4.6.3): depends on the frame order"),
        ), default=DEFAULT_IMPLICIT["tracking"],
        description="How each frame's vertices find the implicit skin",
        update=_on_property_update)
    substep_angle: FloatProperty(
        name="Substep Angle", description="Elastic: the largest bone rotation of one virtual "
                                          "frame, in degrees",
        default=DEFAULT_IMPLICIT["substep_angle"], min=MIN_SUBSTEP_ANGLE,
        max=MAX_SUBSTEP_ANGLE, precision=1, update=_on_property_update)
    relaxation_iterations: IntProperty(
        name="Relaxation", description="Elastic: relaxation steps of the skin per virtual "
                                       "frame (each a sparse solve and a projection)",
        default=DEFAULT_IMPLICIT["relaxation_iterations"], min=0,
        max=IMPLICIT_MAX_ITERATIONS, update=_on_property_update)
    joint_operators: CollectionProperty(
        type=SpringSkinImplicitJointOperator, name="Per-Joint Operators",
        description="The operator at some joints (a bone and its parent); the other joints "
                    "take Operator")

    def init(self, _context):
        self.inputs.new(POSITIONS_SOCKET, "Positions")
        self.outputs.new(POSITIONS_SOCKET, "Positions")

    def draw_settings(self, context, layout, extended):
        _labeled(layout, self, "operator", "Operator")
        col = layout.column(align=True)
        col.prop(self, "iterations")
        col.prop(self, "sigma")
        col.prop(self, "contact_angle")
        col = layout.column(align=True)
        col.label(text="Contact Regions:")
        col.prop(self, "smoothing_iterations")
        col.prop(self, "diffusion_iterations")
        layout.prop(self, "bulge")
        _labeled(layout, self, "tracking", "Tracking")
        if self.tracking == "ELASTIC":
            col = layout.column(align=True)
            col.prop(self, "substep_angle")
            col.prop(self, "relaxation_iterations")
        if not extended:
            if len(self.joint_operators):
                layout.label(text="%d per-joint operator(s)" % len(self.joint_operators))
            return
        layout.label(text="Per-Joint Operators:")
        armature = _active_armature(context)
        for i, joint in enumerate(self.joint_operators):
            row = layout.box().row(align=True)
            if armature is not None:
                row.prop_search(joint, "bone", armature.data, "bones", text="")
            else:
                row.prop(joint, "bone", text="")
            row.prop(joint, "operator", text="")
            op = row.operator(SPRINGSKIN_OT_graph_implicit_joint_remove.bl_idname, text="",
                              icon="X")
            op.tree_name, op.node_name, op.index = self.id_data.name, self.name, i
        op = layout.operator(SPRINGSKIN_OT_graph_implicit_joint_add.bl_idname, icon="ADD")
        op.tree_name, op.node_name = self.id_data.name, self.name


def _sync_edit_inputs(node):
    """Keep one Edit input per linked Surface Edit plus one free at the end."""
    edits = [s for s in node.inputs if s.bl_idname == EDIT_SOCKET]
    for socket in edits[:-1]:
        if not socket.is_linked:
            node.inputs.remove(socket)
    edits = [s for s in node.inputs if s.bl_idname == EDIT_SOCKET]
    if not edits or edits[-1].is_linked:
        node.inputs.new(EDIT_SOCKET, "Edit")


class SpringSkinStrokeSample(PropertyGroup):
    """One sample of a stroke attached to the surface: a loop triangle of
    the mesh and barycentric coordinates in it (Toothman 2020, 7.4)"""
    triangle: IntProperty(name="Triangle", description="Loop triangle index of the mesh (the "
                                                       "rig's triangle row)", min=0)
    barycentric: FloatVectorProperty(name="Barycentric", size=3,
                                     description="Weights of the triangle's three corners")


#: Where a Surface Edit's region and targets come from.
EDIT_SOURCE_ITEMS = (
    ("GROUP", "Vertex Group", "Kinematic vertices: a vertex group; targets: Push along the "
                              "scale vectors"),
    ("STROKE", "Stroke", "Kinematic vertices: the triangles under a stroke drawn on the skin "
                         "(Spring Edit tool); targets: a parabolic bulge along it"),
)
#: ID properties of a stroke edit: the kinematic rows and their bind-space
#: offsets for a bulge of 1 (springskin.edit_from_stroke), flattened.
STROKE_KINEMATIC_KEY = "stroke_kinematic"
STROKE_OFFSETS_KEY = "stroke_offsets"


class SpringSkinSurfaceEditNode(_SpringSkinNode, Node):
    """Surface Edit: push a region of interest (a vertex group, or a stroke
    drawn on the skin) for a Spring node (Toothman 2020, 5.2, 7.4)"""
    bl_idname = "SpringSkinSurfaceEditNode"
    bl_label = "Surface Edit"
    bl_icon = "SCULPTMODE_HLT"
    bl_width_default = 220.0

    source: EnumProperty(name="Source", items=EDIT_SOURCE_ITEMS, default="GROUP",
                         description="Where the region and its targets come from",
                         update=_on_property_update)
    stroke: CollectionProperty(type=SpringSkinStrokeSample, name="Stroke",
                               description="The stroke on the surface (triangle, barycentric)")
    bulge: FloatProperty(
        name="Bulge", description="A stroke edit's growth of the scale vectors in the "
                                  "stroke's middle (Toothman 2020, 5.1; negative: a dent); "
                                  "keyframe it to animate",
        default=0.25, soft_min=-1.0, soft_max=1.0, update=_on_property_update)
    vertex_group: StringProperty(
        name="Vertex Group",
        description="The ROI's kinematic vertices: the vertices with a weight > 0 in this "
                    "group of the mesh", update=_on_property_update)
    push: FloatProperty(
        name="Push", description="Move every kinematic vertex this far along its bind "
                                 "scale-vector direction (out of the body; negative: in)",
        default=0.01, subtype="DISTANCE", precision=4, update=_on_property_update)
    grow: IntProperty(name="Grow", description="Rings of passive vertices around the kinematic "
                                               "ones", default=DEFAULT_EDIT_GROW, min=0,
                      max=EDIT_GROW_LIMIT, update=_on_property_update)
    stiffness: FloatProperty(name="Stiffness", description="This ROI's weight (times the Spring "
                                                           "node's edit stiffness)",
                             default=1.0, min=0.0, update=_on_property_update)
    weight: FloatProperty(name="Weight", description="How much of the edit applies; keyframe it "
                                                     "to animate", default=1.0, min=0.0,
                          soft_max=1.0, update=_on_property_update)

    def init(self, _context):
        self.outputs.new(EDIT_SOCKET, "Edit")

    def draw_settings(self, context, layout, extended):
        layout.prop(self, "source", text="")
        obj = getattr(context, "object", None)
        col = layout.column(align=True)
        if self.source == "STROKE":
            layout.label(text="Stroke: %d samples, %d kinematic" % (
                len(self.stroke), len(self.get(STROKE_KINEMATIC_KEY, ()))))
            col = layout.column(align=True)
            col.prop(self, "bulge")
        else:
            if obj is not None and obj.type == "MESH":
                layout.prop_search(self, "vertex_group", obj, "vertex_groups", text="")
            else:
                layout.prop(self, "vertex_group", text="")
            col = layout.column(align=True)
            col.prop(self, "push")
        col.prop(self, "grow")
        col.prop(self, "stiffness")
        col.prop(self, "weight")


class SpringSkinNormalsNode(_SpringSkinNode, Node):
    """Normals: area-weighted vertex normals of the positions it is fed"""
    bl_idname = "SpringSkinNormalsNode"
    bl_label = "Normals"
    bl_icon = "NORMALS_VERTEX"

    def init(self, _context):
        self.inputs.new(POSITIONS_SOCKET, "Positions")
        self.outputs.new(NORMALS_SOCKET, "Normals")


class SpringSkinOutputNode(_SpringSkinNode, Node):
    """Output: the deformed positions (and optionally normals) of the mesh"""
    bl_idname = "SpringSkinOutputNode"
    bl_label = "Output"
    bl_icon = "OUTPUT"

    def init(self, _context):
        self.inputs.new(POSITIONS_SOCKET, "Positions")
        self.inputs.new(NORMALS_SOCKET, "Normals")


_NODE_TYPES = {
    "SpringSkinSkinningNode": "skinning",
    "SpringSkinRadialNode": "radial",
    "SpringSkinSpringNode": "spring",
    "SpringSkinImplicitNode": "implicit",
    "SpringSkinSurfaceEditNode": "edit",
    "SpringSkinNormalsNode": "normals",
    "SpringSkinOutputNode": "output",
}
_LAYOUT_NODES = ("NodeReroute", "NodeFrame")


# --- operators (IRS joint overrides) ------------------------------------------

def _find_node(tree_name, node_name):
    tree = bpy.data.node_groups.get(tree_name)
    return tree.nodes.get(node_name) if tree is not None else None


class _NodeRowsOperator:
    """A row added to / removed from a node's collection property (the
    per-joint rows of the Skinning and Implicit nodes). Subclasses set
    node_type (the node's bl_idname), rows (the collection) and what (the
    row's name in messages)."""
    bl_options = {"REGISTER", "UNDO", "INTERNAL"}
    node_type = ""
    rows = ""
    what = ""

    tree_name: StringProperty(options={"HIDDEN"})
    node_name: StringProperty(options={"HIDDEN"})

    def _node(self):
        node = _find_node(self.tree_name, self.node_name)
        return node if node is not None and node.bl_idname == self.node_type else None


class _NodeRowAdd(_NodeRowsOperator):
    def execute(self, _context):
        node = self._node()
        if node is None:
            self.report({"ERROR"}, "no %s node '%s'" % (self.kind, self.node_name))
            return {"CANCELLED"}
        getattr(node, self.rows).add()
        _notify(node.id_data)
        return {"FINISHED"}


class _NodeRowRemove(_NodeRowsOperator):
    index: IntProperty(options={"HIDDEN"})

    def execute(self, _context):
        node = self._node()
        if node is None or not 0 <= self.index < len(getattr(node, self.rows)):
            self.report({"ERROR"}, "no %s %d on '%s'" % (self.what, self.index, self.node_name))
            return {"CANCELLED"}
        getattr(node, self.rows).remove(self.index)
        _notify(node.id_data)
        return {"FINISHED"}


class SPRINGSKIN_OT_graph_joint_add(_NodeRowAdd, Operator):
    """Add a per-joint override of the IRS influences"""
    bl_idname = "springskin.graph_joint_add"
    bl_label = "Add Joint Override"
    node_type, kind = "SpringSkinSkinningNode", "skinning"
    rows, what = "joint_influences", "joint override"


class SPRINGSKIN_OT_graph_joint_remove(_NodeRowRemove, Operator):
    """Remove this per-joint override"""
    bl_idname = "springskin.graph_joint_remove"
    bl_label = "Remove Joint Override"
    node_type, kind = "SpringSkinSkinningNode", "skinning"
    rows, what = "joint_influences", "joint override"


class SPRINGSKIN_OT_graph_implicit_joint_add(_NodeRowAdd, Operator):
    """Add a per-joint operator to the Implicit node"""
    bl_idname = "springskin.graph_implicit_joint_add"
    bl_label = "Add Per-Joint Operator"
    node_type, kind = "SpringSkinImplicitNode", "implicit"
    rows, what = "joint_operators", "per-joint operator"


class SPRINGSKIN_OT_graph_implicit_joint_remove(_NodeRowRemove, Operator):
    """Remove this per-joint operator"""
    bl_idname = "springskin.graph_implicit_joint_remove"
    bl_label = "Remove Per-Joint Operator"
    node_type, kind = "SpringSkinImplicitNode", "implicit"
    rows, what = "joint_operators", "per-joint operator"


# --- link validation ----------------------------------------------------------

def _upstream_socket(socket, seen=None):
    """The output socket feeding input `socket` through reroutes (unmuted
    links only), or None."""
    seen = set() if seen is None else seen
    for link in socket.links:
        if link.is_muted:
            continue
        node = link.from_node
        if node.bl_idname == "NodeReroute":
            if node.name in seen:
                return None
            seen.add(node.name)
            return _upstream_socket(node.inputs[0], seen)
        return link.from_socket
    return None


def _link_compatible(link):
    """False for a link that carries one kind into a socket of another."""
    if link.to_node.bl_idname == "NodeReroute":
        return True  # checked at the real destination
    if link.from_node.bl_idname == "NodeReroute":
        source = _upstream_socket(link.from_node.inputs[0])
        if source is None:
            return True  # nothing arrives: reported as unconnected, not as a bad link
    else:
        source = link.from_socket
    return source.bl_idname == link.to_socket.bl_idname


def validate_links(tree):
    """Mark every link of `tree` between sockets of different kinds invalid
    (drawn red); returns the incompatible links. Blender clears the mark on
    its next update of the tree, which schedules this again."""
    bad = []
    for link in tree.links:
        if not _link_compatible(link):
            bad.append(link)
            if link.is_valid:
                link.is_valid = False
    return bad


_pending_validation = set()


def _validate_later(tree_name):
    _pending_validation.discard(tree_name)
    tree = bpy.data.node_groups.get(tree_name)
    if tree is not None and tree.bl_idname == TREE_IDNAME:
        validate_links(tree)
    return None  # one shot


def _schedule_link_validation(tree):
    if tree.name in _pending_validation:
        return
    _pending_validation.add(tree.name)
    bpy.app.timers.register(functools.partial(_validate_later, tree.name), first_interval=0.0)


@bpy.app.handlers.persistent
def _on_load_post(_filepath):
    for tree in bpy.data.node_groups:
        if tree.bl_idname == TREE_IDNAME:
            validate_links(tree)


@bpy.app.handlers.persistent
def _on_depsgraph_update(_scene, depsgraph):
    """Keyframes edited in an action used by a graph tree: the sampled keys
    change, so the graph does."""
    actions = {u.id.original for u in depsgraph.updates if isinstance(u.id, bpy.types.Action)}
    if not actions:
        return
    for tree in bpy.data.node_groups:
        if (tree.bl_idname == TREE_IDNAME and tree.animation_data is not None
                and tree.animation_data.action in actions):
            _notify(tree)


# --- problems of one node (drawn in the node) ---------------------------------

def _required_inputs(node):
    if node.bl_idname in ("SpringSkinRadialNode", "SpringSkinSpringNode",
                          "SpringSkinImplicitNode", "SpringSkinNormalsNode",
                          "SpringSkinOutputNode"):
        return [node.inputs[0]]
    return []


def node_problems(node, obj=None):
    """Short descriptions of what is wrong with `node` that can be seen
    cheaply (drawn as warnings in the node): unconnected required input,
    incompatible incoming link, unknown bone, missing vertex group of mesh
    object `obj` (skipped when obj is None)."""
    problems = []
    for socket in _required_inputs(node):
        if _upstream_socket(socket) is None:
            problems.append("%s input not connected" % socket.name)
    for socket in node.inputs:
        for link in socket.links:
            if not link.is_muted and not _link_compatible(link):
                source = link.from_socket.name if link.from_node.bl_idname != "NodeReroute" \
                    else "reroute"
                problems.append("%s cannot feed %s" % (source, socket.name))
    mesh = obj if obj is not None and getattr(obj, "type", None) == "MESH" else None
    if node.bl_idname == "SpringSkinRadialNode":
        bones = _split_bones(node.bones)
        if not bones:
            problems.append("no bones selected")
        elif mesh is not None:
            armature = _armature_of(mesh)
            if armature is not None:
                unknown = [b for b in bones if b not in armature.data.bones]
                if unknown:
                    problems.append("unknown bone: %s" % ", ".join(unknown))
    elif node.bl_idname == "SpringSkinSurfaceEditNode" and node.source == "STROKE":
        if not node.get(STROKE_KINEMATIC_KEY):
            problems.append("no stroke (draw one with the Spring Edit tool)")
        if not node.outputs[0].is_linked:
            problems.append("not connected to a Spring node")
    elif node.bl_idname == "SpringSkinSurfaceEditNode":
        if not node.vertex_group:
            problems.append("no vertex group")
        elif mesh is not None and node.vertex_group not in mesh.vertex_groups:
            problems.append("no vertex group '%s'" % node.vertex_group)
        if not node.outputs[0].is_linked:
            problems.append("not connected to a Spring node")
    elif node.bl_idname == "SpringSkinImplicitNode":
        bones = [j.bone for j in node.joint_operators]
        if any(not b for b in bones):
            problems.append("a per-joint operator has no bone")
        armature = _armature_of(mesh) if mesh is not None else None
        if armature is not None:
            unknown = [b for b in bones if b and b not in armature.data.bones]
            if unknown:
                problems.append("unknown bone: %s" % ", ".join(unknown))
    elif node.bl_idname == "SpringSkinSpringNode" and mesh is not None:
        for force in FORCES:
            group = getattr(node, "map_" + force)
            if group and group not in mesh.vertex_groups:
                problems.append("no vertex group '%s'" % group)
    return problems


# --- compilation ----------------------------------------------------------------

def _fcurve(tree, node, prop):
    anim = tree.animation_data
    if anim is None or anim.action is None:
        return None
    path = node.path_from_id(prop)
    for fc in anim.action.fcurves:
        if fc.data_path == path and fc.array_index == 0 and not fc.mute:
            return fc
    return None


def _reduce_keys(keys):
    """Drop the samples that linear interpolation of their neighbours gives."""
    if len(keys) <= 2:
        return keys
    out = [keys[0]]
    for i in range(1, len(keys) - 1):
        (f0, v0), (f1, v1), (f2, v2) = out[-1], keys[i], keys[i + 1]
        between = v0 + (v2 - v0) * (f1 - f0) / (f2 - f0)
        if abs(between - v1) > KEY_COLLINEAR_TOLERANCE * max(1.0, abs(v1)):
            out.append(keys[i])
    out.append(keys[-1])
    return out


def _sampled_keys(tree, node, prop, scene):
    """[[frame, value], ...] of `node.prop`'s F-curve at the integer frames
    of the scene's range, or None when the property is not animated."""
    values = _sampled_values(tree, node, prop, scene)
    if values is None:
        return None
    return _reduce_keys([[frame, v] for frame, v in sorted(values.items())])


def _fail(node, message):
    raise GraphError("node '%s': %s" % (_node_title(node), message), node.name)


def _vertex_group_weights(obj, group):
    """Weight of every vertex of mesh `obj` in vertex group `group` (0 where
    absent)."""
    index = group.index
    weights = [0.0] * len(obj.data.vertices)
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == index:
                weights[v.index] = g.weight
                break
    return weights


def _resolve(node, socket, stack=()):
    """The active node feeding input `socket` of `node`: reroutes followed,
    muted Radial/Spring nodes passed through, a muted Normals node as
    nothing. Raises GraphError for an incompatible link or a muted source
    that cannot be bypassed (muted Implicit nodes pass through too).
    Returns the source node or None."""
    source = _upstream_socket(socket)
    if source is None:
        return None
    src = source.node
    if source.bl_idname != socket.bl_idname:
        _fail(node, "its %s input is linked to the %s output of node '%s' (a %s output "
                    "feeds only %s inputs)" % (socket.name, source.name, _node_title(src),
                                              source.name, source.name))
    if not src.mute:
        return src
    kind = _NODE_TYPES.get(src.bl_idname)
    if kind in ("radial", "spring", "implicit"):
        if src.name in stack:
            _fail(src, "is on a cycle of muted nodes")
        return _resolve(src, src.inputs[0], stack + (src.name,))
    if kind in ("normals", "edit"):
        return None
    _fail(src, "is muted, but a %s node cannot be bypassed (unmute it)" % (kind or "foreign"))


def _graph_structure(tree):
    """Active nodes, their resolved inputs and edit sources; raises GraphError."""
    nodes = []
    for node in tree.nodes:
        if node.bl_idname in _LAYOUT_NODES:
            continue
        if node.bl_idname not in _NODE_TYPES:
            _fail(node, "is not a Spring Skin node (type %s)" % node.bl_idname)
        nodes.append(node)
    outputs = [n for n in nodes if n.bl_idname == "SpringSkinOutputNode"]
    if not outputs:
        raise GraphError("graph '%s': no Output node (a graph has exactly one)" % tree.name)
    if len(outputs) > 1:
        _fail(outputs[1], "a second Output node (node '%s' is one; a graph has exactly one)"
              % _node_title(outputs[0]))
    output = outputs[0]
    if output.mute:
        _fail(output, "the Output node is muted (unmute it)")

    active = [n for n in nodes if not n.mute]
    inputs = {}  # node name -> {"positions": node, "normals": node}
    edits = {}   # spring node name -> [surface edit nodes]
    for node in active:
        kind = _NODE_TYPES[node.bl_idname]
        fed = {}
        if kind in ("radial", "spring", "implicit", "normals", "output"):
            src = _resolve(node, node.inputs[0])
            if src is None:
                _fail(node, "its Positions input is not connected")
            fed["positions"] = src
        if kind == "output":
            src = _resolve(node, node.inputs[1])
            if src is not None:
                fed["normals"] = src
        if kind == "spring":
            edits[node.name] = []
            for socket in node.inputs[1:]:
                src = _resolve(node, socket)
                if src is not None:
                    edits[node.name].append(src)
        inputs[node.name] = fed

    # Cycles (depth-first, three colours), then reachability of the output.
    by_name = {n.name: n for n in active}
    state = {}

    def visit(name, path):
        state[name] = 1
        path.append(name)
        for src in inputs[name].values():
            if state.get(src.name) == 1:
                loop = path[path.index(src.name):] + [src.name]
                loop.reverse()  # data flow order
                _fail(by_name[src.name], "is on a cycle: %s (links must not loop back)"
                      % " -> ".join("'%s'" % _node_title(by_name[n]) for n in loop))
            if src.name not in state:
                visit(src.name, path)
        path.pop()
        state[name] = 2

    for node in active:
        if node.name not in state:
            visit(node.name, [])

    used = set()
    pending = [output.name]
    while pending:
        name = pending.pop()
        if name in used:
            continue
        used.add(name)
        pending.extend(src.name for src in inputs[name].values())
        pending.extend(src.name for src in edits.get(name, ()))
    for node in active:
        if node.name not in used:
            if node.bl_idname == "SpringSkinSurfaceEditNode":
                if _feeds_muted_spring(node):
                    continue  # left out with its muted Spring node
                _fail(node, "does not feed a Spring node that reaches the Output node "
                            "'%s' (connect or mute it)" % _node_title(output))
            _fail(node, "does not reach the Output node '%s' (its result would be unused; "
                        "connect, mute or delete it)" % _node_title(output))
    return active, inputs, edits


def _feeds_muted_spring(node, seen=None):
    """A node whose output reaches (through reroutes) a muted Spring node."""
    seen = set() if seen is None else seen
    for socket in node.outputs:
        for link in socket.links:
            to = link.to_node
            if link.is_muted or to.name in seen:
                continue
            seen.add(to.name)
            if to.bl_idname == "SpringSkinSpringNode" and to.mute:
                return True
            if to.bl_idname == "NodeReroute" and _feeds_muted_spring(to, seen):
                return True
    return False


def _bone_names(obj):
    armature = _armature_of(obj)
    return None if armature is None else {bone.name for bone in armature.data.bones}


def _compile_skinning(node, obj):
    out = {"method": node.method.lower()}
    if node.method in ("RIGID", "IRS"):
        out["attachment"] = node.attachment.lower()
    if node.method == "IRS":
        out["parent_influence"] = node.parent_influence
        out["child_influence"] = node.child_influence
        out["length_adjust"] = bool(node.length_adjust)
        if len(node.joint_influences):
            bones = _bone_names(obj)
            joints = {}
            for joint in node.joint_influences:
                if not joint.bone:
                    _fail(node, "a joint override has no bone")
                if bones is not None and joint.bone not in bones:
                    _fail(node, "joint override: unknown bone '%s'" % joint.bone)
                if joint.bone in joints:
                    _fail(node, "joint override: bone '%s' is listed twice" % joint.bone)
                joints[joint.bone] = [joint.parent_influence, joint.child_influence]
            out["joint_influences"] = joints
    return out


def _compile_radial(tree, node, obj, scene):
    bones = _split_bones(node.bones)
    if not bones:
        _fail(node, "no bones (give the names of the bones to scale, separated by commas)")
    known = _bone_names(obj)
    if known is None:
        _fail(node, "mesh object '%s' has no armature (modifier or parent), so its bones are "
                    "unknown" % obj.name)
    for i, bone in enumerate(bones):
        if bone not in known:
            _fail(node, "unknown bone '%s' (not in armature '%s')"
                  % (bone, _armature_of(obj).name))
        if bone in bones[:i]:
            _fail(node, "bone '%s' is listed twice" % bone)
    out = {"bones": bones, "profile": node.profile.lower(), "amount": node.amount}
    keys = _sampled_keys(tree, node, "amount", scene)
    if keys is not None:
        out["keys"] = keys
    return out


def _sampled_values(tree, node, prop, scene):
    """{frame: value} of `node.prop`'s F-curve at the integer frames of the
    scene's range, or None when the property is not animated."""
    fc = _fcurve(tree, node, prop)
    if fc is None:
        return None
    first, last = scene.frame_start, max(scene.frame_start, scene.frame_end)
    return {frame: fc.evaluate(frame) for frame in range(first, last + 1)}


def _compile_stroke_edit(tree, node, obj, scene):
    """A stroke edit: the stored kinematic rows and unit-bulge offsets
    times Bulge. An animated Bulge becomes the edit's weight keys: the
    offsets are made for the keyed amount of largest magnitude B and the
    weight at a frame is bulge(frame) / B (times an animated Weight), so
    frames keyed B or 0 give exactly that bulge; between them the core
    scales the edit's pull, not its target (its keys are weights)."""
    rows = [int(v) for v in node.get(STROKE_KINEMATIC_KEY, ())]
    unit = [float(x) for x in node.get(STROKE_OFFSETS_KEY, ())]
    if not rows:
        _fail(node, "no stroke: draw one on the mesh with the Spring Edit tool")
    if len(unit) != 3 * len(rows):
        _fail(node, "stroke offsets: expected %d numbers (3 per kinematic vertex), got %d"
              % (3 * len(rows), len(unit)))
    nv = len(obj.data.vertices)
    if max(rows) >= nv:
        _fail(node, "the stroke's vertex row %d is not in mesh '%s' (%d vertices): draw the "
                    "stroke again" % (max(rows), obj.name, nv))
    bulges = _sampled_values(tree, node, "bulge", scene)
    weights = _sampled_values(tree, node, "weight", scene)
    amount = node.bulge
    scale = None
    if bulges is not None:
        amount = max(bulges.values(), key=abs)
        if any(b * amount < 0.0 for b in bulges.values()):
            _fail(node, "the Bulge keys change sign (a bulge and a dent): use two edits")
        scale = {f: (b / amount if amount != 0.0 else 0.0) for f, b in bulges.items()}
    out = {"kinematic": rows,
           "offsets": [[amount * unit[3 * i + k] for k in range(3)] for i in range(len(rows))],
           "grow": node.grow, "stiffness": node.stiffness}
    if scale is not None or weights is not None:
        frames = sorted(scale if scale is not None else weights)
        keys = [[f, max(0.0, (scale[f] if scale is not None else 1.0)
                       * (weights[f] if weights is not None else node.weight))]
                for f in frames]
        out["keys"] = _reduce_keys(keys)
    elif node.weight != 1.0:
        out["keys"] = [[scene.frame_start, node.weight]]
    return out


def _compile_edit(tree, node, obj, scene):
    if node.source == "STROKE":
        return _compile_stroke_edit(tree, node, obj, scene)
    if not node.vertex_group:
        _fail(node, "no vertex group (the ROI's kinematic vertices)")
    group = obj.vertex_groups.get(node.vertex_group)
    if group is None:
        _fail(node, "mesh object '%s' has no vertex group '%s'" % (obj.name, node.vertex_group))
    weights = _vertex_group_weights(obj, group)
    rows = [i for i, w in enumerate(weights) if w > 0.0]
    if not rows:
        _fail(node, "vertex group '%s' is empty (no vertex with a weight > 0)"
              % node.vertex_group)
    out = {"kinematic": rows, "push": node.push, "grow": node.grow,
           "stiffness": node.stiffness}
    keys = _sampled_keys(tree, node, "weight", scene)
    if keys is not None:
        out["keys"] = [[f, max(0.0, w)] for f, w in keys]  # the core wants weights >= 0
    elif node.weight != 1.0:
        out["keys"] = [[scene.frame_start, node.weight]]  # one key: constant
    return out


def _compile_spring(tree, node, obj, scene, edit_nodes):
    maps = {}
    for force in FORCES:
        name = getattr(node, "map_" + force)
        if not name:
            continue
        group = obj.vertex_groups.get(name)
        if group is None:
            _fail(node, "%s stiffness map: mesh object '%s' has no vertex group '%s'"
                  % (force, obj.name, name))
        maps[force] = _vertex_group_weights(obj, group)
    edits = [_compile_edit(tree, edit, obj, scene) for edit in edit_nodes]
    # Auto, Multigrid, Multilevel and Chebyshev need the Explicit update and
    # a scheme other than Energy; elsewhere the node runs Jacobi (the menu is
    # hidden there)
    applies = node.integrator == "EXPLICIT" and node.convergence != "ENERGY"
    solver = node.solver.lower() if applies else "jacobi"
    return {
        "stiffness": {force: getattr(node, "stiffness_" + force) for force in FORCES},
        "stiffness_maps": maps,
        "dt": node.dt,
        "integrator": node.integrator.lower(),
        "damping": node.damping,
        "max_iterations": node.max_iterations,
        "convergence": node.convergence.lower(),
        "threshold": node.threshold,
        "mode": node.mode.lower(),
        "solver": solver,
        "chebyshev_rho": node.chebyshev_rho if solver not in ("jacobi", "multigrid") else 0.0,
        "attachment": node.attachment.lower(),
        "edits": edits,
    }


def _compile_implicit(node, obj):
    out = {"operator": node.operator.lower(), "iterations": node.iterations,
           "sigma": node.sigma, "contact_angle": node.contact_angle,
           "smoothing_iterations": node.smoothing_iterations,
           "diffusion_iterations": node.diffusion_iterations, "bulge": node.bulge,
           "tracking": node.tracking.lower(), "substep_angle": node.substep_angle,
           "relaxation_iterations": node.relaxation_iterations}
    operators = {}
    bones = _bone_names(obj) if len(node.joint_operators) else None
    for joint in node.joint_operators:
        if not joint.bone:
            _fail(node, "a per-joint operator has no bone")
        if bones is not None and joint.bone not in bones:
            _fail(node, "per-joint operator: unknown bone '%s'" % joint.bone)
        if joint.bone in operators:
            _fail(node, "per-joint operator: bone '%s' is listed twice" % joint.bone)
        operators[joint.bone] = joint.operator.lower()
    out["operators"] = operators
    return out


def compile_tree(tree, obj, scene=None):
    """The core's deformer-graph document (docs/deformer-graph.md) of `tree`
    for mesh object `obj`, as a dict for ``json.dumps`` or ``springskin.Graph``.

    Node ids are the node names; nodes come in a topological order (ties in
    the tree's node order). Vertex rows are `obj`'s mesh vertex indices (the
    addon's rig has this one mesh); a Surface Edit's kinematic rows are the
    vertices with a weight > 0 in its vertex group, a stiffness map the
    group's weight per vertex (0 where absent). Animated Radial amounts and
    Surface Edit weights become keys sampled at the integer frames of
    `scene`'s range (default: the context's scene).

    Raises GraphError (naming the node) for: no or two Output nodes, a cycle,
    an unconnected Positions input, a link between sockets of different
    kinds, a node that does not reach the Output, a muted Skinning/Output
    node, a Surface Edit whose vertex group is missing or empty, a missing
    stiffness-map group, a Radial with no bones, unknown or repeated bones
    (Radial, IRS joint overrides, Implicit per-joint operators), or an
    object that is not a mesh.
    """
    if tree is None or tree.bl_idname != TREE_IDNAME:
        raise GraphError("not a Spring Skin Graph node tree: %r" % (tree,))
    if obj is None or obj.type != "MESH":
        raise GraphError("graph '%s': expected a mesh object, got %r" % (tree.name, obj))
    scene = scene if scene is not None else bpy.context.scene
    active, inputs, edits = _graph_structure(tree)

    # Kahn's algorithm, ready nodes in tree order: the order the core runs.
    order_of = {n.name: i for i, n in enumerate(active)}
    consumers = {n.name: [] for n in active}
    pending = {}
    for node in active:
        pending[node.name] = len(inputs[node.name])
        for src in inputs[node.name].values():
            consumers[src.name].append(node.name)
    graph_nodes = [n for n in active if n.bl_idname != "SpringSkinSurfaceEditNode"]
    ready = sorted((n.name for n in graph_nodes if pending[n.name] == 0), key=order_of.get)
    order = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for consumer in consumers[name]:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
                ready.sort(key=order_of.get)
    by_name = {n.name: n for n in active}

    doc_nodes, doc_edges = [], []
    for name in order:
        node = by_name[name]
        kind = _NODE_TYPES[node.bl_idname]
        entry = {"id": name, "type": kind}
        if kind == "skinning":
            entry.update(_compile_skinning(node, obj))
        elif kind == "radial":
            entry.update(_compile_radial(tree, node, obj, scene))
        elif kind == "spring":
            entry.update(_compile_spring(tree, node, obj, scene, edits[name]))
        elif kind == "implicit":
            entry.update(_compile_implicit(node, obj))
        doc_nodes.append(entry)
        for input_name in ("positions", "normals"):
            src = inputs[name].get(input_name)
            if src is not None:
                doc_edges.append({"from": src.name, "to": name, "input": input_name})
    return {"version": GRAPH_VERSION, "nodes": doc_nodes, "edges": doc_edges}


# --- default trees ----------------------------------------------------------------

_TREE_METHODS = ("LBS", "DQS", "RIGID", "IRS", "COR", "SPRING", "IMPLICIT")
_NODE_SPACING = 320.0  # wider than the widest node (Implicit, 280)


def graph_method(tree):
    """The method a graph stands for, in the terms of the object's Method
    field: its one skinning node's method, "SPRING" when that node is IRS
    feeding a spring node, "IMPLICIT" when it is DQS and the graph has an
    implicit node (as :func:`new_graph_tree` makes them); None when
    the graph has no skinning node or several (its method is then the
    graph's own)."""
    if tree is None:
        return None
    skins = [n for n in tree.nodes if n.bl_idname == "SpringSkinSkinningNode"]
    if len(skins) != 1:
        return None
    method = skins[0].method
    if method == "IRS" and any(n.bl_idname == "SpringSkinSpringNode" for n in tree.nodes):
        return "SPRING"
    if method == "DQS" and any(n.bl_idname == "SpringSkinImplicitNode" for n in tree.nodes):
        return "IMPLICIT"
    return method


def skinning_node(tree):
    """The graph's only skinning node (None when it has none or several)."""
    skins = [n for n in tree.nodes if n.bl_idname == "SpringSkinSkinningNode"] if tree else []
    return skins[0] if len(skins) == 1 else None


def new_graph_tree(name, method="LBS"):
    """A new graph tree: Skinning(method) -> Output, Skinning -> Normals ->
    Output's normals; for 'SPRING': Skinning(IRS) -> Spring (defaults) ->
    Output (and Normals), as the core's --method spring; for 'IMPLICIT':
    Skinning(DQS) -> Implicit (defaults) -> Output (and Normals), as
    --method implicit. `method` is one of LBS, DQS, RIGID, IRS, COR,
    SPRING, IMPLICIT (any case). The tree gets a fake user (saved while
    unused)."""
    global _suspended
    key = str(method).upper()
    if key not in _TREE_METHODS:
        raise ValueError("method: expected one of %s, got %r" % (", ".join(_TREE_METHODS), method))
    _suspended += 1
    try:
        tree = bpy.data.node_groups.new(name, TREE_IDNAME)
        tree.use_fake_user = True
        skin = tree.nodes.new("SpringSkinSkinningNode")
        skin.name = "Skinning"
        skin.method = {"SPRING": "IRS", "IMPLICIT": "DQS"}.get(key, key)
        skin.location = (0.0, 0.0)
        last, x = skin, _NODE_SPACING
        if key == "SPRING":
            spring = tree.nodes.new("SpringSkinSpringNode")
            spring.name = "Spring"
            spring.location = (x, 0.0)
            tree.links.new(skin.outputs[0], spring.inputs[0])
            last, x = spring, x + _NODE_SPACING
        if key == "IMPLICIT":
            implicit = tree.nodes.new("SpringSkinImplicitNode")
            implicit.name = "Implicit"
            implicit.location = (x, 0.0)
            tree.links.new(skin.outputs[0], implicit.inputs[0])
            last, x = implicit, x + _NODE_SPACING
        normals = tree.nodes.new("SpringSkinNormalsNode")
        normals.name = "Normals"
        normals.location = (x, -200.0)
        output = tree.nodes.new("SpringSkinOutputNode")
        output.name = "Output"
        output.location = (x + _NODE_SPACING, 0.0)
        tree.links.new(last.outputs[0], output.inputs[0])
        tree.links.new(last.outputs[0], normals.inputs[0])
        tree.links.new(normals.outputs[0], output.inputs[1])
    finally:
        _suspended -= 1
    _notify(tree)
    return tree


# --- add menu, registration ----------------------------------------------------------

class SpringSkinNodeCategory(NodeCategory):
    @classmethod
    def poll(cls, context):
        return getattr(context.space_data, "tree_type", None) == TREE_IDNAME


_categories = [
    SpringSkinNodeCategory("SPRINGSKIN_DEFORM", "Deform", items=[
        NodeItem("SpringSkinSkinningNode"),
        NodeItem("SpringSkinRadialNode"),
        NodeItem("SpringSkinSpringNode"),
        NodeItem("SpringSkinImplicitNode"),
        NodeItem("SpringSkinSurfaceEditNode"),
    ]),
    SpringSkinNodeCategory("SPRINGSKIN_OUTPUT", "Output", items=[
        NodeItem("SpringSkinNormalsNode"),
        NodeItem("SpringSkinOutputNode"),
    ]),
    SpringSkinNodeCategory("SPRINGSKIN_LAYOUT", "Layout", items=[
        NodeItem("NodeFrame"),
        NodeItem("NodeReroute"),
    ]),
]

classes = (
    SpringSkinPositionsSocket,
    SpringSkinNormalsSocket,
    SpringSkinEditSocket,
    SpringSkinGraphTree,
    SpringSkinJointInfluence,
    SpringSkinSkinningNode,
    SpringSkinRadialNode,
    SpringSkinSpringNode,
    SpringSkinImplicitJointOperator,
    SpringSkinImplicitNode,
    SpringSkinStrokeSample,
    SpringSkinSurfaceEditNode,
    SpringSkinNormalsNode,
    SpringSkinOutputNode,
    SPRINGSKIN_OT_graph_joint_add,
    SPRINGSKIN_OT_graph_joint_remove,
    SPRINGSKIN_OT_graph_implicit_joint_add,
    SPRINGSKIN_OT_graph_implicit_joint_remove,
)


def _registered_under_name(cls):
    """The class registered under `cls`'s RNA name (another copy after a
    reload of this module), or None."""
    for base in (Node, NodeSocket, NodeTree, PropertyGroup, Operator):
        if issubclass(cls, base):
            return base.bl_rna_get_subclass_py(cls.__name__)
    return None


def register():
    """Register the tree, sockets, nodes, operators and the Add-menu
    categories. Safe to call twice; classes of the same names left by an
    earlier load of this module (a reload) are replaced."""
    for cls in classes:
        if cls.is_registered:
            continue
        stale = _registered_under_name(cls)
        if stale is not None and stale is not cls:
            bpy.utils.unregister_class(stale)
        bpy.utils.register_class(cls)
    if _CATEGORY_ID in getattr(nodeitems_utils, "_node_categories", {}):
        nodeitems_utils.unregister_node_categories(_CATEGORY_ID)
    nodeitems_utils.register_node_categories(_CATEGORY_ID, _categories)
    for handlers, fn in ((bpy.app.handlers.load_post, _on_load_post),
                         (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update)):
        for old in [h for h in handlers if getattr(h, "__name__", None) == fn.__name__
                    and getattr(h, "__module__", None) == fn.__module__]:
            handlers.remove(old)  # this function or a reloaded module's
        handlers.append(fn)


def unregister():
    """Undo register(); safe when (partly) unregistered."""
    for handlers, fn in ((bpy.app.handlers.load_post, _on_load_post),
                         (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update)):
        while fn in handlers:
            handlers.remove(fn)
    if _CATEGORY_ID in getattr(nodeitems_utils, "_node_categories", {}):
        nodeitems_utils.unregister_node_categories(_CATEGORY_ID)
    for cls in reversed(classes):
        if cls.is_registered:
            bpy.utils.unregister_class(cls)
