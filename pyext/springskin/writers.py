"""Streaming cache writers: frames you compute yourself, written by the core.

:func:`bake` samples an imported animation and writes the cache in one call.
When the frames come from elsewhere (Blender's posed armature in the
addon, a simulation, a deformer driven by your own matrices), stream them
with :class:`PointCacheWriter` (``.pc2``) or :class:`AlembicWriter`
(``.abc``), the same writers the bake uses (``ssk_pc2_writer_*`` and
``ssk_abc_writer_*`` of ``core/include/springskin.h``).

Both write to ``"<path>.tmp-<pid>"`` and rename onto `path` only when
:meth:`finish` succeeds; :meth:`abort`, a failed finish, leaving a ``with``
block through an exception or dropping an unfinished writer remove the
temporary file, so a reader never sees a truncated cache. The GIL is
released while the core writes.

>>> with springskin.PointCacheWriter("out.pc2", deformer.vertex_count,
...                                  start_frame=1) as pc2:
...     for frame in range(1, 25):
...         pc2.write(deformer.deform(pose(frame)))
"""

import numpy as np

from . import _checks
from . import _core

__all__ = ["PointCacheWriter", "AlembicWriter"]


class _Writer:
    """Context-manager and state helpers shared by the writers."""

    __slots__ = ("_core",)

    def finish(self):
        """Complete the file and rename it onto :attr:`path`.

        Raises
        ------
        ValueError
            The writer is already closed; Alembic: no frame was written.
        OSError
            A write, the flush or the rename failed (the temporary file is
            removed).
        """
        self._core.finish()

    def abort(self):
        """Discard the file: the temporary file is removed and nothing is
        renamed. Does nothing when the writer is already closed."""
        self._core.abort()

    @property
    def path(self):
        """str: the final path."""
        return self._core.path

    @property
    def frames(self):
        """int: frames (samples) written so far."""
        return self._core.frames

    @property
    def closed(self):
        """bool: True once finished or aborted."""
        return self._core.closed

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._core.abort()
        elif not self._core.closed:
            self._core.finish()
        return False


class PointCacheWriter(_Writer):
    """Streams a ``.pc2`` point cache (3ds Max / Blender's Mesh Cache
    modifier), one sample at a time.

    Header ``"POINTCACHE2\\0"``, int32 version 1, int32 point count, float32
    start frame, float32 sample rate, int32 sample count (patched by
    :meth:`finish`); then each sample's points as float32 (x, y, z),
    little-endian. Memory does not grow with the number of samples.

    Parameters
    ----------
    path : str or os.PathLike
        The cache to write (its directory must exist).
    point_count : int
        Points per sample, >= 1 (whole-rig ``Deformer.vertex_count``).
    start_frame : float, default 0
        Frame of the first sample, stored in the header. (Blender's Mesh
        Cache modifier ignores it and reads sample ``frame - frame_start``:
        set the modifier's ``frame_start`` to this value.)
    sample_rate : float, default 1
        Frames between samples, > 0.

    Raises
    ------
    ValueError
        point_count < 1, a non-finite start frame, sample_rate <= 0.
    OSError
        The temporary file cannot be created.

    Examples
    --------
    Use it as a context manager (finished on success, aborted on an
    exception), or call :meth:`write` then :meth:`finish` or :meth:`abort`.
    """

    __slots__ = ()

    def __init__(self, path, point_count, start_frame=0.0, sample_rate=1.0):
        path = _checks.path(path, "path")
        point_count = _checks.integer(point_count, "point_count", 1, 2**31 - 1)
        start_frame = _checks.real(start_frame, "start_frame")
        sample_rate = _checks.real(sample_rate, "sample_rate", positive=True)
        self._core = _core.PointCacheWriter(path, point_count, start_frame, sample_rate)

    def write(self, positions):
        """Append one sample.

        Parameters
        ----------
        positions : array_like, (point_count, 3) float32 or float64
            Any strides and byte order; converted to float32.

        Raises
        ------
        ValueError
            A wrong shape, NaN or infinity (nothing is written; the writer
            stays usable), or the writer is closed.
        TypeError
            Integers, bool, complex or object arrays.
        OSError
            The write failed (disk full): only :meth:`abort` makes sense
            after it.
        """
        self._core.write(positions)

    @property
    def point_count(self):
        """int: points per sample."""
        return self._core.point_count

    def __repr__(self):
        state = "closed" if self.closed else f"{self.frames} samples"
        return (f"<springskin.PointCacheWriter {self.path!r}: {self.point_count} points, "
                f"{state}>")


