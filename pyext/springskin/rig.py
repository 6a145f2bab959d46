"""Rigs: meshes, skeleton, skin weights and animations.

A :class:`Rig` comes from a file (:func:`load`, Assimp import) or from numpy
arrays (:class:`Rig` constructor). It is immutable and may be shared by
several deformers and threads.

Conventions (as the C core, ``core/include/springskin.h``):

- Matrices are float32 (4, 4), row-major, acting on column vectors:
  ``p' = M @ [x, y, z, 1]``; the translation is the last column. This is
  the layout of a C-ordered numpy (4, 4) array and of Blender's ``Matrix``.
- Positions are in the units of the source file (Blender: meters).
- Mesh object space: where a mesh's rest positions live and where deformed
  positions are written. Rig space: the space of the skeleton (bind
  matrices, heads, tails) and of the skinning matrices. Each mesh has an
  object matrix (object space -> rig space).
- Skinning matrix of bone b: ``S_b = G_b(pose) @ inverse(bind_b)`` (rig
  space), so the identity pose (all S_b = I) leaves every vertex at rest.
- Whole-rig arrays (``(V, 3)`` positions, normals) concatenate the meshes in
  mesh order; mesh m occupies rows ``Mesh.rows``.
"""

import numpy as np

from . import _checks
from . import _core
from .binding import Binding

__all__ = ["Rig", "Mesh", "Bones", "Animation", "load"]


class Mesh:
    """One mesh of a rig (read-only).

    Attributes
    ----------
    name : str
        The mesh's name (from the file, or ``mesh_name``; ``"mesh_<i>"``
        when none).
    index : int
        Position of the mesh in :attr:`Rig.meshes`.
    vertex_count, triangle_count, influence_count : int
        #V, #F and K (influences stored per vertex, padding included).
    first_vertex : int
        Row of this mesh's vertex 0 in whole-rig arrays.
    rows : slice
        ``slice(first_vertex, first_vertex + vertex_count)``: this mesh's
        rows in whole-rig arrays such as :meth:`Deformer.deform`'s result.
    positions : numpy.ndarray, (V, 3) float32, read-only
        Rest positions, mesh object space, model units.
    triangles : numpy.ndarray, (F, 3) int32, read-only
        Vertex indices of the triangles, counter-clockwise front faces
        (Assimp triangulates polygons; points and lines are dropped).
    bone_indices : numpy.ndarray, (V, K) int32, read-only
        Bone of each influence (padding entries: bone 0 with weight 0).
    weights : numpy.ndarray, (V, K) float32, read-only
        Skin weights, normalized to sum 1 per vertex (all zero for a vertex
        whose total weight was at most ``WEIGHT_EPSILON``: it stays at rest).
    object_matrix : numpy.ndarray, (4, 4) float32, read-only
        Object space -> rig space at rest.

    Notes
    -----
    The arrays are views of the rig's own memory (no copy); they stay valid
    as long as any of them, the mesh or the rig is alive.
    """

    __slots__ = ("name", "index", "vertex_count", "triangle_count", "influence_count",
                 "first_vertex", "positions", "triangles", "bone_indices", "weights",
                 "object_matrix")

    def __init__(self, index, info):
        self.index = index
        self.name = info["name"]
        self.vertex_count = info["vertex_count"]
        self.triangle_count = info["triangle_count"]
        self.influence_count = info["influence_count"]
        self.first_vertex = info["first_vertex"]
        self.positions = info["positions"]
        self.triangles = info["triangles"]
        self.bone_indices = info["bone_indices"]
        self.weights = info["weights"]
        self.object_matrix = info["object_matrix"]

    @property
    def rows(self):
        return slice(self.first_vertex, self.first_vertex + self.vertex_count)

    def __repr__(self):
        return (f"<springskin.Mesh {self.name!r}: {self.vertex_count} vertices, "
                f"{self.triangle_count} triangles>")


