/*
 * stroke.c — springskin._core.Stroke (ssk_stroke, Toothman 2020 7.1) and
 * the sketch functions of issue #22: line-of-action posing (7.2), points
 * and regions of interest of strokes on the surface (7.4, 5.2) and the
 * parabolic bulge (5.1). Strokes are float64 (springskin.h); rig arrays
 * keep the core's float32.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    ssk_stroke *stroke;
} ssk_py_stroke;

static void stroke_dealloc(ssk_py_stroke *self)
{
    ssk_stroke_destroy(self->stroke);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Stroke(points (N, 2|3), times (N,) or None, epsilon (-1: auto),
 * scene_size) */
static PyObject *stroke_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"points", "times", "epsilon", "scene_size", NULL};
    PyObject *points_obj, *times_obj = Py_None;
    double epsilon = SSK_STROKE_EPSILON_AUTO, scene_size = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Odd:Stroke", kwlist, &points_obj,
                                     &times_obj, &epsilon, &scene_size))
        return NULL;
    ssk_py_stroke *self = NULL;
    PyArrayObject *points = NULL, *times = NULL;
    ssk_py_shape ps = {2, {"N", "D"}, {SSK_PY_ANY, SSK_PY_ANY}};
    if (!(points = ssk_py_double_array(points_obj, "points", &ps))) goto fail;
    if (ps.sizes[1] != 2 && ps.sizes[1] != 3) {
        PyErr_Format(PyExc_ValueError, "points: expected shape (N, 2) or (N, 3), got (%lld, %lld)",
                     (long long)ps.sizes[0], (long long)ps.sizes[1]);
        goto fail;
    }
    if (ps.sizes[0] < 2 || ps.sizes[0] > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "points: expected at least 2 points, got %lld",
                     (long long)ps.sizes[0]);
        goto fail;
    }
    if (times_obj != Py_None) {
        ssk_py_shape ts = {1, {"N"}, {ps.sizes[0]}};
        if (!(times = ssk_py_double_array(times_obj, "times", &ts))) goto fail;
    }
    ssk_stroke_desc d = {(uint32_t)ps.sizes[0], (uint32_t)ps.sizes[1], PyArray_DATA(points),
                         times ? PyArray_DATA(times) : NULL, epsilon, scene_size};
    if (!(self = (ssk_py_stroke *)type->tp_alloc(type, 0))) goto fail;
    ssk_error err = {0};
    if (ssk_stroke_create(&self->stroke, &d, &err) != SSK_OK) {
        ssk_py_raise(&err, "Stroke: ", NULL);
        goto fail;
    }
    Py_DECREF(points);
    Py_XDECREF(times);
    return (PyObject *)self;
fail:
    Py_XDECREF(self);
    Py_XDECREF(points);
    Py_XDECREF(times);
    return NULL;
}

