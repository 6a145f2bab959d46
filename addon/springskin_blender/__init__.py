"""SpringSkin for Blender: the SpringSkin deformer as a modifier.

Add Spring Skin on a mesh deformed by an armature: a Mesh Cache modifier
"Spring Skin" that takes over the Armature modifier and reads the
positions the SpringSkin core computes on every frame (linear blend, dual
quaternion, rigid attachment, incremental rotation, spring,
centers-of-rotation or implicit skinning, or a deformer graph edited as
nodes) from a
one-frame .pc2 file of the object's own; it shows, orders and renders like
any modifier and bakes to a Mesh Cache or an Alembic cache for render
farms. Documentation: ``docs/blender.md``.

Modules: ``native`` (lazy import of the compiled ``springskin`` package),
``properties`` (``Object.springskin``), ``rig`` (reading the rig from
Blender), ``runtime`` (the Mesh Cache modifier and its live files,
handlers, per-object state),
``operators``, ``ui`` (the panel), ``nodes`` (the deformer graph node
tree), ``cage`` (a cage that reshapes the character, issue #21) and ``sketch``
(the Line of Action and Spring Edit tools, issue #22).

The native module is imported on first use, never at register time: a
missing or broken build is reported in the panel and by the operators.
"""

bl_info = {
    "name": "SpringSkin",
    "author": "SpringSkin developers",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "Properties > Modifiers > Spring Skin; Node Editor > Spring Skin Graph; "
                "3D Viewport toolbar > Line of Action (Pose), Spring Edit (Object)",
    "description": "Character skinning (LBS, DQS, rigid, IRS, spring, CoR, implicit, deformer "
                   "graphs) by the SpringSkin core, live as a modifier, bakes to Mesh Cache "
                   "and Alembic",
    "doc_url": "",
    "category": "Animation",
}

if "bpy" in locals():  # Reload Scripts (F3 > Reload Scripts): reload the submodules
    import importlib
    for _name in ("native", "rig", "properties", "nodes", "cage", "runtime", "operators",
                  "sketch", "ui"):
        if _name in locals():
            importlib.reload(locals()[_name])

import bpy

from . import cage, native, nodes, operators, properties, rig, runtime, sketch, ui

#: Registered in this order, unregistered in reverse.
classes = properties.classes + operators.classes + sketch.classes + ui.classes


def register():
    nodes.register()
    for cls in classes:
        bpy.utils.register_class(cls)
    properties.register()
    runtime.register()
    sketch.register()
    ui.register()


def unregister():
    ui.unregister()
    sketch.unregister()
    runtime.unregister()
    properties.unregister()
    for cls in reversed(classes):
        if cls.is_registered:
            bpy.utils.unregister_class(cls)
    nodes.unregister()


__all__ = ["bl_info", "classes", "register", "unregister", "native", "rig"]