class Bones:
    """The skeleton of a rig (read-only), a sequence of bone names.

    ``len(bones)`` is #B; iterating gives the names; ``bones[i]`` is the name
    of bone i and ``bones[name]`` (or ``bones.index(name)``) the index of the
    bone called `name`; ``name in bones`` tests for one.

    Attributes
    ----------
    names : tuple of str
        Bone names (``"bone_<i>"`` when the rig was built without names).
    parents : numpy.ndarray, (B,) int32, read-only
        Parent bone index, -1 for a root.
    bind_matrices : numpy.ndarray, (B, 4, 4) float32, read-only
        Bone rest transforms in rig space (Blender's ``Bone.matrix_local``;
        the inverse of Assimp's offset matrix times the mesh node's
        transform).
    heads, tails : numpy.ndarray, (B, 3) float32, read-only
        Bone segment ends in rig space (the attachment binding projects
        vertices on them: Toothman 2020, ch. 3).
    """

    __slots__ = ("names", "parents", "bind_matrices", "heads", "tails", "_index")

    def __init__(self, info):
        self.names = tuple(info["names"])
        self.parents = info["parents"]
        self.bind_matrices = info["bind_matrices"]
        self.heads = info["heads"]
        self.tails = info["tails"]
        self._index = {}
        for i, name in enumerate(self.names):
            self._index.setdefault(name, i)

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __getitem__(self, key):
        """``bones[i]``: the name of bone i (an int or a slice);
        ``bones[name]``: the index of the bone called `name` (KeyError when
        none)."""
        if isinstance(key, str):
            return self.index(key)
        return self.names[key]

    def __contains__(self, name):
        return name in self._index

    def index(self, name):
        """Index of the bone called `name`.

        Raises
        ------
        KeyError
            No bone has that name.
        """
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no bone named {name!r} (the rig has {len(self.names)} bones)") \
                from None

    def __repr__(self):
        return f"<springskin.Bones: {len(self.names)} bones>"


class Animation:
    """An animation of a loaded rig.

    Attributes
    ----------
    index : int
        Its index in :attr:`Rig.animations` (the ``animation`` argument).
    name : str
        Its name in the file ("" when none).
    duration : float
        Duration in seconds (ticks / ticks per second).
    ticks_per_second : float
        Assimp's value (25 when the file has none).
    channel_count : int
        The file's node channels.
    """

    __slots__ = ("index", "name", "duration", "ticks_per_second", "channel_count", "_scene")

    def __init__(self, scene, index):
        info = scene.animation(index)
        self._scene = scene
        self.index = index
        self.name = info["name"]
        self.duration = info["duration_seconds"]
        self.ticks_per_second = info["ticks_per_second"]
        self.channel_count = info["channel_count"]

    def frame_count(self, fps=24):
        """Frames at `fps`: ``floor(duration * fps + 1e-4) + 1`` (the
        epsilon absorbs float32 times: 10 frames at 24 fps stored by glTF
        read back as 9.99999976).

        Parameters
        ----------
        fps : float
            Frames per second, finite and > 0.

        Returns
        -------
        int
            Frame f is at ``t = f / fps`` seconds for f in ``range(count)``.
        """
        fps = _checks.real(fps, "fps", positive=True)
        return self._scene.frame_count(self.index, fps)

    def frames(self, fps=24):
        """``range(frame_count(fps))``."""
        return range(self.frame_count(fps))

    def __repr__(self):
        return (f"<springskin.Animation {self.index} {self.name!r}: "
                f"{self.duration:.3f} s>")


