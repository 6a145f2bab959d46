/*
 * rig.c — springskin._core.Rig (an ssk_rig built from numpy arrays or
 * borrowed from an imported scene) and springskin._core.Scene (an
 * ssk_scene: Assimp import, animations, sampling).
 */
#include "common.h"

#include <stdio.h>
#include <string.h>

/* Largest vertex, triangle or bone count: indices are int32 in the core. */
#define SSK_PY_MAX_COUNT ((npy_intp)INT32_MAX)

static PyObject *rig_wrap(ssk_rig *rig, PyObject *owner);

const ssk_rig *ssk_py_rig_get(PyObject *obj, const char *name)
{
    if (!PyObject_TypeCheck(obj, &ssk_py_rig_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a springskin._core.Rig, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((ssk_py_rig *)obj)->rig;
}

/* ------------------------------------------------------------------------ */
/* Rig from arrays.                                                           */
/* ------------------------------------------------------------------------ */

/* Checks an int64 index array against [lo, hi); message names the entry. */
static int check_index_range(PyArrayObject *a, const char *name, int64_t lo, int64_t hi,
                             const char *what)
{
    const int64_t *v = PyArray_DATA(a);
    const npy_intp n = PyArray_SIZE(a);
    const npy_intp cols = PyArray_NDIM(a) == 2 ? PyArray_DIMS(a)[1] : 1;
    for (npy_intp i = 0; i < n; ++i) {
        if (v[i] >= lo && v[i] < hi) continue;
        if (PyArray_NDIM(a) == 2)
            PyErr_Format(PyExc_ValueError, "%s: entry [%zd, %zd] = %lld is out of range: %s",
                         name, (Py_ssize_t)(i / cols), (Py_ssize_t)(i % cols),
                         (long long)v[i], what);
        else
            PyErr_Format(PyExc_ValueError, "%s: entry [%zd] = %lld is out of range: %s", name,
                         (Py_ssize_t)i, (long long)v[i], what);
        return -1;
    }
    return 0;
}

/* Bone names: None, or a sequence of #B distinct str. Fills names[] with
 * UTF-8 pointers owned by `list` (a new reference kept by the caller). */
static int convert_bone_names(PyObject *obj, npy_intp bones, PyObject **list,
                              const char ***names)
{
    *list = NULL;
    *names = NULL;
    if (obj == Py_None) return 0;
    PyObject *seen = NULL;
    if (PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "bone_names: expected a sequence of B = %zd str, got a single %.50s",
                     (Py_ssize_t)bones, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *list = PySequence_List(obj);
    if (!*list) {
        PyErr_Format(PyExc_TypeError, "bone_names: expected a sequence of B = %zd str, got %.100s",
                     (Py_ssize_t)bones, Py_TYPE(obj)->tp_name);
        return -1;
    }
    const Py_ssize_t n = PyList_GET_SIZE(*list);
    if (n != bones) {
        PyErr_Format(PyExc_ValueError,
                     "bone_names: expected B = %zd names (one per bone of parents), got %zd",
                     (Py_ssize_t)bones, n);
        goto fail;
    }
    *names = PyMem_Calloc((size_t)n + 1, sizeof **names);
    seen = PyDict_New();
    if (!*names || !seen) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = PyList_GET_ITEM(*list, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "bone_names[%zd]: expected a str, got %.100s", i,
                         Py_TYPE(item)->tp_name);
            goto fail;
        }
        Py_ssize_t len = 0;
        const char *utf8 = PyUnicode_AsUTF8AndSize(item, &len);
        if (!utf8) goto fail;
        if (len == 0 || (Py_ssize_t)strlen(utf8) != len) {
            PyErr_Format(PyExc_ValueError,
                         "bone_names[%zd]: expected a non-empty name without NUL characters",
                         i);
            goto fail;
        }
        PyObject *previous = PyDict_GetItemWithError(seen, item);
        if (previous) {
            PyErr_Format(PyExc_ValueError,
                         "bone_names[%zd]: name %R is already bone_names[%S] (bone names "
                         "must be unique)",
                         i, item, previous);
            goto fail;
        }
        if (PyErr_Occurred()) goto fail;
        PyObject *index = PyLong_FromSsize_t(i);
        if (!index || PyDict_SetItem(seen, item, index) != 0) {
            Py_XDECREF(index);
            goto fail;
        }
        Py_DECREF(index);
        (*names)[i] = utf8;
    }
    Py_DECREF(seen);
    return 0;
fail:
    Py_XDECREF(seen);
    PyMem_Free(*names);
    *names = NULL;
    Py_CLEAR(*list);
    return -1;
}

/* The argument an ssk_rig_create status is about. */
static const char *rig_status_prefix(ssk_status status)
{
    switch (status) {
    case SSK_ERROR_TRIANGLE_INDEX: return "triangles: ";
    case SSK_ERROR_BONE_INDEX: return "weight_indices: ";
    case SSK_ERROR_NEGATIVE_WEIGHT: return "weight_values: ";
    case SSK_ERROR_PARENT_INDEX:
    case SSK_ERROR_PARENT_CYCLE: return "parents: ";
    default: return "Rig: ";
    }
}

static PyObject *rig_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"positions",   "triangles", "parents",   "bind_matrices",
                             "weight_indices", "weight_values", "heads", "tails",
                             "bone_names", "mesh_name", "object_matrix", NULL};
    PyObject *positions_obj, *triangles_obj, *parents_obj, *bind_obj, *windex_obj, *wvalue_obj;
    PyObject *heads_obj = Py_None, *tails_obj = Py_None, *names_obj = Py_None,
             *mesh_name_obj = Py_None, *object_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO|OOOOO:Rig", kwlist, &positions_obj,
                                     &triangles_obj, &parents_obj, &bind_obj, &windex_obj,
                                     &wvalue_obj, &heads_obj, &tails_obj, &names_obj,
                                     &mesh_name_obj, &object_obj))
        return NULL;

    PyArrayObject *positions = NULL, *tri64 = NULL, *triangles = NULL, *par64 = NULL,
                  *parents = NULL, *bind = NULL, *wi64 = NULL, *windex = NULL,
                  *wvalues = NULL, *heads = NULL, *tails = NULL, *object = NULL;
    PyObject *names_list = NULL, *result = NULL;
    const char **names = NULL;
    const char *mesh_name = NULL;
    ssk_rig *rig = NULL;

    ssk_py_shape pshape = {2, {"V", "3"}, {SSK_PY_ANY, 3}};
    positions = ssk_py_float_array(positions_obj, "positions", &pshape);
    if (!positions) goto fail;
    const npy_intp V = pshape.sizes[0];
    if (V < 1 || V > SSK_PY_MAX_COUNT) {
        PyErr_Format(PyExc_ValueError, "positions: expected 1 to %zd vertices, got shape (%zd, 3)",
                     (Py_ssize_t)SSK_PY_MAX_COUNT, (Py_ssize_t)V);
        goto fail;
    }
    npy_intp F = 0;
    if (triangles_obj != Py_None) {
        ssk_py_shape tshape = {2, {"F", "3"}, {SSK_PY_ANY, 3}};
        tri64 = ssk_py_index_array(triangles_obj, "triangles", &tshape);
        if (!tri64) goto fail;
        F = tshape.sizes[0];
        char what[96];
        snprintf(what, sizeof what, "expected a vertex index in [0, V) = [0, %zd)",
                 (Py_ssize_t)V);
        if (F > SSK_PY_MAX_COUNT) {
            PyErr_Format(PyExc_ValueError, "triangles: at most %zd triangles, got %zd",
                         (Py_ssize_t)SSK_PY_MAX_COUNT, (Py_ssize_t)F);
            goto fail;
        }
        if (check_index_range(tri64, "triangles", 0, V, what) != 0) goto fail;
        triangles = ssk_py_to_int32(tri64);
        if (!triangles) goto fail;
    }
    ssk_py_shape parshape = {1, {"B"}, {SSK_PY_ANY}};
    par64 = ssk_py_index_array(parents_obj, "parents", &parshape);
    if (!par64) goto fail;
    const npy_intp B = parshape.sizes[0];
    if (B > SSK_PY_MAX_COUNT) {
        PyErr_Format(PyExc_ValueError, "parents: at most %zd bones, got %zd",
                     (Py_ssize_t)SSK_PY_MAX_COUNT, (Py_ssize_t)B);
        goto fail;
    }
    {
        char what[112];
        snprintf(what, sizeof what, "expected -1 (a root) or a bone index in [0, B) = [0, %zd)",
                 (Py_ssize_t)B);
        if (check_index_range(par64, "parents", -1, B, what) != 0) goto fail;
    }
    parents = ssk_py_to_int32(par64);
    if (!parents) goto fail;
    ssk_py_shape bshape = {3, {"B", "4", "4"}, {B, 4, 4}};
    bind = ssk_py_float_array(bind_obj, "bind_matrices", &bshape);
    if (!bind) goto fail;

    ssk_py_shape wishape = {2, {"V", "K"}, {V, SSK_PY_ANY}};
    wi64 = ssk_py_index_array(windex_obj, "weight_indices", &wishape);
    if (!wi64) goto fail;
    const npy_intp K = wishape.sizes[1];
    if (K > SSK_MAX_INFLUENCES) {
        PyErr_Format(PyExc_ValueError,
                     "weight_indices: expected at most %d influences per vertex (K), got shape "
                     "(%zd, %zd)",
                     SSK_MAX_INFLUENCES, (Py_ssize_t)V, (Py_ssize_t)K);
        goto fail;
    }
    ssk_py_shape wvshape = {2, {"V", "K"}, {V, K}};
    wvalues = ssk_py_float_array(wvalue_obj, "weight_values", &wvshape);
    if (!wvalues) goto fail;
    {
        /* negative weights; bone indices of non-zero weights; padding of
         * zero weights (any index) stored as -1 */
        int64_t *wi = PyArray_DATA(wi64);
        const float *wv = PyArray_DATA(wvalues);
        for (npy_intp i = 0; i < V * K; ++i) {
            if (wv[i] < 0.0f) {
                char value[32];
                snprintf(value, sizeof value, "%g", (double)wv[i]);
                PyErr_Format(PyExc_ValueError,
                             "weight_values: entry [%zd, %zd] = %s is negative (skin weights "
                             "must be >= 0)",
                             (Py_ssize_t)(i / K), (Py_ssize_t)(i % K), value);
                goto fail;
            }
            if (wv[i] == 0.0f) {
                if (wi[i] < 0 || wi[i] >= B) wi[i] = -1;
                continue;
            }
            if (wi[i] < 0 || wi[i] >= B) {
                PyErr_Format(PyExc_ValueError,
                             "weight_indices: entry [%zd, %zd] = %lld is out of range: expected "
                             "a bone index in [0, B) = [0, %zd) where the weight is not 0 "
                             "(padding entries with weight 0 may hold any index, -1 is "
                             "customary)",
                             (Py_ssize_t)(i / K), (Py_ssize_t)(i % K), (long long)wi[i],
                             (Py_ssize_t)B);
                goto fail;
            }
        }
    }
    windex = ssk_py_to_int32(wi64);
    if (!windex) goto fail;
    if (heads_obj != Py_None) {
        ssk_py_shape s = {2, {"B", "3"}, {B, 3}};
        heads = ssk_py_float_array(heads_obj, "heads", &s);
        if (!heads) goto fail;
    }
    if (tails_obj != Py_None) {
        ssk_py_shape s = {2, {"B", "3"}, {B, 3}};
        tails = ssk_py_float_array(tails_obj, "tails", &s);
        if (!tails) goto fail;
    }
    if (convert_bone_names(names_obj, B, &names_list, &names) != 0) goto fail;
    if (mesh_name_obj != Py_None) {
        if (!PyUnicode_Check(mesh_name_obj)) {
            PyErr_Format(PyExc_TypeError, "mesh_name: expected a str or None, got %.100s",
                         Py_TYPE(mesh_name_obj)->tp_name);
            goto fail;
        }
        mesh_name = PyUnicode_AsUTF8(mesh_name_obj);
        if (!mesh_name) goto fail;
    }
    if (object_obj != Py_None) {
        ssk_py_shape s = {2, {"4", "4"}, {4, 4}};
        object = ssk_py_float_array(object_obj, "object_matrix", &s);
        if (!object) goto fail;
    }

    ssk_skeleton_desc skeleton = {(uint32_t)B,
                                  names,
                                  PyArray_DATA(parents),
                                  PyArray_DATA(bind),
                                  heads ? PyArray_DATA(heads) : NULL,
                                  tails ? PyArray_DATA(tails) : NULL};
    ssk_mesh_desc mesh = {mesh_name,
                          (uint32_t)V,
                          PyArray_DATA(positions),
                          (uint32_t)F,
                          triangles ? PyArray_DATA(triangles) : NULL,
                          (uint32_t)K,
                          PyArray_DATA(windex),
                          PyArray_DATA(wvalues),
                          object ? PyArray_DATA(object) : NULL};
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_rig_create(&rig, &skeleton, &mesh, 1, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise(&err, rig_status_prefix(status), NULL);
        goto fail;
    }
    result = type->tp_alloc(type, 0);
    if (!result) goto fail;
    ((ssk_py_rig *)result)->rig = rig;
    rig = NULL;
