"""blender_handover.py — ways of handing per-frame positions to Blender, timed
on the same mesh in one Blender session (issue #17: "try more than one way
of handing the result to Blender").

The mesh, weights, armature and poses are bench/blender_armature.py's (the
generated limb of bench_skinning.c). Positions are computed in numpy (not
timed: only Blender's side is); each frame:

    change the pose (untimed), then time
      depsgraph.update()      first pass: the armature (and anything that
                              depends on it)
      write(positions)        the handover (what the addon's handler does)
      depsgraph.update()      second pass: Blender re-evaluates what the
                              write tagged
      + reading one evaluated vertex (checked: it must be the new position)

Ways (the disabled Armature modifier's object cleared, as the addon does):
  armature modifier          Blender's own, for reference (one pass)
  geometry nodes attribute   a FLOAT_VECTOR point attribute + Set Position
                             (the addon's way before issue #17)
  shape key                  key block coordinates, the Key tagged
  mesh coordinates           the mesh's own vertices (destructive)
  mesh cache file            a Mesh Cache modifier reading a one-frame .pc2
                             in /dev/shm, the object tagged (transform):
                             the addon's way since issue #17

Usage (headless):
    blender -b --factory-startup --python bench/blender_handover.py -- [--size 100000]
        [--repeats 41]

Prints one Markdown table.
"""

import argparse
import importlib.util
import os
import statistics
import struct
import sys
import tempfile
import time

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP = 5


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(prog="blender_handover.py")
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=41)
    return ap.parse_args(argv)


def load_armature_bench():
    spec = importlib.util.spec_from_file_location("blender_armature",
                                                  os.path.join(HERE, "blender_armature.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Bench:
    def __init__(self, args):
        self.B = load_armature_bench()
        self.args = args
        self.pos, self.tri, self.idx, self.wts = self.B.make_limb(args.size)
        self.nv = len(self.pos)
        self.rest = self.pos.astype(np.float32).ravel()
        self.rows = []

    def fresh(self, takeover=True):
        B = self.B
        B.clear_scene()
        for ng in list(bpy.data.node_groups):
            bpy.data.node_groups.remove(ng)
        arm = B.build_armature()
        ob, mod, _ = B.build_mesh(self.pos, self.tri, self.idx, self.wts, arm)
        ob.parent = arm
        if takeover:
            mod.show_viewport = False
            mod.object = None  # a disabled modifier with an object still re-evaluates
        return arm, ob

    def run(self, label, arm, ob, write):
        first, second, total = [], [], []
        for r in range(self.args.repeats + WARMUP):
            self.B.set_pose(arm, self.B.PHASE_STEP * (r + 1))
            new = (self.rest + np.float32(0.001 * (r + 1))).astype(np.float32)
            t0 = time.perf_counter()
            dg = bpy.context.evaluated_depsgraph_get()
            dg.update()
            t1 = time.perf_counter()
            if write is not None:
                write(new)
            dg.update()
            co = tuple(ob.evaluated_get(dg).data.vertices[self.nv - 1].co)
            t3 = time.perf_counter()
            if write is not None and abs(co[0] - new[-3]) > 1e-4:
                raise RuntimeError("%s: the evaluated mesh did not take the positions" % label)
            if r >= WARMUP:
                first.append(t1 - t0)
                second.append(t3 - t1)
                total.append(t3 - t0)
        med = lambda x: 1e3 * statistics.median(x)  # noqa: E731
        self.rows.append((label, med(total), med(first), med(second)))
        print("%-26s %8.3f ms" % (label, med(total)), flush=True)

    def armature(self):
        arm, ob = self.fresh(takeover=False)
        self.run("armature modifier", arm, ob, None)

    def attribute(self):
        arm, ob = self.fresh()
        me = ob.data
        me.attributes.new("offset", "FLOAT_VECTOR", "POINT")
        ng = bpy.data.node_groups.new("offset", "GeometryNodeTree")
        ng.inputs.new("NodeSocketGeometry", "Geometry")
        ng.outputs.new("NodeSocketGeometry", "Geometry")
        gin, gout = ng.nodes.new("NodeGroupInput"), ng.nodes.new("NodeGroupOutput")
        setp = ng.nodes.new("GeometryNodeSetPosition")
        named = ng.nodes.new("GeometryNodeInputNamedAttribute")
        named.data_type = "FLOAT_VECTOR"
        named.inputs["Name"].default_value = "offset"
        ng.links.new(gin.outputs[0], setp.inputs["Geometry"])
        ng.links.new(named.outputs["Attribute"], setp.inputs["Offset"])
        ng.links.new(setp.outputs[0], gout.inputs[0])
        ob.modifiers.new("offset", "NODES").node_group = ng

        def write(new):
            me.attributes["offset"].data.foreach_set("vector", new - self.rest)
            me.update_tag()
        self.run("geometry nodes attribute", arm, ob, write)

    def shape_key(self):
        arm, ob = self.fresh()
        ob.shape_key_add(name="Basis")
        block = ob.shape_key_add(name="positions")
        block.value = 1.0
        key = ob.data.shape_keys

        def write(new):
            block.data.foreach_set("co", new)
            key.update_tag()
        self.run("shape key", arm, ob, write)

    def coordinates(self):
        arm, ob = self.fresh()

        def write(new):
            ob.data.vertices.foreach_set("co", new)
            ob.data.update_tag()
        self.run("mesh coordinates", arm, ob, write)

    def mesh_cache(self):
        arm, ob = self.fresh()
        folder = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        fd, path = tempfile.mkstemp(suffix=".pc2", dir=folder)
        header = struct.pack("<12siiffi", b"POINTCACHE2\0", 1, self.nv, 0.0, 1.0, 1)
        os.write(fd, header + self.rest.tobytes())
        cache = ob.modifiers.new("cache", "MESH_CACHE")
        cache.cache_format = "PC2"
        cache.filepath = path
        cache.play_mode = "CUSTOM"
        cache.time_mode = "FRAME"
        cache.eval_frame = 0.0

        def write(new):
            os.pwrite(fd, new.tobytes(), len(header))
            ob.update_tag(refresh={"OBJECT"})
        try:
            self.run("mesh cache file", arm, ob, write)
        finally:
            os.close(fd)
            os.remove(path)

    def table(self):
        print()
        print("| %d vertices | ms/frame | first pass ms | write + second pass ms |" % self.nv)
        print("|---|---:|---:|---:|")
        for label, total, first, second in self.rows:
            print("| %s | %.2f | %.2f | %.2f |" % (label, total, first, second))
        print("(medians of %d frames; positions computed in numpy, untimed)"
              % self.args.repeats)


def main():
    bench = Bench(parse_args())
    print("Blender %s, %d CPUs" % (bpy.app.version_string, os.cpu_count()), flush=True)
    for way in (bench.armature, bench.attribute, bench.shape_key, bench.coordinates,
                bench.mesh_cache):
        way()
    bench.table()
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)
