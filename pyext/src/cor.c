/*
 * cor.c — springskin._core.CorState: a CoR precomputation kept for
 * incremental updates (ssk_cor_state, issue #18).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

typedef struct ssk_py_cor_state {
    PyObject_HEAD
    ssk_cor_state *state;
    PyArrayObject *centers; /* (V, 3) float32, owned: the state writes it */
    PyArrayObject *flags;   /* (V,) uint8 */
} ssk_py_cor_state;

static void cor_state_dealloc(ssk_py_cor_state *self)
{
    ssk_cor_state_destroy(self->state);
    Py_XDECREF(self->centers);
    Py_XDECREF(self->flags);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *stats_dict(const ssk_cor_stats *s)
{
    return Py_BuildValue("{s:I,s:I,s:I,s:K,s:d}", "vertex_count", s->vertex_count, "cor_count",
                         s->cor_count, "cells", s->cluster_count, "integration_triangles",
                         (unsigned long long)s->integration_triangles, "seconds", s->seconds);
}

/* CorState(rig, sigma=0.1, epsilon=0.1, progress=None) */
static PyObject *cor_state_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig", "sigma", "epsilon", "progress", NULL};
    PyObject *rig_obj, *progress_obj = Py_None;
    ssk_cor_params params;
    ssk_cor_params_default(&params);
    double sigma = params.sigma, epsilon = params.epsilon;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ddO:CorState", kwlist, &rig_obj, &sigma,
                                     &epsilon, &progress_obj))
        return NULL;
    if (ssk_py_progress_check(progress_obj) != 0) return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    params.sigma = (float)sigma;
    params.epsilon = (float)epsilon;
    ssk_py_progress progress = {progress_obj, 0};
    if (progress_obj != Py_None) {
        params.progress = ssk_py_progress_call;
        params.progress_user = &progress;
    }
    const uint32_t nv = ssk_rig_vertex_count(rig);
    npy_intp cdims[2] = {nv, 3}, fdims[1] = {nv};
    ssk_py_cor_state *self = (ssk_py_cor_state *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->centers = (PyArrayObject *)PyArray_ZEROS(2, cdims, NPY_FLOAT32, 0);
    self->flags = (PyArrayObject *)PyArray_ZEROS(1, fdims, NPY_UINT8, 0);
    if (!self->centers || !self->flags) {
        Py_DECREF(self);
        return NULL;
    }
    float *centers = PyArray_DATA(self->centers);
    uint8_t *flags = PyArray_DATA(self->flags);
    ssk_error err = {0};
    ssk_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ssk_cor_state_create(&self->state, centers, flags, rig, &params, NULL, &err);
    Py_END_ALLOW_THREADS
    if (st != SSK_OK) {
        Py_DECREF(self);
        return ssk_py_raise(&err, "CorState: ", NULL);
    }
    return (PyObject *)self;
}

int ssk_py_cor_state_arrays(PyObject *obj, const char *name, const float **centers,
                            const uint8_t **flags, uint32_t *vertex_count)
{
    if (!PyObject_TypeCheck(obj, &ssk_py_cor_state_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a springskin._core.CorState, got %.100s",
                     name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    ssk_py_cor_state *self = (ssk_py_cor_state *)obj;
    *centers = PyArray_DATA(self->centers);
    *flags = PyArray_DATA(self->flags);
    *vertex_count = (uint32_t)PyArray_DIM(self->flags, 0);
    return 0;
}

/* update(rig, rows) -> stats dict */
static PyObject *cor_state_update(ssk_py_cor_state *self, PyObject *args)
{
    PyObject *rig_obj, *rows_obj;
    if (!PyArg_ParseTuple(args, "OO:update", &rig_obj, &rows_obj)) return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    PyArrayObject *rows = (PyArrayObject *)PyArray_FROM_OTF(rows_obj, NPY_UINT32,
                                                            NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (!rows) return NULL;
    if (PyArray_NDIM(rows) != 1) {
        PyErr_Format(PyExc_ValueError, "rows: expected a 1-D array of row indices, got %d-D",
                     PyArray_NDIM(rows));
        Py_DECREF(rows);
        return NULL;
    }
    const uint32_t count = (uint32_t)PyArray_DIM(rows, 0);
    const uint32_t *r = PyArray_DATA(rows);
    float *centers = PyArray_DATA(self->centers);
    uint8_t *flags = PyArray_DATA(self->flags);
    ssk_cor_stats stats;
    ssk_error err = {0};
    ssk_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ssk_cor_state_update(self->state, centers, flags, rig, r, count, &stats, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(rows);
    if (st != SSK_OK) return ssk_py_raise(&err, "update: ", NULL);
    return stats_dict(&stats);
}

static PyObject *cor_state_centers(ssk_py_cor_state *self, void *closure)
{
    (void)closure;
    return PyArray_NewCopy(self->centers, NPY_CORDER);
}

static PyObject *cor_state_flags(ssk_py_cor_state *self, void *closure)
{
    (void)closure;
    PyObject *copy = PyArray_NewCopy(self->flags, NPY_CORDER);
    if (!copy) return NULL;
    PyObject *out = PyArray_Cast((PyArrayObject *)copy, NPY_BOOL);
    Py_DECREF(copy);
    return out;
}

static PyMethodDef cor_state_methods[] = {
    {"update", (PyCFunction)cor_state_update, METH_VARARGS,
     "update(rig, rows) -> dict: ssk_cor_state_update."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cor_state_getset[] = {
    {"centers", (getter)cor_state_centers, NULL, "(V, 3) float32 copy, rig space", NULL},
    {"flags", (getter)cor_state_flags, NULL, "(V,) bool copy: the vertex has a CoR", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_cor_state_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.CorState",
    .tp_basicsize = sizeof(ssk_py_cor_state),
    .tp_dealloc = (destructor)cor_state_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CorState(rig, sigma=0.1, epsilon=0.1): ssk_cor_state_create.",
    .tp_methods = cor_state_methods,
    .tp_getset = cor_state_getset,
    .tp_new = cor_state_new,
};