fail:
    ssk_rig_destroy(rig);
    PyMem_Free(names);
    Py_XDECREF(names_list);
    Py_XDECREF(positions);
    Py_XDECREF(tri64);
    Py_XDECREF(triangles);
    Py_XDECREF(par64);
    Py_XDECREF(parents);
    Py_XDECREF(bind);
    Py_XDECREF(wi64);
    Py_XDECREF(windex);
    Py_XDECREF(wvalues);
    Py_XDECREF(heads);
    Py_XDECREF(tails);
    Py_XDECREF(object);
    return result;
}

/* A Rig object around a rig owned by `owner` (a Scene). */
static PyObject *rig_wrap(ssk_rig *rig, PyObject *owner)
{
    ssk_py_rig *self = (ssk_py_rig *)ssk_py_rig_type.tp_alloc(&ssk_py_rig_type, 0);
    if (!self) return NULL;
    self->rig = rig;
    Py_INCREF(owner);
    self->owner = owner;
    return (PyObject *)self;
}

PyObject *ssk_py_rig_own(ssk_rig *rig)
{
    ssk_py_rig *self = (ssk_py_rig *)ssk_py_rig_type.tp_alloc(&ssk_py_rig_type, 0);
    if (!self) return NULL;
    self->rig = rig;
    return (PyObject *)self;
}

