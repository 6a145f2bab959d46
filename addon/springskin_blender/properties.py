"""Per-object settings of the Spring Skin deformer (``Object.springskin``).

Saved with the .blend; a file opened without the addon keeps them as ID
properties and gets them back when the addon is enabled again.
"""

import bpy
from bpy.props import BoolProperty, EnumProperty, IntProperty, PointerProperty, StringProperty
from bpy.types import PropertyGroup

__all__ = ["METHOD_ITEMS", "BACKEND_ITEMS", "SpringSkinSettings", "classes", "register",
           "unregister"]

#: Skinning methods of object.springskin_add and of a graph-less deformer.
METHOD_ITEMS = (
    ("LBS", "Linear Blend", "Linear blend skinning: Blender's Armature modifier with "
     "Preserve Volume off"),
    ("DQS", "Dual Quaternion", "Dual quaternion skinning: Blender's Armature modifier with "
     "Preserve Volume on (blended in armature space, as Blender)"),
    ("RIGID", "Rigid Attachment", "Rigid attachment skinning (Toothman 2020, 4.1): every "
     "vertex follows the bone it is attached to; needs a binding"),
    ("IRS", "Incremental Rotation", "Incremental rotation skinning (Toothman 2020, Eq. 14-18): "
     "scale vectors near a joint turn by part of its rotation; needs a binding"),
    ("SPRING", "Spring", "Incremental rotation skinning relaxed by the spring deformer "
     "(Toothman 2020, 4.2), which keeps its local shape (the detail force); needs a binding"),
    ("COR", "Centers of Rotation", "Skinning with optimized centers of rotation (Le & Hodgins "
     "2016); the centers are precomputed when binding"),
    ("IMPLICIT", "Implicit", "Implicit skinning (Vaillant 2015): DQS, then vertices tracked "
     "onto per-bone implicit surfaces with contact at folds"),
)

BACKEND_ITEMS = (
    ("AUTO", "Auto", "The GPU (OpenGL compute) when the renderer is a hardware GPU, else the CPU"),
    ("CPU", "CPU", "Every core (the core's own thread pool)"),
    ("GL", "GPU (OpenGL)", "OpenGL 4.3 compute shaders on the core's own headless context"),
)

BIND_METHOD_ITEMS = (
    ("AUTO", "Auto", "Weight-guided when the mesh has skin weights, else direct"),
    ("DIRECT", "Direct", "Projection onto the nearest bone segment (Toothman 2020, Eq. 12)"),
    ("WEIGHTS", "Weight-Guided", "Projection onto the bones at the joint of the largest "
     "skin weight (Toothman 2020, 3.2)"),
    ("PLANAR", "Planar Dividers", "Planar dividers at the joints (Toothman 2020, Eq. 13)"),
)


def _changed(self, _context):
    from . import runtime
    obj = self.id_data
    if isinstance(obj, bpy.types.Object):
        runtime.settings_changed(obj)


def _cage_poll(self, obj):
    from . import cage
    return cage.cage_poll(self, obj)


def _cage_changed(self, _context):
    """Another cage picked (or the field cleared): the binding of the
    previous one is forgotten (Bind Cage binds the new one)."""
    from . import runtime
    obj = self.id_data
    if isinstance(obj, bpy.types.Object):
        runtime.cage_changed(obj)


def _graph_name_changed(self, context):
    """A graph picked (or cleared): the Method field follows the graph's
    skinning node, so clearing the graph later keeps deforming with what
    the graph showed (issue #17)."""
    from . import nodes
    method = nodes.graph_method(self.graph)
    if method is not None and self.method != method:
        self.method = method  # its own update tags the object
    _changed(self, context)


#: bl_idname of the deformer-graph node tree (nodes.py).
GRAPH_TREE_IDNAME = "SpringSkinGraphTree"