class AlembicWriter(_Writer):
    """Streams an Alembic archive (``.abc``; Ogawa container, AbcCoreOgawa
    layout, written by the core itself), one frame at a time.

    Per mesh an Xform ``/NAME`` with its object matrix and a PolyMesh
    ``/NAME/NAMEShape``: constant topology (the triangles, stored with
    Alembic's clockwise winding), animated ``P`` and ``.selfBnds``,
    optional animated ``N``, optional constant face-varying ``uv``; uniform
    time sampling of 1/fps seconds starting at `start_time`.

    Parameters
    ----------
    path : str or os.PathLike
        The archive to write.
    meshes : sequence of dict
        One dict per mesh, in the row order of :meth:`write`'s arrays:

        - ``vertex_count`` (int >= 1, required): its rows;
        - ``name`` (str): object name (default ``"mesh_<i>"``; ``/`` becomes
          ``_``, a repeated name gets ``_<i>``);
        - ``triangles`` ((F, 3) integers in [0, vertex_count),
          counter-clockwise front faces): default none (a point cloud);
        - ``uvs`` ((vertex_count, 2) float): per-vertex texture
          coordinates, written per corner; default none;
        - ``object_matrix`` ((4, 4) float, row-major, column vectors):
          the Xform's transform when :meth:`write` gets no matrices;
          default identity.

        A :class:`Rig`'s meshes are accepted too (their name, counts,
        triangles and object matrix are used).
    fps : float
        Samples per second, > 0.
    start_time : float, default 0
        Seconds of the first sample (``first_frame / fps``).
    normals : bool, default False
        Write per-vertex normals ``N``; :meth:`write` then requires them.
    application : str, optional
        ``_ai_Application`` (default ``"SpringSkin <version>"``).
    date_written : str, optional
        ``_ai_DateWritten`` (default: the local time now).

    Raises
    ------
    TypeError, ValueError
        A malformed mesh description (naming the entry and field), fps <= 0,
        ``;`` or ``=`` in a metadata value.
    OSError
        The temporary file cannot be created.
    """

    __slots__ = ()

    _FIELDS = ("name", "vertex_count", "triangles", "uvs", "object_matrix")

    def __init__(self, path, meshes, fps, start_time=0.0, normals=False, application=None,
                 date_written=None):
        from .rig import Mesh

        path = _checks.path(path, "path")
        fps = _checks.real(fps, "fps", positive=True)
        start_time = _checks.real(start_time, "start_time")
        if not isinstance(normals, bool):
            raise TypeError(f"normals: expected a bool, got {type(normals).__name__}")
        if isinstance(meshes, (dict, Mesh)):
            raise TypeError("meshes: expected a sequence of mesh dicts, got a single mesh")
        descs = []
        for i, mesh in enumerate(meshes):
            if isinstance(mesh, Mesh):
                mesh = {"name": mesh.name, "vertex_count": mesh.vertex_count,
                        "triangles": mesh.triangles, "object_matrix": mesh.object_matrix}
            if not isinstance(mesh, dict):
                raise TypeError(f"meshes[{i}]: expected a dict, got {type(mesh).__name__}")
            unknown = sorted(set(mesh) - set(self._FIELDS))
            if unknown:
                raise ValueError(f"meshes[{i}]: unknown field(s) {', '.join(unknown)} "
                                 f"(expected {', '.join(self._FIELDS)})")
            if "vertex_count" not in mesh:
                raise ValueError(f"meshes[{i}]: 'vertex_count' is required")
            count = _checks.integer(mesh["vertex_count"], f"meshes[{i}].vertex_count", 1,
                                    2**31 - 1)
            triangles = mesh.get("triangles")
            if triangles is not None and np.size(triangles) == 0:
                triangles = None
            descs.append((mesh.get("name"), count, triangles, mesh.get("uvs"),
                          mesh.get("object_matrix")))
        if not descs:
            raise ValueError("meshes: expected at least one mesh")
        self._core = _core.AlembicWriter(path, descs, fps, start_time, normals, application,
                                         date_written)

    def write(self, positions, normals=None, object_matrices=None):
        """Append one frame.

        Parameters
        ----------
        positions : array_like, (V, 3) float
            Every mesh's positions, concatenated in `meshes` order, each in
            its object space (V = :attr:`vertex_count`).
        normals : array_like, (V, 3) float, optional
            Unit normals, object space; required exactly when the writer
            was made with ``normals=True``.
        object_matrices : array_like, (M, 4, 4) float, optional
            This frame's object matrices (animated Xforms); default each
            mesh's ``object_matrix``.

        Raises
        ------
        ValueError
            A wrong shape, NaN or infinity (checked before anything is
            written; the writer stays usable), normals given or missing
            against ``normals``, the writer is closed.
        OSError
            The write failed: only :meth:`abort` makes sense after it.
        """
        self._core.write(positions, normals, object_matrices)

    @property
    def vertex_count(self):
        """int: rows of :meth:`write`'s arrays (the meshes' counts summed)."""
        return self._core.vertex_count

    @property
    def mesh_count(self):
        """int: meshes in the archive."""
        return self._core.mesh_count

    @property
    def normals(self):
        """bool: N is written."""
        return self._core.normals

    def __repr__(self):
        state = "closed" if self.closed else f"{self.frames} frames"
        return (f"<springskin.AlembicWriter {self.path!r}: {self.mesh_count} mesh(es), "
                f"{self.vertex_count} vertices, {state}>")