static void rig_dealloc(ssk_py_rig *self)
{
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    if (self->owner)
        Py_DECREF(self->owner);
    else
        ssk_rig_destroy(self->rig);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *rig_bone_count(ssk_py_rig *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(ssk_rig_bone_count(self->rig));
}
static PyObject *rig_mesh_count(ssk_py_rig *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(ssk_rig_mesh_count(self->rig));
}
static PyObject *rig_vertex_count(ssk_py_rig *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(ssk_rig_vertex_count(self->rig));
}
static PyObject *rig_deforming_bone_count(ssk_py_rig *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(ssk_rig_deforming_bone_count(self->rig));
}
static PyObject *rig_max_influences(ssk_py_rig *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(ssk_rig_max_influences(self->rig));
}
static PyObject *rig_hash(ssk_py_rig *self, void *c)
{
    (void)c;
    uint64_t h;
    Py_BEGIN_ALLOW_THREADS
    h = ssk_rig_hash(self->rig);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(h);
}
static PyObject *rig_scene(ssk_py_rig *self, void *c)
{
    (void)c;
    PyObject *owner = self->owner ? self->owner : Py_None;
    Py_INCREF(owner);
    return owner;
}

static PyObject *rig_find_bone(ssk_py_rig *self, PyObject *name)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "name: expected a str, got %.100s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8(name);
    if (!text) return NULL;
    return PyLong_FromLong(ssk_rig_find_bone(self->rig, text));
}