class SpringSkinSettings(PropertyGroup):
    """Spring Skin settings of a mesh object."""

    method: EnumProperty(
        name="Method", items=METHOD_ITEMS, default="LBS", update=_changed,
        description="Skinning method. With a deformer graph it is the graph's skinning node "
                    "(the panel edits that node); Edit as Graph makes a graph of it")
    # The graph is referenced by name, not by an ID PointerProperty: the
    # depsgraph copies every ID that an object's ID properties point to, and
    # Blender 3.4 frees such evaluated copies of a Python-defined node tree
    # after Python has ended (at quit), calling into freed node types (a
    # crash on exit, reproduced with the Rigify addon enabled). By name the
    # tree stays out of the depsgraph. `graph` below reads and writes it.
    graph_name: StringProperty(
        name="Graph", default="", update=_graph_name_changed,
        description="Deformer graph: the name of a Spring Skin Graph node tree; empty: the "
                    "method alone")
    backend: EnumProperty(
        name="Backend", items=BACKEND_ITEMS, default="AUTO", update=_changed,
        description="Where the core deforms the mesh")
    bind_method: EnumProperty(
        name="Bind Method", items=BIND_METHOD_ITEMS, default="AUTO", update=_changed,
        description="Attachment binding method for the methods and graph nodes that need "
                    "one (rigid, IRS, radial, spring, CoR)")
    smooth_iterations: IntProperty(
        name="Smoothing", default=6, min=0, max=1000, update=_changed,
        description="Alternations of Laplacian smoothing of the attachment points and "
                    "reprojection onto the skeleton when binding (Toothman 2020, 3.2)")
    show_unsettled: BoolProperty(
        name="Show Unsettled Vertices", default=True,
        description="Where the springs of the frame shown stopped at Max Iterations before "
                    "settling, mark the vertices still far from their equilibrium in the "
                    "viewport (CPU backend)")
    auto_rebind: BoolProperty(
        name="Auto Rebind", default=False,
        description="When the skin weights change outside Weight Paint and Edit mode (Vertex "
                    "Groups > Limit Total, Normalize All, a script), read them and bind again "
                    "at once; off: keep the binding and mark it stale in the panel")
    cage: PointerProperty(
        type=bpy.types.Object, name="Cage", poll=_cage_poll, update=_cage_changed,
        description="A closed triangle or quad mesh around the character (coupled cages and "
                    "skeletons, Corda et al. 2020): after Bind Cage, moving its vertices "
                    "reshapes the character's rest shape and refits the joints, live; the "
                    "animation plays on the reshaped rest")
    cage_bound: BoolProperty(
        name="Cage Bound", default=False, options={"HIDDEN"},
        description="The cage was bound (Bind Cage): its rest coordinates, triangles and "
                    "matrix are stored on the object")
    cage_edit_in_pose: BoolProperty(
        name="Edit in Pose", default=False, options={"HIDDEN"},
        description="A posed copy of the cage is shown at the current frame; its edits are "
                    "mapped back to the rest cage (CageRev). Set by the Edit in Pose button")
    bound: BoolProperty(
        name="Bound", default=False, options={"HIDDEN"},
        description="The object was bound (Bind) and is deformed by the Spring Skin modifier; "
                    "set by Bind and Unbind")
    armature_modifier: StringProperty(
        name="Armature Modifier", default="", options={"HIDDEN"},
        description="Name of the Armature modifier the Spring Skin modifier took over (kept, "
                    "disabled, its armature moved to Armature Object)")
    armature: PointerProperty(
        type=bpy.types.Object, name="Armature", options={"HIDDEN"},
        poll=lambda _self, obj: obj.type == "ARMATURE",
        description="The armature object that drives the deformation, held by reference as "
                    "Blender's Armature modifier holds it (a duplicate of rig and mesh follows "
                    "its own rig). Taken from the Armature modifier, whose object is cleared "
                    "while Spring Skin drives the mesh (a disabled Armature modifier with an "
                    "object still makes Blender evaluate the mesh once more per pose change); "
                    "Remove Spring Skin puts it back")
    armature_object: StringProperty(
        name="Armature Object", default="", options={"HIDDEN"},
        description="Files saved before Armature held the armature by reference: its name, "
                    "turned into the reference when the file is loaded")


def _graph_get(self):
    """The Spring Skin Graph node tree named by ``graph_name`` (None when
    empty, missing or another kind of tree)."""
    if not self.graph_name:
        return None
    tree = bpy.data.node_groups.get(self.graph_name)
    return tree if tree is not None and tree.bl_idname == GRAPH_TREE_IDNAME else None


def _graph_set(self, tree):
    if tree is not None and tree.bl_idname != GRAPH_TREE_IDNAME:
        raise TypeError("graph: expected a Spring Skin Graph node tree (%s), got %s"
                        % (GRAPH_TREE_IDNAME, tree.bl_idname))
    self.graph_name = tree.name if tree is not None else ""


#: ``settings.graph``: the tree itself (a Python property over graph_name).
SpringSkinSettings.graph = property(_graph_get, _graph_set)

classes = (SpringSkinSettings,)


def register():
    bpy.types.Object.springskin = PointerProperty(
        type=SpringSkinSettings, name="Spring Skin",
        description="Spring Skin deformer settings of this object")


def unregister():
    if hasattr(bpy.types.Object, "springskin"):
        del bpy.types.Object.springskin
