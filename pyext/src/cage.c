/*
 * cage.c — springskin._core.Cage: a cage bound to a rig at rest for
 * coupled cages and skeletons (ssk_cage; Corda et al. 2020; issue #21).
 *
 * Lifetime: the cage borrows its ssk_rig, so the Cage keeps its Rig (and
 * through it the Scene owning a loaded rig) alive. A rig made by reshape
 * owns its ssk_rig and does not depend on the cage.
 *
 * Concurrency: reshape (and a bake given the cage) writes the heads the
 * cage keeps for pose; a per-cage lock serializes every call on one cage.
 * The lock is only ever waited for with the GIL released.
 *
 * binding= (a Binding of the rig, ssk_cage_create_cached): its cage
 * binding is reused when it is this cage's, else made and stored in it;
 * the GIL is held throughout (the Binding is written, and Bindings have no
 * lock of their own).
 */
#include "common.h"

#include <stdio.h>

typedef struct ssk_py_cage {
    PyObject_HEAD
    ssk_cage *cage;
    PyObject *rig;             /* the core Rig, kept alive: the cage borrows it */
    PyArrayObject *vertices;   /* (c, 3) float32, rest, rig space, read-only */
    PyArrayObject *triangles;  /* (t, 3) int32, read-only */
    PyThread_type_lock lock;   /* one call at a time per cage */
    int from_binding;          /* 1: Phi, Psi and the rows came from binding= */
} ssk_py_cage;

/* A closed triangle mesh has at least 4 vertices and 4 triangles (as
 * ssk_cage_mesh_import requires). */
#define SSK_PY_CAGE_MIN 4

static void cage_lock(ssk_py_cage *self)
{
    if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) return;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
}

static void cage_dealloc(ssk_py_cage *self)
{
    ssk_cage_destroy(self->cage); /* before the rig it borrows */
    Py_XDECREF(self->rig);
    Py_XDECREF(self->vertices);
    Py_XDECREF(self->triangles);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Binds `vertices` (c, 3) float32 and `triangles` (t, 3) int32, both
 * C-contiguous and checked, to the rig of `rig_obj`, through the Binding
 * `binding_obj` unless it is NULL or None; steals neither array (the new
 * Cage takes its own references). */
static PyObject *cage_make(PyTypeObject *type, PyObject *rig_obj, PyArrayObject *vertices,
                           PyArrayObject *triangles, PyObject *binding_obj, const char *prefix)
{
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_binding *binding = NULL;
    if (binding_obj && binding_obj != Py_None) {
        if (!PyObject_TypeCheck(binding_obj, &ssk_py_binding_type)) {
            PyErr_Format(PyExc_TypeError,
                         "%sbinding: expected a springskin._core.Binding or None, got %.100s",
                         prefix, Py_TYPE(binding_obj)->tp_name);
            return NULL;
        }
        binding = ((ssk_py_binding *)binding_obj)->binding;
    }
    ssk_py_cage *self = (ssk_py_cage *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_INCREF(rig_obj);
    self->rig = rig_obj;
    Py_INCREF(vertices);
    self->vertices = vertices;
    Py_INCREF(triangles);
    self->triangles = triangles;
    PyArray_CLEARFLAGS(vertices, NPY_ARRAY_WRITEABLE);
    PyArray_CLEARFLAGS(triangles, NPY_ARRAY_WRITEABLE);
    /* int32 indices checked to be in [0, c): the same bits as uint32 */
    const ssk_cage_mesh mesh = {(uint32_t)PyArray_DIM(vertices, 0),
                                (uint32_t)PyArray_DIM(triangles, 0), PyArray_DATA(vertices),
                                PyArray_DATA(triangles)};
    ssk_cage *cage = NULL;
    ssk_error err = {0};
    ssk_status status;
    int reused = 0;
    if (binding) { /* the binding is written: the GIL kept */
        status = ssk_cage_create_cached(&cage, rig, &mesh, binding, &reused, &err);
    } else {
        Py_BEGIN_ALLOW_THREADS
        status = ssk_cage_create(&cage, rig, &mesh, &err);
        Py_END_ALLOW_THREADS
    }
    if (status != SSK_OK) {
        Py_DECREF(self);
        return ssk_py_raise(&err, prefix, NULL);
    }
    self->cage = cage;
    self->from_binding = reused;
    return (PyObject *)self;
}

/* Cage(rig, vertices, triangles, binding=None) */
static PyObject *cage_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig", "vertices", "triangles", "binding", NULL};
    PyObject *rig_obj, *vertices_obj, *triangles_obj, *binding_obj = NULL, *result = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O:Cage", kwlist, &rig_obj, &vertices_obj,
                                     &triangles_obj, &binding_obj))
        return NULL;
    if (!ssk_py_rig_get(rig_obj, "rig")) return NULL;
    PyArrayObject *vertices = NULL, *tri64 = NULL, *triangles = NULL;
    ssk_py_shape vshape = {2, {"c", "3"}, {SSK_PY_ANY, 3}};
    vertices = ssk_py_float_array(vertices_obj, "vertices", &vshape);
    if (!vertices) goto fail;
    const npy_intp c = vshape.sizes[0];
    if (c < SSK_PY_CAGE_MIN || c > (npy_intp)INT32_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "vertices: expected %d to %d cage vertices (a closed cage), got shape "
                     "(%zd, 3)",
                     SSK_PY_CAGE_MIN, INT32_MAX, (Py_ssize_t)c);
        goto fail;
    }
    ssk_py_shape tshape = {2, {"t", "3"}, {SSK_PY_ANY, 3}};
    tri64 = ssk_py_index_array(triangles_obj, "triangles", &tshape);
    if (!tri64) goto fail;
    const npy_intp t = tshape.sizes[0];
    if (t < SSK_PY_CAGE_MIN || t > (npy_intp)INT32_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "triangles: expected %d to %d cage triangles (a closed cage), got shape "
                     "(%zd, 3)",
                     SSK_PY_CAGE_MIN, INT32_MAX, (Py_ssize_t)t);
        goto fail;
    }
    {
        const int64_t *v = PyArray_DATA(tri64);
        for (npy_intp i = 0; i < 3 * t; ++i) {
            if (v[i] >= 0 && v[i] < c) continue;
            PyErr_Format(PyExc_ValueError,
                         "triangles: entry [%zd, %zd] = %lld is out of range: expected a cage "
                         "vertex index in [0, c) = [0, %zd)",
                         (Py_ssize_t)(i / 3), (Py_ssize_t)(i % 3), (long long)v[i],
                         (Py_ssize_t)c);
            goto fail;
        }
    }
    triangles = ssk_py_to_int32(tri64);
    if (!triangles) goto fail;
    /* a private copy: the cage's arrays stay what it was bound with */
    if ((PyObject *)vertices == vertices_obj) {
        PyArrayObject *copy = (PyArrayObject *)PyArray_NewCopy(vertices, NPY_CORDER);
        if (!copy) goto fail;
        Py_DECREF(vertices);
        vertices = copy;
    }
    result = cage_make(type, rig_obj, vertices, triangles, binding_obj, "Cage: ");