/* mesh(i) -> dict of read-only views into the rig. */
static PyObject *rig_mesh(ssk_py_rig *self, PyObject *arg)
{
    Py_ssize_t index = PyNumber_AsSsize_t(arg, PyExc_IndexError);
    if (index == -1 && PyErr_Occurred()) return NULL;
    const uint32_t count = ssk_rig_mesh_count(self->rig);
    if (index < 0 || index >= (Py_ssize_t)count) {
        PyErr_Format(PyExc_IndexError, "mesh: index %zd out of range [0, %u)", index,
                     (unsigned)count);
        return NULL;
    }
    ssk_mesh_view view;
    ssk_error err = {0};
    if (ssk_rig_mesh(self->rig, (uint32_t)index, &view, &err) != SSK_OK)
        return ssk_py_raise(&err, "mesh: ", NULL);
    PyObject *self_obj = (PyObject *)self;
    const npy_intp vdims[2] = {view.vertex_count, 3};
    const npy_intp tdims[2] = {view.triangle_count, 3};
    const npy_intp wdims[2] = {view.vertex_count, view.influence_count};
    const npy_intp mdims[2] = {4, 4};
    return Py_BuildValue(
        "{s:s,s:I,s:I,s:I,s:I,s:N,s:N,s:N,s:N,s:N}", "name", view.name, "vertex_count",
        view.vertex_count, "triangle_count", view.triangle_count, "influence_count",
        view.influence_count, "first_vertex", view.first_vertex, "positions",
        ssk_py_view(self_obj, NPY_FLOAT32, 2, vdims, view.positions), "triangles",
        ssk_py_view(self_obj, NPY_INT32, 2, tdims, view.triangles), "bone_indices",
        ssk_py_view(self_obj, NPY_INT32, 2, wdims, view.bone_indices), "weights",
        ssk_py_view(self_obj, NPY_FLOAT32, 2, wdims, view.weights), "object_matrix",
        ssk_py_view(self_obj, NPY_FLOAT32, 2, mdims, view.object_matrix));
}

