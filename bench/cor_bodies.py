"""cor_bodies.py — the Rigify-like bodies of issue #18's CoR benchmark, made
with Blender: Rigify's human metarig with a metaball body and automatic
(bone heat) weights, about 14k vertices, then the same body subdivided once
(about 56k) and twice (about 220k), Blender's subdivision interpolating the
weights. Each is exported to FBX with default settings.

Usage (headless):
    blender -b --factory-startup --python bench/cor_bodies.py -- OUT_DIR [--resolution 0.0135]

    blender -b --factory-startup --python bench/cor_bodies.py -- OUT_DIR --animation walk
        (issue #36's spring benchmark, bench/spring_bodies.sh)

Writes OUT_DIR/body_<vertices>.fbx for the three levels and prints their
vertex counts.
"""

import argparse
import os
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "blender"))
sys.argv = [sys.argv[0], "--"] + (sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else [])
import blender_testlib as T  # noqa: E402


def main():
    ap = argparse.ArgumentParser(prog="cor_bodies.py")
    ap.add_argument("out")
    ap.add_argument("--resolution", type=float, default=0.0135,
                    help="metaball resolution of the base body (0.0135: about 14k vertices)")
    ap.add_argument("--levels", type=int, default=2, help="subdivisions after the base")
    ap.add_argument("--animation", choices=("poses", "walk"), default="poses",
                    help="poses: issue #18's keyed poses (frames 1..12); walk: issue #36's walk "
                         "with 135-degree knee and elbow bends and a 90-degree torso twist "
                         "(frames 1..25, blender_testlib.key_walk)")
    args = ap.parse_args(sys.argv[2:])
    os.makedirs(args.out, exist_ok=True)
    keyer = T.key_walk if args.animation == "walk" else None
    body, arm, _ = T.rigify_body(args.resolution, keyer=keyer)
    for level in range(args.levels + 1):
        T.activate(body)
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.select_all(action="SELECT")
        if level:
            bpy.ops.mesh.subdivide(number_cuts=1)  # weights interpolated
            if args.animation == "walk":
                # a sliver's subdivided quads can have three points on a
                # line, and Assimp's split of one an area of 0, which the
                # binding refuses: split them here with Blender's beauty
                # rule, then dissolve what is still degenerate
                bpy.ops.mesh.quads_convert_to_tris(quad_method="BEAUTY")
                bpy.ops.mesh.dissolve_degenerate(threshold=1e-6)
        else:
            # the metaball's slivers: the binding refuses degenerate triangles
            bpy.ops.mesh.remove_doubles(threshold=1e-5)
            bpy.ops.mesh.dissolve_degenerate(threshold=1e-4)
        bpy.ops.object.mode_set(mode="OBJECT")
        nv = len(body.data.vertices)
        for o in bpy.context.scene.objects:
            o.select_set(o in (body, arm))
        path = os.path.join(args.out, "body_%d.fbx" % nv)
        bpy.ops.export_scene.fbx(filepath=path, use_selection=True)
        print("body: %d vertices, %d triangles -> %s" % (
            nv, sum(len(p.vertices) - 2 for p in body.data.polygons), path), flush=True)


main()