fail:
    Py_XDECREF(vertices);
    Py_XDECREF(tri64);
    Py_XDECREF(triangles);
    return result;
}

/* Cage.load(path, rig): ssk_cage_mesh_import into the rig space of the
 * rig's scene (a rig built from arrays: the file's space is rig space),
 * then bound. */
static PyObject *cage_load(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "rig", "binding", NULL};
    PyObject *path_obj, *rig_obj, *binding_obj = NULL, *path = NULL, *result = NULL;
    PyArrayObject *vertices = NULL, *triangles = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:load", kwlist, &path_obj, &rig_obj,
                                     &binding_obj))
        return NULL;
    if (!ssk_py_rig_get(rig_obj, "rig")) return NULL;
    path = ssk_py_path(path_obj, "path");
    if (!path) return NULL;
    PyObject *owner = ((ssk_py_rig *)rig_obj)->owner;
    const ssk_scene *scene = owner ? ((ssk_py_scene *)owner)->scene : NULL;
    const char *cpath = PyBytes_AS_STRING(path);
    ssk_cage_mesh mesh = {0};
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_cage_mesh_import(&mesh, cpath, scene, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise(&err, NULL, cpath);
        goto fail;
    }
    const npy_intp vdims[2] = {mesh.vertex_count, 3}, tdims[2] = {mesh.triangle_count, 3};
    vertices = (PyArrayObject *)ssk_py_copy(NPY_FLOAT32, 2, vdims, mesh.vertices);
    /* vertex indices < c <= INT32_MAX: the same bits as int32 */
    triangles = (PyArrayObject *)ssk_py_copy(NPY_INT32, 2, tdims, mesh.triangles);
    if (!vertices || !triangles) goto fail;
    result = cage_make(type, rig_obj, vertices, triangles, binding_obj, "Cage.load: ");
fail:
    ssk_cage_mesh_free(&mesh);
    Py_XDECREF(vertices);
    Py_XDECREF(triangles);
    Py_XDECREF(path);
    return result;
}