/* weld() -> dict: tolerance, counts, points (V,) uint32 and members
 * (#members,) uint32 as read-only views into the rig (ssk_rig_weld). */
static PyObject *rig_weld(ssk_py_rig *self, PyObject *unused)
{
    (void)unused;
    ssk_weld_view view;
    ssk_error err = {0};
    if (ssk_rig_weld(self->rig, &view, &err) != SSK_OK) return ssk_py_raise(&err, "weld: ", NULL);
    PyObject *self_obj = (PyObject *)self;
    const npy_intp pdims[1] = {ssk_rig_vertex_count(self->rig)};
    const npy_intp mdims[1] = {view.member_count};
    return Py_BuildValue("{s:d,s:I,s:I,s:I,s:I,s:N,s:N}", "tolerance", (double)view.tolerance,
                         "group_count", view.group_count, "member_count", view.member_count,
                         "across_mesh_group_count", view.across_mesh_group_count,
                         "hard_edge_pair_count", view.hard_edge_pair_count, "points",
                         ssk_py_view(self_obj, NPY_UINT32, 1, pdims, view.points), "members",
                         ssk_py_view(self_obj, NPY_UINT32, 1, mdims, view.members));
}

/* bones() -> dict of names (list), parents (B,) int32, bind_matrices
 * (B, 4, 4), heads and tails (B, 3), all float32 read-only copies. */
static PyObject *rig_bones(ssk_py_rig *self, PyObject *unused)
{
    (void)unused;
    const uint32_t nb = ssk_rig_bone_count(self->rig);
    const npy_intp d1[1] = {nb}, d3[2] = {nb, 3}, d44[3] = {nb, 4, 4};
    PyObject *names = PyList_New(nb), *parents = PyArray_SimpleNew(1, d1, NPY_INT32),
             *bind = PyArray_SimpleNew(3, d44, NPY_FLOAT32),
             *heads = PyArray_SimpleNew(2, d3, NPY_FLOAT32),
             *tails = PyArray_SimpleNew(2, d3, NPY_FLOAT32), *result = NULL;
    if (!names || !parents || !bind || !heads || !tails) goto fail;
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone_view view;
        ssk_error err = {0};
        if (ssk_rig_bone(self->rig, b, &view, &err) != SSK_OK) {
            ssk_py_raise(&err, "bones: ", NULL);
            goto fail;
        }
        PyObject *name = PyUnicode_DecodeUTF8(view.name, (Py_ssize_t)strlen(view.name), "replace");
        if (!name) goto fail;
        PyList_SET_ITEM(names, b, name);
        ((int32_t *)PyArray_DATA((PyArrayObject *)parents))[b] = view.parent;
        memcpy((float *)PyArray_DATA((PyArrayObject *)bind) + 16 * (size_t)b, view.bind_matrix,
               16 * sizeof(float));
        memcpy((float *)PyArray_DATA((PyArrayObject *)heads) + 3 * (size_t)b, view.head,
               3 * sizeof(float));
        memcpy((float *)PyArray_DATA((PyArrayObject *)tails) + 3 * (size_t)b, view.tail,
               3 * sizeof(float));
    }
    PyArray_CLEARFLAGS((PyArrayObject *)parents, NPY_ARRAY_WRITEABLE);
    PyArray_CLEARFLAGS((PyArrayObject *)bind, NPY_ARRAY_WRITEABLE);
    PyArray_CLEARFLAGS((PyArrayObject *)heads, NPY_ARRAY_WRITEABLE);
    PyArray_CLEARFLAGS((PyArrayObject *)tails, NPY_ARRAY_WRITEABLE);
    result = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O}", "names", names, "parents", parents,
                           "bind_matrices", bind, "heads", heads, "tails", tails);