class Rig:
    """A rigged character: meshes, skeleton and skin weights.

    ``Rig(...)`` builds a rig of one mesh from numpy arrays; :func:`load`
    imports a file (several meshes, animations).

    Parameters
    ----------
    positions : array_like, (V, 3) float32 or float64
        Rest positions in mesh object space, model units; V >= 1.
    triangles : array_like, (F, 3) integer, or None
        Vertex indices in [0, V), counter-clockwise front faces; None for a
        point cloud (no normals, no attachment binding smoothing).
    parents : array_like, (B,) integer
        Parent of each bone, -1 for a root, else an index in [0, B); no
        cycle.
    bind_matrices : array_like, (B, 4, 4) float32 or float64
        Bone rest transforms in rig space (row-major, column vectors;
        Blender's ``Bone.matrix_local``).
    weight_indices : array_like, (V, K) integer
        Bone of each influence, in [0, B) where the weight is not 0; padding
        entries of weight 0 may hold any index (-1 is customary). K <= 64.
    weight_values : array_like, (V, K) float32 or float64
        Skin weights >= 0, normalized to sum 1 per vertex; a vertex whose
        sum is at most ``WEIGHT_EPSILON`` (1e-4) stays at rest.
    heads, tails : array_like, (B, 3) float, optional
        Bone segment ends in rig space. Defaults: the head is the bind
        translation, the tail the head plus the bind Y axis scaled by the
        distance to the nearest child head (1/10 of the skeleton extent for
        leaves). Used by the attachment methods (rigid, irs, spring).
    bone_names : sequence of str, optional
        B distinct non-empty names (graphs refer to bones by name); default
        ``"bone_<i>"``.
    mesh_name : str, optional
        Default ``"mesh_0"``.
    object_matrix : array_like, (4, 4) float, optional
        Mesh object space -> rig space; default identity.

    Raises
    ------
    TypeError
        An array of the wrong dtype kind (floats where indices are expected,
        integers where floats are expected, bool, complex, object), naming
        the argument.
    ValueError
        Wrong shape ("positions: expected shape (V, 3), got (4, 2)"), NaN or
        infinity, an index out of range, a negative weight, duplicate bone
        names, a cycle in the parents.

    Notes
    -----
    Arrays of any strides and byte order are accepted and converted to
    float32 / int32 (the core's types); the rig copies them. Whole-rig
    arrays concatenate the meshes in mesh order (:attr:`Mesh.rows`).
    The skinning model is Blender's Armature modifier (see :class:`Deformer`).
    """

    def __init__(self, positions, triangles, parents, bind_matrices, weight_indices,
                 weight_values, *, heads=None, tails=None, bone_names=None, mesh_name=None,
                 object_matrix=None):
        self._setup(None, None)  # a usable repr even if the arrays are refused
        core = _core.Rig(positions, triangles, parents, bind_matrices, weight_indices,
                         weight_values, heads=heads, tails=tails, bone_names=bone_names,
                         mesh_name=mesh_name, object_matrix=object_matrix)
        self._setup(core, None)

    @classmethod
    def _from_core(cls, core):
        """A Rig around a ``_core.Rig`` that owns its ssk_rig (no scene)."""
        rig = cls.__new__(cls)
        rig._setup(core, None)
        return rig

    @classmethod
    def _from_scene(cls, scene):
        rig = cls.__new__(cls)
        rig._setup(scene.rig, scene)
        return rig

    def _setup(self, core, scene):
        self._core = core
        self._scene = scene
        self._meshes = None
        self._bones = None
        self._animations = None

    # --- counts ----------------------------------------------------------
    @property
    def vertex_count(self):
        """int: #V of all meshes (rows of whole-rig arrays)."""
        return self._core.vertex_count

    @property
    def bone_count(self):
        """int: #B."""
        return self._core.bone_count

    @property
    def mesh_count(self):
        """int: #M."""
        return self._core.mesh_count

    @property
    def deforming_bone_count(self):
        """int: bones with a non-zero weight on at least one vertex."""
        return self._core.deforming_bone_count

    @property
    def max_influences(self):
        """int: largest number of non-zero influences on one vertex."""
        return self._core.max_influences

    @property
    def hash(self):
        """int: 64-bit XXH3 hash of what a binding depends on (rest positions,
        object matrices, triangles, weights, skeleton); a
        :class:`Binding` records the hash of its rig."""
        return self._core.hash

    @property
    def path(self):
        """str or None: the file of a loaded rig."""
        return self._scene.path if self._scene is not None else None

    # --- parts -----------------------------------------------------------
    @property
    def meshes(self):
        """tuple of Mesh: the meshes, in whole-rig row order."""
        if self._meshes is None:
            self._meshes = tuple(Mesh(i, self._core.mesh(i)) for i in range(self.mesh_count))
        return self._meshes

    @property
    def bones(self):
        """Bones: names, parents, bind matrices, heads and tails."""
        if self._bones is None:
            self._bones = Bones(self._core.bones())
        return self._bones

    @property
    def weld(self):
        """dict: the welded topology (``ssk_rig_weld``).

        Vertices that coincide at rest in rig space (within ``tolerance``,
        ``SSK_WELD_RELATIVE_TOLERANCE`` = 1e-5 of the rest bounding-box
        diagonal; UV seams, normal splits, borders shared by two meshes)
        are one surface point: every method gives them the same position,
        and neighbors (attachment smoothing, springs, CoR) are welded.

        Keys: ``tolerance`` (float, rig-space distance), ``group_count``,
        ``member_count``, ``across_mesh_group_count``,
        ``hard_edge_pair_count`` (coincident pairs of one mesh whose source
        normals differ by more than 1 degree: kept as hard edges for
        normals), ``points`` ((V,) uint32 read-only: the representative
        whole-rig row of each vertex, the smallest of its group) and
        ``members`` ((member_count,) uint32 read-only: rows that are not
        their group's representative).
        """
        return self._core.weld()

    @property
    def animations(self):
        """tuple of Animation: the file's animations (empty for array rigs)."""
        if self._animations is None:
            if self._scene is None:
                self._animations = ()
            else:
                self._animations = tuple(Animation(self._scene, i)
                                         for i in range(self._scene.animation_count))
        return self._animations

    @property
    def animation(self):
        """Animation or None: the first animation, None when there is none."""
        return self.animations[0] if self.animations else None

    def rest_positions(self):
        """Rest positions of all meshes.

        Returns
        -------
        numpy.ndarray, (V, 3) float32
            A new array; each mesh in its object space, meshes concatenated.
        """
        return self._core.rest_positions()

    def rest_pose(self):
        """The identity pose: skinning matrices that leave every vertex at rest.

        Returns
        -------
        numpy.ndarray, (B, 4, 4) float32
            B identity matrices (``S_b = G_b @ inverse(bind_b)`` with
            ``G_b = bind_b``).
        """
        return np.tile(np.eye(4, dtype=np.float32), (self.bone_count, 1, 1))

    # --- animation sampling ---------------------------------------------
    def _check_sample(self, frame, fps, animation, what):
        if self._scene is None:
            raise ValueError(f"{what}: this rig was built from arrays and has no animation; "
                             f"pass skinning matrices to Deformer.deform directly")
        frame = _checks.real(frame, "frame")
        fps = _checks.real(fps, "fps", positive=True)
        count = self._scene.animation_count
        if count == 0:
            raise ValueError(f"{what}: {self.path!r} has no animation")
        animation = _checks.integer(animation, "animation", 0, count - 1)
        # the frames bake accepts (issue #17: sample used to clamp a frame
        # that bake refused)
        anim = self.animations[animation]
        last = anim.frame_count(fps) - 1
        if not 0.0 <= frame <= last:
            raise ValueError(f"{what}: frame {frame:g} is outside animation {animation} "
                             f"({anim.name!r}, {anim.duration:.3g} s at {fps:g} fps): frames "
                             f"must satisfy 0 <= frame <= {last}")
        return frame / fps, animation

    def sample(self, frame, fps=24, animation=0):
        """Skinning and object matrices of an animation at a frame.

        The animation is sampled at ``t = frame / fps`` seconds: node local
        transforms interpolated from the keys (positions and scales
        linearly, rotations by slerp, clamped outside the key range) and
        composed from the root, as Assimp's skinning matrix
        ``inverse(G(mesh node, t)) @ G(bone node, t) @ offset``.

        Parameters
        ----------
        frame : float
            Frame number, fractional allowed, from 0 to
            ``animations[animation].frame_count(fps) - 1`` (the frames
            :func:`bake` accepts).
        fps : float, default 24
            Frames per second, > 0.
        animation : int, default 0
            Index in :attr:`animations`.

        Returns
        -------
        skinning_matrices : numpy.ndarray, (B, 4, 4) float32
            ``S_b = inverse(G_A(t)) @ G_b(t) @ inverse(bind_b)``, rig space
            (the armature node A's space, where Blender blends).
        object_matrices : numpy.ndarray, (M, 4, 4) float32
            Each mesh's object -> rig matrix at t
            (``inverse(G_A(t)) @ G_mesh(t)``; glTF and .x: the mesh node is
            ignored). :meth:`rig_matrix` gives rig -> world.

        Raises
        ------
        ValueError
            The rig has no animation (built from arrays, or a file without
            one), ``animation`` out of range, a frame outside the animation
            or non-finite, fps <= 0.
        TypeError
            A non-numeric frame or fps.
        """
        time, animation = self._check_sample(frame, fps, animation, "sample")
        return self._scene.sample(animation, time)

    def rig_matrix(self, frame, fps=24, animation=0):
        """Rig space -> the file's world at a frame (``ssk_scene_rig_matrix``).

        The armature node's global transform ``G_A(t)`` (the identity when
        the rig has none): ``rig_matrix(f) @ object_matrices(f)[m]`` places
        mesh m in the world, as the Alembic Xforms of :func:`bake` do.

        Parameters are those of :meth:`sample`.

        Returns
        -------
        numpy.ndarray, (4, 4) float32

        Raises
        ------
        ValueError, TypeError
            As :meth:`sample`.
        """
        time, animation = self._check_sample(frame, fps, animation, "rig_matrix")
        return self._scene.rig_matrix(animation, time)

    def skinning_matrices(self, frame, fps=24, animation=0):
        """Skinning matrices at a frame: ``sample(frame, fps, animation)[0]``.

        Returns
        -------
        numpy.ndarray, (B, 4, 4) float32
            Rig space; pass to :meth:`Deformer.deform`.

        See Also
        --------
        sample : the parameters, errors and the object matrices.
        """
        return self.sample(frame, fps, animation)[0]

    def object_matrices(self, frame, fps=24, animation=0):
        """Object matrices at a frame: ``sample(frame, fps, animation)[1]``.

        Returns
        -------
        numpy.ndarray, (M, 4, 4) float32
            Object -> rig space per mesh; pass as ``object_matrices`` to
            :meth:`Deformer.deform` when mesh nodes are animated.
        """
        return self.sample(frame, fps, animation)[1]

    # --- binding, normals -----------------------------------------------
    def bind(self, method="auto", smooth_iterations=6, max_distance=0.0, cache=None, cor=False,
             progress=None, implicit=False):
        """Attachment binding of every vertex (Toothman 2020, ch. 3).

        Each vertex i is attached to one bone b_i at ``t_i`` in [0, 1] along
        its segment head p -> tail c: attachment point
        ``a_i = p + t_i (c - p)``, scale vector ``s_i = v_i - a_i`` (rig
        space). Used by the rigid, IRS, radial and spring deformers.

        Parameters
        ----------
        method : {"auto", "direct", "weights", "planar"}
            ``direct``: projection onto the nearest bone segment (Eq. 12,
            with the denominator squared: the paper's typo); ``weights``:
            onto the bones at the joint of the largest skin weight (3.2);
            ``planar``: planar dividers at the joints (Eq. 13); ``auto``:
            ``weights`` when the rig has skin weights, else ``direct``.
        smooth_iterations : int, default 6
            Alternations of Laplacian smoothing of the attachment points and
            reprojection onto the skeleton (3.2), 0 to 1000.
        max_distance : float, default 0
            A vertex farther than this from its bone (model units) is an
            error; 0: no limit.
        cache : str or os.PathLike, optional
            A binding file: loaded when it holds a binding of this rig made
            with these parameters, else the rig is bound and the file
            (re)written. :attr:`Binding.reused` tells which.
        cor : bool, default False
            Also precompute the centers of rotation of CoR skinning (Le &
            Hodgins 2016, Eq. 1 and 4, default parameters, on the CPU) and
            store them in the binding (:attr:`Binding.has_cor`), so that a
            ``"cor"`` deformer made with it does not compute them itself.
        progress : callable, optional
            With ``cor``: called as ``progress(fraction)`` (a float from 0
            to 1) while the centers are computed, on the calling thread,
            about a hundred times (issue #18); an exception it raises is
            printed and it is not called again.
        implicit : bool, default False
            Also fit implicit skinning's bind data (Vaillant 2015, 4.4 and
            Eq. 4.6: each bone's HRBF field sampled into a 32^3 grid of
            values and gradients, the mean value coordinates and rest
            normals; default fit parameters, on the CPU) and store them in
            the binding (:attr:`Binding.has_implicit`), so that an
            ``"implicit"`` deformer or bake given it does not fit them
            itself. With ``cache``, a file whose implicit data another
            build or other fit parameters made is bound again.

        Returns
        -------
        Binding

        Raises
        ------
        ValueError
            Unknown method, parameters out of range, or the binding fails
            (a rig without bones, a zero-length bone carrying weight, a
            degenerate triangle, max_distance exceeded);
            the message names the culprit.
        OSError
            The cache file cannot be written.
        """
        method = _checks.choice(method, "method", _checks.BIND_METHODS)
        smooth_iterations = _checks.integer(smooth_iterations, "smooth_iterations", 0, 1000)
        max_distance = _checks.real(max_distance, "max_distance", non_negative=True)
        if cache is not None:
            cache = _checks.path(cache, "cache")
        if not isinstance(cor, bool):
            raise TypeError(f"cor: expected a bool, got {type(cor).__name__}")
        if not isinstance(implicit, bool):
            raise TypeError(f"implicit: expected a bool, got {type(implicit).__name__}")
        if progress is not None and not callable(progress):
            raise TypeError(f"progress: expected a callable or None, got "
                            f"{type(progress).__name__}")
        core, reused = _core.bind(self._core, method, smooth_iterations, max_distance, cache,
                                  cor, progress, implicit)
        return Binding._wrap(core, reused, rig=self)

    def normals(self, positions):
        """Area-weighted vertex normals of whole-rig positions (CPU).

        Each triangle's cross product (twice its area) is added to its
        vertices, then normalized; a vertex without triangles gets (0, 0, 0).

        Parameters
        ----------
        positions : array_like, (V, 3) float
            Whole-rig positions, each mesh in its object space.

        Returns
        -------
        numpy.ndarray, (V, 3) float32
            Unit normals, object space.
        """
        return self._core.normals(positions)

    def skin_vectors(self, rows, vectors, skinning_matrices, object_matrices=None,
                     method="lbs"):
        """Carry rest-pose offsets through a frame's skinning (the linear
        part of LBS or DQS at each vertex).

        Shape keys, correctives and anything else added to the rest
        positions before skinning: skinning is affine per vertex
        (``v' = J v + t``), so the skinned ``p + d`` is the skinned ``p``
        plus ``J d``, which this returns. That is how Blender's Armature
        modifier deforms a shape-keyed mesh. LBS: ``J = post3 (sum_i w_i
        S3_i) pre3``; DQS (Kavan et al. 2008, as Blender's Preserve Volume):
        the vertex's blended rotation and scale divided by ``|q|^2``, without
        the translation; ``pre3``, ``post3`` the 3x3 parts of the mesh's
        rest object matrix and of the inverse of this frame's. Computed by
        the deform's own kernels (``ssk_rig_skin_vectors``), CPU.

        Parameters
        ----------
        rows : array_like, (N,) int
            Whole-rig vertex rows, any order.
        vectors : array_like, (N, 3) float
            The offsets, each row's mesh object space, model units.
        skinning_matrices : array_like, (B, 4, 4) float
            The frame's skinning matrices, rig space (as :meth:`Deformer.deform`).
        object_matrices : array_like, (M, 4, 4) float, optional
            The frame's object -> rig matrices; default: the rest ones.
        method : {"lbs", "dqs"}

        Returns
        -------
        numpy.ndarray, (N, 3) float32
            The skinned offsets, each row's mesh object space (at this
            frame). A vertex without skin weights keeps its offset.

        Raises
        ------
        ValueError
            A row out of range, a wrong shape, NaN or infinity, a singular
            object matrix, a method other than LBS and DQS.
        TypeError
            Arrays of the wrong kind.
        """
        return _core.skin_vectors(self._core, rows, vectors, skinning_matrices,
                                  object_matrices, method)

    def __repr__(self):
        if self._core is None:
            return "<springskin.Rig (not created)>"
        source = f" from {self.path!r}" if self.path else ""
        return (f"<springskin.Rig{source}: {self.mesh_count} mesh(es), {self.vertex_count} "
                f"vertices, {self.bone_count} bones, {len(self.animations)} animation(s)>")