static const ssk_stroke *stroke_get(PyObject *obj, const char *name)
{
    if (!PyObject_TypeCheck(obj, &ssk_py_stroke_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a springskin Stroke, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((ssk_py_stroke *)obj)->stroke;
}

static PyObject *stroke_knots(ssk_py_stroke *self, void *closure)
{
    npy_intp dims[2] = {ssk_stroke_knot_count(self->stroke), 3};
    return ssk_py_copy(NPY_FLOAT64, 2, dims, ssk_stroke_knots(self->stroke));
}

static PyObject *stroke_epsilon(ssk_py_stroke *self, void *closure)
{
    return PyFloat_FromDouble(ssk_stroke_epsilon(self->stroke));
}

static PyObject *stroke_length(ssk_py_stroke *self, void *closure)
{
    return PyFloat_FromDouble(ssk_stroke_length(self->stroke));
}

static PyObject *stroke_straight(ssk_py_stroke *self, void *closure)
{
    return PyBool_FromLong(ssk_stroke_is_straight(self->stroke));
}

enum { QUERY_POSITION, QUERY_TIME, QUERY_FRAME };

/* A query over a 1-D array of t: (T, 3), (T,) or (T, 3, 3) float64. */
static PyObject *stroke_query(ssk_py_stroke *self, PyObject *t_obj, int what)
{
    ssk_py_shape ts = {1, {"T"}, {SSK_PY_ANY}};
    PyArrayObject *t = ssk_py_double_array(t_obj, "t", &ts);
    if (!t) return NULL;
    const npy_intp n = ts.sizes[0];
    npy_intp dims[3] = {n, 3, 3};
    const int ndim = what == QUERY_TIME ? 1 : (what == QUERY_POSITION ? 2 : 3);
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(ndim, dims, NPY_FLOAT64);
    if (!out) {
        Py_DECREF(t);
        return NULL;
    }
    const double *tv = PyArray_DATA(t);
    double *o = PyArray_DATA(out);
    for (npy_intp i = 0; i < n; ++i) {
        if (what == QUERY_POSITION) ssk_stroke_position(self->stroke, tv[i], o + 3 * i);
        else if (what == QUERY_TIME) o[i] = ssk_stroke_time(self->stroke, tv[i]);
        else ssk_stroke_frame(self->stroke, tv[i], o + 9 * i);
    }
    Py_DECREF(t);
    return (PyObject *)out;
}

static PyObject *stroke_position(ssk_py_stroke *self, PyObject *t)
{
    return stroke_query(self, t, QUERY_POSITION);
}
static PyObject *stroke_time(ssk_py_stroke *self, PyObject *t)
{
    return stroke_query(self, t, QUERY_TIME);
}
static PyObject *stroke_frame(ssk_py_stroke *self, PyObject *t)
{
    return stroke_query(self, t, QUERY_FRAME);
}

/* closest(points (P, 3)) -> (t (P,), distance (P,)) */
static PyObject *stroke_closest(ssk_py_stroke *self, PyObject *points_obj)
{
    ssk_py_shape ps = {2, {"P", "3"}, {SSK_PY_ANY, 3}};
    PyArrayObject *p = ssk_py_double_array(points_obj, "point", &ps), *t = NULL, *d = NULL;
    if (!p) return NULL;
    npy_intp dims[1] = {ps.sizes[0]};
    t = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_FLOAT64);
    d = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_FLOAT64);
    if (!t || !d) goto fail;
    const double *pv = PyArray_DATA(p);
    double *tv = PyArray_DATA(t), *dv = PyArray_DATA(d);
    for (npy_intp i = 0; i < dims[0]; ++i)
        tv[i] = ssk_stroke_closest(self->stroke, pv + 3 * i, dv + i);
    Py_DECREF(p);
    return Py_BuildValue("(NN)", t, d);
fail:
    Py_XDECREF(t);
    Py_XDECREF(d);
    Py_DECREF(p);
    return NULL;
}

static PyGetSetDef stroke_getset[] = {
    {"knots", (getter)stroke_knots, NULL, "(K, 3) float64: the kept points (a copy).", NULL},
    {"epsilon", (getter)stroke_epsilon, NULL, "RDP tolerance used.", NULL},
    {"length", (getter)stroke_length, NULL, "Arc length.", NULL},
    {"is_straight", (getter)stroke_straight, NULL, "No curved sample (frame rule).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef stroke_methods[] = {
    {"position", (PyCFunction)stroke_position, METH_O, "position(t (T,)) -> (T, 3)"},
    {"time", (PyCFunction)stroke_time, METH_O, "time(t (T,)) -> (T,)"},
    {"frame", (PyCFunction)stroke_frame, METH_O, "frame(t (T,)) -> (T, 3, 3) rows T, N, B"},
    {"closest", (PyCFunction)stroke_closest, METH_O, "closest(points (P, 3)) -> (t, distance)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ssk_py_stroke_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "springskin._core.Stroke",
    .tp_basicsize = sizeof(ssk_py_stroke),
    .tp_dealloc = (destructor)stroke_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Stroke(points, times=None, epsilon=-1, scene_size=0): ssk_stroke.",
    .tp_methods = stroke_methods,
    .tp_getset = stroke_getset,
    .tp_new = stroke_new,
};

/* pose_joints(joints (J, 3), baseline, offset, radius) -> (posed (J, 3)
 * float64, selected (J,) bool) */
PyObject *ssk_py_pose_joints(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"joints", "baseline", "offset", "radius", NULL};
    PyObject *joints_obj, *b_obj, *o_obj;
    double radius;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOd:pose_joints", kwlist, &joints_obj, &b_obj,
                                     &o_obj, &radius))
        return NULL;
    const ssk_stroke *b = stroke_get(b_obj, "baseline"), *o = b ? stroke_get(o_obj, "offset") : NULL;
    if (!o) return NULL;
    ssk_py_shape js = {2, {"J", "3"}, {SSK_PY_ANY, 3}};
    PyArrayObject *joints = ssk_py_double_array(joints_obj, "joints", &js), *out = NULL,
                  *sel = NULL;
    if (!joints) return NULL;
    npy_intp dims[2] = {js.sizes[0], 3};
    out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT64);
    sel = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_BOOL);
    if (!out || !sel) goto fail;
    ssk_error err = {0};
    if (ssk_pose_joints(PyArray_DATA(out), PyArray_DATA(sel), PyArray_DATA(joints),
                        (uint32_t)js.sizes[0], b, o, radius, &err) != SSK_OK) {
        ssk_py_raise(&err, "pose_joints: ", NULL);
        goto fail;
    }
    Py_DECREF(joints);
    return Py_BuildValue("(NN)", out, sel);