fail:
    Py_XDECREF(names);
    Py_XDECREF(parents);
    Py_XDECREF(bind);
    Py_XDECREF(heads);
    Py_XDECREF(tails);
    return result;
}

/* rest_positions() -> (V, 3) float32: every mesh's rest positions, meshes
 * concatenated, each in its object space. */
static PyObject *rig_rest_positions(ssk_py_rig *self, PyObject *unused)
{
    (void)unused;
    const npy_intp dims[2] = {ssk_rig_vertex_count(self->rig), 3};
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!out) return NULL;
    float *dst = PyArray_DATA(out);
    for (uint32_t m = 0; m < ssk_rig_mesh_count(self->rig); ++m) {
        ssk_mesh_view view;
        ssk_error err = {0};
        if (ssk_rig_mesh(self->rig, m, &view, &err) != SSK_OK) {
            Py_DECREF(out);
            return ssk_py_raise(&err, "rest_positions: ", NULL);
        }
        memcpy(dst + 3 * (size_t)view.first_vertex, view.positions,
               3 * sizeof(float) * view.vertex_count);
    }
    return (PyObject *)out;
}

/* normals(positions) -> (V, 3) float32 area-weighted unit normals. */
static PyObject *rig_normals(ssk_py_rig *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"positions", NULL};
    PyObject *positions_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:normals", kwlist, &positions_obj))
        return NULL;
    ssk_py_shape shape = {2, {"V", "3"}, {ssk_rig_vertex_count(self->rig), 3}};
    PyArrayObject *positions = ssk_py_float_array(positions_obj, "positions", &shape);
    if (!positions) return NULL;
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(2, shape.sizes, NPY_FLOAT32);
    if (!out) {
        Py_DECREF(positions);
        return NULL;
    }
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_rig_normals(self->rig, PyArray_DATA(out), PyArray_DATA(positions), &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(positions);
    if (status != SSK_OK) {
        Py_DECREF(out);
        return ssk_py_raise(&err, "normals: ", NULL);
    }
    return (PyObject *)out;
}