def load(path, isolate=False, memory_limit=None, timeout=600.0):
    """Import a rigged file with Assimp.

    Every mesh with bones joins one rig (bones matched by name), meshes
    without bones are skipped; vertex order is Assimp's after
    ``aiProcess_Triangulate | aiProcess_JoinIdenticalVertices``. Rig space
    is the armature node's space (the node above the bones, where Blender
    blends; :meth:`Rig.rig_matrix` maps it to the file's world); each mesh's
    object matrix is the global transform of its node in that space (glTF
    and .x: the node of a skinned mesh is ignored). Influences of bones that
    no node carries are dropped, and coincident vertices are welded
    (:attr:`Rig.weld`).

    Parameters
    ----------
    path : str or os.PathLike
        Any format Assimp reads (.fbx, .dae, .gltf/.glb, .x, ...).
    isolate : bool, default False
        Import in a child process first (issue #19), so that a crash of
        Assimp on a malformed file (a stack overflow on deep nesting, a
        segfault) cannot take this process down: it becomes an
        :class:`ImportError` naming the file. Use it in batch jobs and
        workers that import files they did not make. Costs one more import
        and a Python start-up per file (``springskin/_isolate.py``).
    memory_limit : int, optional
        With `isolate`: the child's address-space limit in bytes (default:
        half the physical memory; 0: none); past it the import fails with
        an :class:`ImportError`.
    timeout : float, default 600
        With `isolate`: seconds before the child is killed (an
        :class:`ImportError`).

    Returns
    -------
    Rig
        With :attr:`Rig.animations` and :meth:`Rig.sample`.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        No such file.
    OSError
        The file cannot be read.
    SpringSkinError
        Assimp cannot import it (its message), or no mesh has bones
        (``status`` ``"SSK_ERROR_IMPORT"`` or ``"SSK_ERROR_NO_SKELETON"``).
    ValueError
        The file's data is invalid (non-finite keys, a singular bind matrix,
        rig validation errors; message prefixed with the path).
    ImportError
        With `isolate`: the importer crashed, ran out of its memory limit or
        time (``ImportError.path`` is the file).
    """
    path = _checks.existing_file(path, "path")
    if isolate:
        from . import _isolate
        if memory_limit is None:
            memory_limit = _isolate.default_memory_limit()
        memory_limit = _checks.integer(memory_limit, "memory_limit", lo=0)
        timeout = _checks.real(timeout, "timeout", positive=True)
        _isolate.probe(path, memory_limit, timeout)
    return Rig._from_scene(_core.import_scene(path))