fail:
    Py_XDECREF(out);
    Py_XDECREF(sel);
    Py_DECREF(joints);
    return NULL;
}

/* pose_from_strokes(rig, skinning (B, 4, 4), baseline, offset, radius) ->
 * (skinning (B, 4, 4) float32, selected (B,) uint8) */
PyObject *ssk_py_pose_from_strokes(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig", "skinning", "baseline", "offset", "radius", NULL};
    PyObject *rig_obj, *skin_obj, *b_obj, *o_obj;
    double radius;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOd:pose_from_strokes", kwlist, &rig_obj,
                                     &skin_obj, &b_obj, &o_obj, &radius))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    const ssk_stroke *b = stroke_get(b_obj, "baseline"), *o = b ? stroke_get(o_obj, "offset") : NULL;
    if (!o) return NULL;
    const npy_intp nb = ssk_rig_bone_count(rig);
    ssk_py_shape ss = {3, {"B", "4", "4"}, {nb, 4, 4}};
    PyArrayObject *skin = ssk_py_float_array(skin_obj, "frame", &ss), *out = NULL, *sel = NULL;
    if (!skin) return NULL;
    npy_intp dims[3] = {nb, 4, 4};
    out = (PyArrayObject *)PyArray_SimpleNew(3, dims, NPY_FLOAT32);
    sel = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_UINT8);
    if (!out || !sel) goto fail;
    ssk_error err = {0};
    if (ssk_pose_from_strokes(PyArray_DATA(out), PyArray_DATA(sel), rig, PyArray_DATA(skin), b, o,
                              radius, &err) != SSK_OK) {
        ssk_py_raise(&err, "pose_from_strokes: ", NULL);
        goto fail;
    }
    Py_DECREF(skin);
    return Py_BuildValue("(NN)", out, sel);
fail:
    Py_XDECREF(out);
    Py_XDECREF(sel);
    Py_DECREF(skin);
    return NULL;
}

/* Whole-rig triangle rows (N,) as uint32 (ranges checked by the core). */
static PyArrayObject *triangle_rows(PyObject *obj, ssk_py_shape *shape)
{
    PyArrayObject *rows = ssk_py_index_array(obj, "triangles", shape), *out = NULL;
    if (!rows) return NULL;
    const int64_t *r = PyArray_DATA(rows);
    for (npy_intp i = 0; i < shape->sizes[0]; ++i)
        if (r[i] < 0 || r[i] > UINT32_MAX) {
            PyErr_Format(PyExc_ValueError, "triangles: entry %lld: %lld is no triangle row",
                         (long long)i, (long long)r[i]);
            Py_DECREF(rows);
            return NULL;
        }
    out = (PyArrayObject *)PyArray_SimpleNew(1, shape->sizes, NPY_UINT32);
    if (out) {
        uint32_t *o = PyArray_DATA(out);
        for (npy_intp i = 0; i < shape->sizes[0]; ++i) o[i] = (uint32_t)r[i];
    }
    Py_DECREF(rows);
    return out;
}

/* surface_points(rig, triangles (N,), barycentric (N, 3), positions (V, 3)
 * or None) -> (N, 3) float64 */
PyObject *ssk_py_surface_points(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig", "triangles", "barycentric", "positions", NULL};
    PyObject *rig_obj, *tri_obj, *bary_obj, *pos_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O:surface_points", kwlist, &rig_obj,
                                     &tri_obj, &bary_obj, &pos_obj))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_py_shape ts = {1, {"N"}, {SSK_PY_ANY}};
    PyArrayObject *tri = triangle_rows(tri_obj, &ts), *bary = NULL, *pos = NULL, *out = NULL;
    if (!tri) return NULL;
    ssk_py_shape bs = {2, {"N", "3"}, {ts.sizes[0], 3}};
    if (!(bary = ssk_py_double_array(bary_obj, "barycentric", &bs))) goto fail;
    if (pos_obj != Py_None) {
        ssk_py_shape vs = {2, {"V", "3"}, {ssk_rig_vertex_count(rig), 3}};
        if (!(pos = ssk_py_float_array(pos_obj, "positions", &vs))) goto fail;
    }
    npy_intp dims[2] = {ts.sizes[0], 3};
    if (!(out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT64))) goto fail;
    ssk_error err = {0};
    if (ssk_rig_surface_points(PyArray_DATA(out), rig, PyArray_DATA(tri), PyArray_DATA(bary),
                               (uint32_t)ts.sizes[0], pos ? PyArray_DATA(pos) : NULL,
                               &err) != SSK_OK) {
        ssk_py_raise(&err, "surface_points: ", NULL);
        goto fail;
    }
    Py_DECREF(tri);
    Py_DECREF(bary);
    Py_XDECREF(pos);
    return (PyObject *)out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(pos);
    Py_XDECREF(bary);
    Py_DECREF(tri);
    return NULL;
}