static PyGetSetDef rig_getset[] = {
    {"bone_count", (getter)rig_bone_count, NULL, "Bones #B.", NULL},
    {"mesh_count", (getter)rig_mesh_count, NULL, "Meshes #M.", NULL},
    {"vertex_count", (getter)rig_vertex_count, NULL, "Vertices #V of all meshes.", NULL},
    {"deforming_bone_count", (getter)rig_deforming_bone_count, NULL,
     "Bones with a non-zero weight somewhere.", NULL},
    {"max_influences", (getter)rig_max_influences, NULL,
     "Largest number of non-zero influences on one vertex.", NULL},
    {"hash", (getter)rig_hash, NULL, "ssk_rig_hash: XXH3 of what a binding depends on.", NULL},
    {"scene", (getter)rig_scene, NULL, "The Scene that owns the rig, or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef rig_methods[] = {
    {"find_bone", (PyCFunction)rig_find_bone, METH_O, "find_bone(name) -> index or -1."},
    {"mesh", (PyCFunction)rig_mesh, METH_O, "mesh(i) -> dict of read-only views."},
    {"bones", (PyCFunction)rig_bones, METH_NOARGS, "bones() -> dict of names and arrays."},
    {"weld", (PyCFunction)rig_weld, METH_NOARGS, "weld() -> dict (ssk_rig_weld)."},
    {"rest_positions", (PyCFunction)rig_rest_positions, METH_NOARGS,
     "rest_positions() -> (V, 3) float32."},
    {"normals", (PyCFunction)(void (*)(void))rig_normals, METH_VARARGS | METH_KEYWORDS,
     "normals(positions) -> (V, 3) float32: ssk_rig_normals."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ssk_py_rig_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.Rig",
    .tp_basicsize = sizeof(ssk_py_rig),
    .tp_dealloc = (destructor)rig_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Rig(positions, triangles, parents, bind_matrices, weight_indices, "
              "weight_values, heads=None, tails=None, bone_names=None, mesh_name=None, "
              "object_matrix=None): an ssk_rig of one mesh (see springskin.Rig).",
    .tp_weaklistoffset = offsetof(ssk_py_rig, weakrefs),
    .tp_methods = rig_methods,
    .tp_getset = rig_getset,
    .tp_new = rig_new,
};

/* ------------------------------------------------------------------------ */
/* Scene.                                                                     */
/* ------------------------------------------------------------------------ */

PyObject *ssk_py_import_scene(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"path", NULL};
    PyObject *path_obj, *path = NULL, *path_str = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:import_scene", kwlist, &path_obj))
        return NULL;
    path = ssk_py_path(path_obj, "path");
    if (!path) return NULL;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    ssk_status status;
    const char *cpath = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    status = ssk_scene_import(&scene, cpath, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise(&err, NULL, cpath);
        Py_DECREF(path);
        return NULL;
    }
    ssk_py_scene *self = (ssk_py_scene *)ssk_py_scene_type.tp_alloc(&ssk_py_scene_type, 0);
    path_str = PyUnicode_DecodeFSDefault(cpath);
    Py_DECREF(path);
    if (!self || !path_str) {
        Py_XDECREF(self);
        Py_XDECREF(path_str);
        ssk_scene_destroy(scene);
        return NULL;
    }
    self->scene = scene;
    self->path = path_str;
    return (PyObject *)self;
}

static void scene_dealloc(ssk_py_scene *self)
{
    ssk_scene_destroy(self->scene);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scene_rig(ssk_py_scene *self, void *c)
{
    (void)c;
    return rig_wrap((ssk_rig *)ssk_scene_rig(self->scene), (PyObject *)self);
}

static PyObject *scene_path(ssk_py_scene *self, void *c)
{
    (void)c;
    Py_INCREF(self->path);
    return self->path;
}

static PyObject *scene_animation_count(ssk_py_scene *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(ssk_scene_animation_count(self->scene));
}

static int animation_index(ssk_py_scene *self, PyObject *obj, uint32_t *out)
{
    Py_ssize_t index = PyNumber_AsSsize_t(obj, PyExc_OverflowError);
    if (index == -1 && PyErr_Occurred()) return -1;
    const uint32_t count = ssk_scene_animation_count(self->scene);
    if (index < 0 || index >= (Py_ssize_t)count) {
        PyErr_Format(PyExc_ValueError, "animation: index %zd out of range: the scene has %u "
                                       "animation(s)",
                     index, (unsigned)count);
        return -1;
    }
    *out = (uint32_t)index;
    return 0;
}

/* animation(i) -> dict(name, duration_seconds, ticks_per_second, channel_count) */
static PyObject *scene_animation(ssk_py_scene *self, PyObject *arg)
{
    uint32_t index;
    if (animation_index(self, arg, &index) != 0) return NULL;
    ssk_animation_info info;
    ssk_error err = {0};
    if (ssk_scene_animation(self->scene, index, &info, &err) != SSK_OK)
        return ssk_py_raise(&err, "animation: ", NULL);
    PyObject *name = PyUnicode_DecodeUTF8(info.name ? info.name : "",
                                          info.name ? (Py_ssize_t)strlen(info.name) : 0,
                                          "replace");
    if (!name) return NULL;
    return Py_BuildValue("{s:N,s:d,s:d,s:I}", "name", name, "duration_seconds",
                         info.duration_seconds, "ticks_per_second", info.ticks_per_second,
                         "channel_count", info.channel_count);
}

/* frame_count(animation, fps) -> int: ssk_animation_frame_count. */
static PyObject *scene_frame_count(ssk_py_scene *self, PyObject *args)
{
    PyObject *anim_obj;
    double fps;
    if (!PyArg_ParseTuple(args, "Od:frame_count", &anim_obj, &fps)) return NULL;
    uint32_t index;
    if (animation_index(self, anim_obj, &index) != 0) return NULL;
    ssk_animation_info info;
    ssk_error err = {0};
    if (ssk_scene_animation(self->scene, index, &info, &err) != SSK_OK)
        return ssk_py_raise(&err, "frame_count: ", NULL);
    return PyLong_FromUnsignedLong(ssk_animation_frame_count(&info, fps));
}

/* sample(animation, time_seconds) -> (skinning (B, 4, 4), objects (M, 4, 4)) */
static PyObject *scene_sample(ssk_py_scene *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"animation", "time", NULL};
    PyObject *anim_obj;
    double time;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od:sample", kwlist, &anim_obj, &time))
        return NULL;
    uint32_t index;
    if (animation_index(self, anim_obj, &index) != 0) return NULL;
    const ssk_rig *rig = ssk_scene_rig(self->scene);
    const npy_intp sdims[3] = {ssk_rig_bone_count(rig), 4, 4};
    const npy_intp odims[3] = {ssk_rig_mesh_count(rig), 4, 4};
    PyArrayObject *skin = (PyArrayObject *)PyArray_SimpleNew(3, sdims, NPY_FLOAT32);
    PyArrayObject *objects = (PyArrayObject *)PyArray_SimpleNew(3, odims, NPY_FLOAT32);
    if (!skin || !objects) goto fail;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_scene_sample(self->scene, index, time, PyArray_DATA(skin),
                              PyArray_DATA(objects), &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise(&err, "sample: ", NULL);
        goto fail;
    }
    return Py_BuildValue("(NN)", skin, objects);
fail:
    Py_XDECREF(skin);
    Py_XDECREF(objects);
    return NULL;
}

/* rig_matrix(animation, time) -> (4, 4) float32: ssk_scene_rig_matrix. */
static PyObject *scene_rig_matrix(ssk_py_scene *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"animation", "time", NULL};
    PyObject *anim_obj;
    double time;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od:rig_matrix", kwlist, &anim_obj, &time))
        return NULL;
    uint32_t index;
    if (animation_index(self, anim_obj, &index) != 0) return NULL;
    const npy_intp dims[2] = {4, 4};
    PyArrayObject *matrix = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!matrix) return NULL;
    ssk_error err = {0};
    if (ssk_scene_rig_matrix(self->scene, index, time, PyArray_DATA(matrix), &err) != SSK_OK) {
        Py_DECREF(matrix);
        return ssk_py_raise(&err, "rig_matrix: ", NULL);
    }
    return (PyObject *)matrix;
}

