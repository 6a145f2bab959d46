/*
 * common.h — shared by the C files of springskin._core, the private
 * extension module behind the `springskin` Python package.
 *
 * The module wraps the opaque handles of core/include/springskin.h in
 * Python types (Rig, Scene, Binding, Graph, GLContext, Deformer), converts
 * and validates numpy arrays (conversion.c) and maps ssk_status codes to
 * Python exceptions (module.c). Every function follows one pattern: parse,
 * convert and validate with the GIL held, release the GIL around the C
 * compute only, then build the result; one `fail:` label releases what was
 * acquired.
 */
#ifndef SSK_PYEXT_COMMON_H
#define SSK_PYEXT_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ssk_pyext_ARRAY_API
#ifndef SSK_PYEXT_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "springskin.h"

/* ------------------------------------------------------------------------ */
/* Errors (module.c).                                                        */
/* ------------------------------------------------------------------------ */

/* springskin.SpringSkinError(RuntimeError) and its subclasses, created at
 * module initialization. */
extern PyObject *ssk_py_error;             /* SpringSkinError */
extern PyObject *ssk_py_gl_unavailable;    /* GLUnavailableError */
extern PyObject *ssk_py_gl_error;          /* GLError */
extern PyObject *ssk_py_spring_diverged;   /* SpringDivergedError */

/* The Python exception class of a status:
 * ValueError: invalid argument, non-finite, empty mesh, triangle/bone/parent
 * index, negative weight, parent cycle, no animation, frame range, bind,
 * binding mismatch, graph, spring unstable; OSError: IO (FileNotFoundError
 * when `path` is given and does not exist); MemoryError: out of memory;
 * GLUnavailableError, GLError, SpringDivergedError; SpringSkinError for the
 * rest (import, no skeleton, unsupported). */
PyObject *ssk_py_exception_type(ssk_status status);

/* Raises the exception of `err` (message: `prefix` + the C message, or the
 * status's generic message when the C one is empty) with attribute
 * `status` = the enumerator name ("SSK_ERROR_BONE_INDEX"). `path` may be
 * NULL; for SSK_ERROR_IO with a path that does not exist the exception is
 * FileNotFoundError(errno.ENOENT, message, path). Returns NULL. */
PyObject *ssk_py_raise(const ssk_error *err, const char *prefix, const char *path);
/* The same for a file being written at `path`: for SSK_ERROR_IO the
 * exception follows its folder (issue #17: a bake into a missing folder
 * raised a bare OSError): FileNotFoundError(ENOENT) when the folder does not
 * exist, NotADirectoryError(ENOTDIR) when it is not a folder,
 * PermissionError(EACCES) when it cannot be written, else OSError; the
 * exception's filename is `path`. Returns NULL. */
PyObject *ssk_py_raise_output(const ssk_error *err, const char *prefix, const char *path);

/* ------------------------------------------------------------------------ */
/* Array conversion and validation (conversion.c).                            */
/* ------------------------------------------------------------------------ */

/* Maximum number of dimensions in a shape specification. */
#define SSK_PY_MAX_DIMS 4
/* A dimension whose size is not known yet (its symbol is printed). */
#define SSK_PY_ANY (-1)

/* Expected shape of an argument: one symbol per dimension ("V", "3") and
 * the sizes, SSK_PY_ANY where free. Used to build messages like
 *   "skinning_matrices: expected shape (B, 4, 4) = (54, 4, 4), got (54, 4)". */
typedef struct ssk_py_shape {
    int ndim;
    const char *symbols[SSK_PY_MAX_DIMS];
    npy_intp sizes[SSK_PY_MAX_DIMS];
} ssk_py_shape;

/* Converts `obj` (any array-like: any strides, byte order, float16/32/64)
 * to a new aligned, native, C-contiguous float32 array of `shape`, and
 * checks that every value is finite (after the conversion to float32).
 * Errors, each naming `name`: TypeError when obj is not convertible or its
 * dtype is not floating point (integers, bool, complex, object, strings);
 * ValueError for the wrong ndim or shape, or a non-finite value (with its
 * index). The free sizes of `shape` are filled in on success. Returns a new
 * reference or NULL. */