ssk_cage *ssk_py_cage_get(PyObject *obj, const char *name, const ssk_rig **rig)
{
    if (!PyObject_TypeCheck(obj, &ssk_py_cage_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a springskin._core.Cage, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    ssk_py_cage *self = (ssk_py_cage *)obj;
    if (rig) *rig = ((ssk_py_rig *)self->rig)->rig;
    return self->cage;
}

void ssk_py_cage_lock(PyObject *obj) { cage_lock((ssk_py_cage *)obj); }

void ssk_py_cage_release(PyObject *obj)
{
    PyThread_release_lock(((ssk_py_cage *)obj)->lock);
}

/* reshape(edited_vertices) -> Rig (a new, owned ssk_rig) */
static PyObject *cage_reshape(ssk_py_cage *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"edited_vertices", NULL};
    PyObject *edit_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:reshape", kwlist, &edit_obj))
        return NULL;
    ssk_py_shape shape = {2, {"c", "3"}, {ssk_cage_vertex_count(self->cage), 3}};
    PyArrayObject *edit = ssk_py_float_array(edit_obj, "edited_vertices", &shape);
    if (!edit) return NULL;
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    ssk_status status;
    cage_lock(self);
    Py_BEGIN_ALLOW_THREADS
    status = ssk_cage_reshape(&rig, self->cage, PyArray_DATA(edit), &err);
    Py_END_ALLOW_THREADS
    PyThread_release_lock(self->lock);
    Py_DECREF(edit);
    if (status != SSK_OK) return ssk_py_raise(&err, "reshape: ", NULL);
    PyObject *result = ssk_py_rig_own(rig);
    if (!result) ssk_rig_destroy(rig);
    return result;
}

/* pose(skinning_matrices) -> (B, 4, 4), or (F, B, 4, 4) for a stack */
static PyObject *cage_pose(ssk_py_cage *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"skinning_matrices", NULL};
    PyObject *skin_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:pose", kwlist, &skin_obj)) return NULL;
    const npy_intp B = ssk_rig_bone_count(((ssk_py_rig *)self->rig)->rig);
    /* a stack when it converts to 4 dimensions; anything else gets the
     * single pose's messages */
    PyObject *probe = PyArray_FROM_O(skin_obj);
    const int stack = probe && PyArray_NDIM((PyArrayObject *)probe) == 4;
    if (!probe) PyErr_Clear();
    ssk_py_shape one = {3, {"B", "4", "4"}, {B, 4, 4}};
    ssk_py_shape many = {4, {"F", "B", "4", "4"}, {SSK_PY_ANY, B, 4, 4}};
    ssk_py_shape *shape = stack ? &many : &one;
    PyArrayObject *skinning =
        ssk_py_float_array(probe ? probe : skin_obj, "skinning_matrices", shape);
    Py_XDECREF(probe);
    if (!skinning) return NULL;
    const npy_intp frames = stack ? shape->sizes[0] : 1;
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(shape->ndim, shape->sizes,
                                                            NPY_FLOAT32);
    if (!out) {
        Py_DECREF(skinning);
        return NULL;
    }
    const float *src = PyArray_DATA(skinning);
    float *dst = PyArray_DATA(out);
    ssk_error err = {0};
    ssk_status status = SSK_OK;
    npy_intp f = 0;
    cage_lock(self);
    Py_BEGIN_ALLOW_THREADS
    for (; f < frames && status == SSK_OK; ++f)
        status = ssk_cage_pose(dst + 16 * B * f, self->cage, src + 16 * B * f, &err);
    Py_END_ALLOW_THREADS
    PyThread_release_lock(self->lock);
    Py_DECREF(skinning);
    if (status != SSK_OK) {
        Py_DECREF(out);
        if (!stack) return ssk_py_raise(&err, "pose: ", NULL);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "pose: frame %zd: ", (Py_ssize_t)(f - 1));
        return ssk_py_raise(&err, prefix, NULL);
    }
    return (PyObject *)out;
}

/* fit(positions) -> (c, 3): the posed cage of deformed rig-space positions */
static PyObject *cage_fit(ssk_py_cage *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"positions", NULL};
    PyObject *positions_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:fit", kwlist, &positions_obj))
        return NULL;
    ssk_py_shape shape = {2, {"V", "3"}, {ssk_rig_vertex_count(((ssk_py_rig *)self->rig)->rig), 3}};
    PyArrayObject *positions = ssk_py_float_array(positions_obj, "positions", &shape);
    if (!positions) return NULL;
    const npy_intp dims[2] = {ssk_cage_vertex_count(self->cage), 3};
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!out) {
        Py_DECREF(positions);
        return NULL;
    }
    ssk_error err = {0};
    ssk_status status;
    cage_lock(self);
    Py_BEGIN_ALLOW_THREADS
    status = ssk_cage_fit(PyArray_DATA(out), self->cage, PyArray_DATA(positions), &err);
    Py_END_ALLOW_THREADS
    PyThread_release_lock(self->lock);
    Py_DECREF(positions);
    if (status != SSK_OK) {
        Py_DECREF(out);
        return ssk_py_raise(&err, "fit: ", NULL);
    }
    return (PyObject *)out;
}