static PyGetSetDef scene_getset[] = {
    {"rig", (getter)scene_rig, NULL, "The scene's Rig (a new wrapper per access).", NULL},
    {"path", (getter)scene_path, NULL, "The imported file.", NULL},
    {"animation_count", (getter)scene_animation_count, NULL, "Animations in the file.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef scene_methods[] = {
    {"animation", (PyCFunction)scene_animation, METH_O,
     "animation(i) -> dict(name, duration_seconds, ticks_per_second, channel_count)."},
    {"frame_count", (PyCFunction)scene_frame_count, METH_VARARGS,
     "frame_count(animation, fps) -> int."},
    {"sample", (PyCFunction)(void (*)(void))scene_sample, METH_VARARGS | METH_KEYWORDS,
     "sample(animation, time) -> (skinning (B,4,4), object matrices (M,4,4))."},
    {"rig_matrix", (PyCFunction)(void (*)(void))scene_rig_matrix, METH_VARARGS | METH_KEYWORDS,
     "rig_matrix(animation, time) -> (4,4): rig space -> the file's world."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ssk_py_scene_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.Scene",
    .tp_basicsize = sizeof(ssk_py_scene),
    .tp_dealloc = (destructor)scene_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An imported file (ssk_scene); made by import_scene(path).",
    .tp_methods = scene_methods,
    .tp_getset = scene_getset,
};