PyArrayObject *ssk_py_float_array(PyObject *obj, const char *name, ssk_py_shape *shape);

/* As ssk_py_float_array, to native C-contiguous float64 without narrowing
 * (strokes, issue #22); integer arrays are accepted too (window pixels). */
PyArrayObject *ssk_py_double_array(PyObject *obj, const char *name, ssk_py_shape *shape);

/* As ssk_py_float_array for integer index arrays (int8..int64, uint8..uint64,
 * any strides and byte order), converted to C-contiguous int64; no range
 * check (the caller checks against its own bounds). TypeError for floats,
 * bool, complex, object. */
PyArrayObject *ssk_py_index_array(PyObject *obj, const char *name, ssk_py_shape *shape);

/* A new C-contiguous int32 array with the values of an int64 array that
 * were checked to fit. */
PyArrayObject *ssk_py_to_int32(PyArrayObject *a64);

/* Checks that `out` is a writable, aligned, C-contiguous native float32
 * ndarray of `shape` (all sizes known). TypeError (not an ndarray, wrong
 * dtype) or ValueError (shape, layout, read-only), naming `name`. Returns 0
 * or -1 with the exception set. */
int ssk_py_check_out(PyObject *out, const char *name, const ssk_py_shape *shape);

/* Formats "(B, 4, 4) = (54, 4, 4)" (or "(4, 4)" when no symbol is bound)
 * into buf. */
void ssk_py_format_shape(char *buf, size_t size, const ssk_py_shape *shape);

/* A read-only ndarray view of `data` (owned by `base`, which the view keeps
 * alive), C-contiguous. */
PyObject *ssk_py_view(PyObject *base, int typenum, int ndim, const npy_intp *dims,
                      const void *data);

/* A new C-contiguous array copying `data`. */
PyObject *ssk_py_copy(int typenum, int ndim, const npy_intp *dims, const void *data);

/* Converts a str or os.PathLike to a filesystem path (bytes object, new
 * reference), naming `name` in the TypeError. */
PyObject *ssk_py_path(PyObject *obj, const char *name);

/* ------------------------------------------------------------------------ */
/* Types.                                                                     */
/* ------------------------------------------------------------------------ */

/* springskin._core.Rig: an ssk_rig, owned (built from arrays) or borrowed
 * from a Scene (which `owner` keeps alive). Immutable. */
typedef struct {
    PyObject_HEAD
    ssk_rig *rig;        /* owned when owner == NULL */
    PyObject *owner;     /* the Scene, or NULL */
    PyObject *weakrefs;
} ssk_py_rig;

/* springskin._core.Scene: an imported file (ssk_scene). */
typedef struct {
    PyObject_HEAD
    ssk_scene *scene;
    PyObject *path;      /* str: the imported file */
} ssk_py_scene;

typedef struct {
    PyObject_HEAD
    ssk_binding *binding;
} ssk_py_binding;

typedef struct {
    PyObject_HEAD
    ssk_graph *graph;
    PyObject *rig;       /* the rig it was validated against */
} ssk_py_graph;

typedef struct {
    PyObject_HEAD
    ssk_gl_context *ctx;
} ssk_py_gl_context;

typedef struct {
    PyObject_HEAD
    ssk_deformer *deformer;
    PyObject *rig;        /* kept alive: the deformer borrows the ssk_rig */
    PyObject *binding;    /* kept alive (or None) */
    PyObject *gl_context; /* kept alive (or None) */
    PyObject *implicit_operators; /* kept alive (or None): the deformer
                                     borrows the ssk_implicit_operators */
    PyObject *last_positions; /* the array of the last successful deform:
                                 the CPU backend reads it for normals and
                                 max_displacement */
    PyObject *warning;    /* str or None: AUTO fell back to the CPU */
    int state;            /* SSK_PY_NO_DEFORM, SSK_PY_DEFORMED or
                             SSK_PY_DEFORM_FAILED (deformer.c) */
    PyThread_type_lock lock; /* one deform at a time per deformer */
    uint32_t vertex_count, bone_count, mesh_count;
} ssk_py_deformer;