/* surface_roi(rig, triangles (N,), grow) -> (roles (V,) uint8, kinematic
 * (K,) int64) */
PyObject *ssk_py_surface_roi(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig", "triangles", "grow", NULL};
    PyObject *rig_obj, *tri_obj;
    unsigned int grow;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOI:surface_roi", kwlist, &rig_obj, &tri_obj,
                                     &grow))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_py_shape ts = {1, {"N"}, {SSK_PY_ANY}};
    PyArrayObject *tri = triangle_rows(tri_obj, &ts), *roles = NULL, *kin = NULL;
    if (!tri) return NULL;
    const npy_intp nv = ssk_rig_vertex_count(rig);
    uint32_t *rows = malloc(((size_t)nv + 1) * sizeof *rows), count = 0;
    npy_intp vdims[1] = {nv};
    roles = (PyArrayObject *)PyArray_SimpleNew(1, vdims, NPY_UINT8);
    if (!rows || !roles) {
        if (!rows) PyErr_NoMemory();
        goto fail;
    }
    ssk_error err = {0};
    ssk_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ssk_rig_surface_roi(PyArray_DATA(roles), rows, &count, rig, PyArray_DATA(tri),
                             (uint32_t)ts.sizes[0], grow, &err);
    Py_END_ALLOW_THREADS
    if (st != SSK_OK) {
        ssk_py_raise(&err, "surface_roi: ", NULL);
        goto fail;
    }
    npy_intp kdims[1] = {count};
    if (!(kin = (PyArrayObject *)PyArray_SimpleNew(1, kdims, NPY_INT64))) goto fail;
    int64_t *k = PyArray_DATA(kin);
    for (uint32_t i = 0; i < count; ++i) k[i] = rows[i];
    free(rows);
    Py_DECREF(tri);
    return Py_BuildValue("(NN)", roles, kin);
fail:
    free(rows);
    Py_XDECREF(roles);
    Py_DECREF(tri);
    return NULL;
}

/* bulge_offsets(rig, binding, stroke, kinematic (K,), amount) -> (K, 3)
 * float32 */
PyObject *ssk_py_bulge_offsets(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig", "binding", "stroke", "kinematic", "amount", NULL};
    PyObject *rig_obj, *binding_obj, *stroke_obj, *kin_obj;
    double amount;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOd:bulge_offsets", kwlist, &rig_obj,
                                     &binding_obj, &stroke_obj, &kin_obj, &amount))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    if (!PyObject_TypeCheck(binding_obj, &ssk_py_binding_type)) {
        PyErr_Format(PyExc_TypeError, "binding: expected a springskin Binding, got %.100s",
                     Py_TYPE(binding_obj)->tp_name);
        return NULL;
    }
    const ssk_stroke *stroke = stroke_get(stroke_obj, "stroke");
    if (!stroke) return NULL;
    ssk_py_shape ks = {1, {"K"}, {SSK_PY_ANY}};
    PyArrayObject *kin = ssk_py_index_array(kin_obj, "kinematic", &ks), *rows = NULL, *out = NULL;
    if (!kin) return NULL;
    const int64_t *k = PyArray_DATA(kin);
    for (npy_intp i = 0; i < ks.sizes[0]; ++i)
        if (k[i] < 0 || k[i] >= ssk_rig_vertex_count(rig)) {
            PyErr_Format(PyExc_ValueError,
                         "kinematic: entry %lld: %lld is out of range (the rig has %u vertices)",
                         (long long)i, (long long)k[i], ssk_rig_vertex_count(rig));
            goto fail;
        }
    if (!(rows = (PyArrayObject *)PyArray_SimpleNew(1, ks.sizes, NPY_UINT32))) goto fail;
    for (npy_intp i = 0; i < ks.sizes[0]; ++i) ((uint32_t *)PyArray_DATA(rows))[i] = (uint32_t)k[i];
    npy_intp dims[2] = {ks.sizes[0], 3};
    if (!(out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT32))) goto fail;
    ssk_error err = {0};
    if (ssk_stroke_bulge_offsets(PyArray_DATA(out), rig, ((ssk_py_binding *)binding_obj)->binding,
                                 stroke, PyArray_DATA(rows), (uint32_t)ks.sizes[0], amount,
                                 &err) != SSK_OK) {
        ssk_py_raise(&err, "bulge_offsets: ", NULL);
        goto fail;
    }
    Py_DECREF(kin);
    Py_DECREF(rows);
    return (PyObject *)out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(rows);
    Py_DECREF(kin);
    return NULL;
}