/* reverse(skinning_matrices, posed_offset) -> (c, 3): CageRev (Eq. 19) */
static PyObject *cage_reverse(ssk_py_cage *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"skinning_matrices", "posed_offset", NULL};
    PyObject *skin_obj, *offset_obj, *result = NULL;
    PyArrayObject *skinning = NULL, *offset = NULL, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:reverse", kwlist, &skin_obj, &offset_obj))
        return NULL;
    const npy_intp B = ssk_rig_bone_count(((ssk_py_rig *)self->rig)->rig);
    const npy_intp c = ssk_cage_vertex_count(self->cage);
    ssk_py_shape sshape = {3, {"B", "4", "4"}, {B, 4, 4}};
    ssk_py_shape oshape = {2, {"c", "3"}, {c, 3}};
    skinning = ssk_py_float_array(skin_obj, "skinning_matrices", &sshape);
    if (!skinning) goto fail;
    offset = ssk_py_float_array(offset_obj, "posed_offset", &oshape);
    if (!offset) goto fail;
    const npy_intp dims[2] = {c, 3};
    out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!out) goto fail;
    ssk_error err = {0};
    ssk_status status;
    cage_lock(self);
    Py_BEGIN_ALLOW_THREADS
    status = ssk_cage_reverse(PyArray_DATA(out), self->cage, PyArray_DATA(skinning),
                              PyArray_DATA(offset), &err);
    Py_END_ALLOW_THREADS
    PyThread_release_lock(self->lock);
    if (status != SSK_OK) {
        ssk_py_raise(&err, "reverse: ", NULL);
        goto fail;
    }
    result = (PyObject *)out;
    out = NULL;
fail:
    Py_XDECREF(skinning);
    Py_XDECREF(offset);
    Py_XDECREF(out);
    return result;
}

static PyObject *cage_vertex_count(ssk_py_cage *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(ssk_cage_vertex_count(self->cage));
}

static PyObject *cage_triangle_count(ssk_py_cage *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t((Py_ssize_t)PyArray_DIM(self->triangles, 0));
}

static PyObject *cage_vertices(ssk_py_cage *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->vertices);
    return (PyObject *)self->vertices;
}

static PyObject *cage_triangles(ssk_py_cage *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->triangles);
    return (PyObject *)self->triangles;
}

static PyObject *cage_rig(ssk_py_cage *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->rig);
    return self->rig;
}

static PyObject *cage_from_binding(ssk_py_cage *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->from_binding);
}

static PyMethodDef cage_methods[] = {
    {"load", (PyCFunction)(void (*)(void))cage_load, METH_CLASS | METH_VARARGS | METH_KEYWORDS,
     "load(path, rig, binding=None) -> Cage: ssk_cage_mesh_import into the rig's scene, "
     "ssk_cage_create(_cached)."},
    {"reshape", (PyCFunction)(void (*)(void))cage_reshape, METH_VARARGS | METH_KEYWORDS,
     "reshape(edited_vertices) -> Rig: ssk_cage_reshape."},
    {"pose", (PyCFunction)(void (*)(void))cage_pose, METH_VARARGS | METH_KEYWORDS,
     "pose(skinning_matrices) -> (B, 4, 4) or (F, B, 4, 4) float32: ssk_cage_pose."},
    {"fit", (PyCFunction)(void (*)(void))cage_fit, METH_VARARGS | METH_KEYWORDS,
     "fit(positions) -> (c, 3) float32: ssk_cage_fit."},
    {"reverse", (PyCFunction)(void (*)(void))cage_reverse, METH_VARARGS | METH_KEYWORDS,
     "reverse(skinning_matrices, posed_offset) -> (c, 3) float32: ssk_cage_reverse."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cage_getset[] = {
    {"vertex_count", (getter)cage_vertex_count, NULL, "Cage vertices c.", NULL},
    {"triangle_count", (getter)cage_triangle_count, NULL, "Cage triangles t.", NULL},
    {"vertices", (getter)cage_vertices, NULL, "(c, 3) float32 rest cage, rig space, read-only.",
     NULL},
    {"triangles", (getter)cage_triangles, NULL, "(t, 3) int32, read-only.", NULL},
    {"rig", (getter)cage_rig, NULL, "The Rig the cage is bound to.", NULL},
    {"from_binding", (getter)cage_from_binding, NULL,
     "True when binding= held this cage's binding (not bound again).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_cage_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.Cage",
    .tp_basicsize = sizeof(ssk_py_cage),
    .tp_dealloc = (destructor)cage_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Cage(rig, vertices, triangles, binding=None): ssk_cage_create, or "
              "ssk_cage_create_cached with a Binding (see springskin.Cage).",
    .tp_methods = cage_methods,
    .tp_getset = cage_getset,
    .tp_new = cage_new,
};