extern PyTypeObject ssk_py_rig_type;
extern PyTypeObject ssk_py_scene_type;
extern PyTypeObject ssk_py_binding_type;
extern PyTypeObject ssk_py_graph_type;
extern PyTypeObject ssk_py_gl_context_type;
extern PyTypeObject ssk_py_deformer_type;
/* writers.c: the streaming cache writers (ssk_pc2_writer, ssk_abc_writer). */
extern PyTypeObject ssk_py_pc2_writer_type;
extern PyTypeObject ssk_py_abc_writer_type;
extern PyTypeObject ssk_py_cor_state_type;
/* implicit.c: springskin._core.ImplicitOperators (ssk_implicit_operators). */
extern PyTypeObject ssk_py_implicit_operators_type;
/* The ssk_implicit_operators of an ImplicitOperators object, or NULL with
 * TypeError naming `name`. */
const ssk_implicit_operators *ssk_py_implicit_operators_get(PyObject *obj, const char *name);
/* stroke.c: springskin._core.Stroke (ssk_stroke; issue #22) and the
 * sketch functions below. */
extern PyTypeObject ssk_py_stroke_type;
PyObject *ssk_py_pose_joints(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_pose_from_strokes(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_surface_points(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_surface_roi(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_bulge_offsets(PyObject *self, PyObject *args, PyObject *kwargs);
/* skin_vectors.c: ssk_rig_skin_vectors. */
PyObject *ssk_py_skin_vectors(PyObject *self, PyObject *args, PyObject *kwargs);
/* cage.c: springskin._core.Cage (ssk_cage; issue #21). */
extern PyTypeObject ssk_py_cage_type;
/* The ssk_cage of a Cage object and the ssk_rig it is bound to in *rig
 * (may be NULL); NULL with TypeError naming `name` when `obj` is not a
 * springskin._core.Cage. A call that changes the cage (a bake given it
 * reshapes it) holds its lock: ssk_py_cage_lock (waits with the GIL
 * released) and ssk_py_cage_release. */
ssk_cage *ssk_py_cage_get(PyObject *obj, const char *name, const ssk_rig **rig);
void ssk_py_cage_lock(PyObject *obj);
void ssk_py_cage_release(PyObject *obj);
/* cor.c: the centers and flags arrays a CorState keeps up to date, (V, 3)
 * float32 and (V,) uint8, borrowed from `obj`; 0, or -1 with TypeError when
 * `obj` is not a springskin._core.CorState. */
int ssk_py_cor_state_arrays(PyObject *obj, const char *name, const float **centers,
                            const uint8_t **flags, uint32_t *vertex_count);

/* conversion.c: a Python progress callable for ssk_progress_fn (issue
 * #18): it gets the fraction done; called on the thread that released the
 * GIL, so the call takes the GIL back. An exception it raises is printed
 * and the callable is not called again (a precomputation cannot be stopped
 * midway). */
typedef struct ssk_py_progress {
    PyObject *fn; /* borrowed callable */
    int failed;
} ssk_py_progress;
/* user: an ssk_py_progress. */
void ssk_py_progress_call(void *user, uint32_t done, uint32_t total);
/* 0 when `fn` is None or callable, else -1 with TypeError naming "progress". */
int ssk_py_progress_check(PyObject *fn);

/* Module-level functions defined outside module.c. */
PyObject *ssk_py_import_scene(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_bind(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_load_binding(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_graph_parse(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_graph_load(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_graph_from_method(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_bake(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ssk_py_merge(PyObject *self, PyObject *args, PyObject *kwargs);

/* Parses a method / backend / bind-method name, raising ValueError
 * "<name>: <C message>" on an unknown one. Return 0 or -1. */
int ssk_py_parse_method(PyObject *obj, const char *name, ssk_method *out);
int ssk_py_parse_backend(PyObject *obj, const char *name, ssk_backend *out);

/* The ssk_rig of a Rig object, or NULL with TypeError naming `name`. */
const ssk_rig *ssk_py_rig_get(PyObject *obj, const char *name);
/* A Rig object owning `rig` (destroyed with it); NULL with the exception
 * set, `rig` then still the caller's. */
PyObject *ssk_py_rig_own(ssk_rig *rig);

#endif /* SSK_PYEXT_COMMON_H */
