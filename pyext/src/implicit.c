/*
 * implicit.c — springskin._core.ImplicitOperators: the composition
 * operators of implicit skinning (ssk_implicit_operators; Vaillant 2015,
 * 4.5; issue #20), built once and shared by the deformers given them.
 *
 * Read-only once made, so one object serves any number of deformers on
 * any threads; each Deformer given it keeps it alive.
 */
#include "common.h"

#include <limits.h>

/* The core's bounds of a resolution other than 0 (core/bind/implicit_ops.c). */
#define SSK_PY_IMPLICIT_MIN_RESOLUTION 8L
#define SSK_PY_IMPLICIT_MAX_RESOLUTION 512L

typedef struct ssk_py_implicit_operators {
    PyObject_HEAD
    ssk_implicit_operators *ops;
    uint32_t resolution; /* per axis, resolved (0 given: the default) */
} ssk_py_implicit_operators;

static void implicit_operators_dealloc(ssk_py_implicit_operators *self)
{
    ssk_implicit_operators_destroy(self->ops);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ImplicitOperators(resolution=128) */
static PyObject *implicit_operators_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"resolution", NULL};
    PyObject *resolution_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:ImplicitOperators", kwlist,
                                     &resolution_obj))
        return NULL;
    long resolution = (long)SSK_IMPLICIT_OPERATOR_RESOLUTION;
    if (resolution_obj && resolution_obj != Py_None) {
        if (PyBool_Check(resolution_obj) || !PyLong_Check(resolution_obj)) {
            PyErr_Format(PyExc_TypeError, "resolution: expected an int, got %.100s",
                         Py_TYPE(resolution_obj)->tp_name);
            return NULL;
        }
        int overflow = 0;
        resolution = PyLong_AsLongAndOverflow(resolution_obj, &overflow);
        if (resolution == -1 && PyErr_Occurred()) return NULL;
        if (overflow) resolution = overflow > 0 ? LONG_MAX : LONG_MIN;
        if (resolution < SSK_PY_IMPLICIT_MIN_RESOLUTION ||
            resolution > SSK_PY_IMPLICIT_MAX_RESOLUTION) {
            PyErr_Format(PyExc_ValueError,
                         "resolution: expected an integer in [%ld, %ld], got %S",
                         SSK_PY_IMPLICIT_MIN_RESOLUTION, SSK_PY_IMPLICIT_MAX_RESOLUTION,
                         resolution_obj);
            return NULL;
        }
    }
    ssk_py_implicit_operators *self = (ssk_py_implicit_operators *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->resolution = (uint32_t)resolution;
    ssk_implicit_operators *ops = NULL;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_implicit_operators_create(&ops, self->resolution, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        Py_DECREF(self);
        return ssk_py_raise(&err, "ImplicitOperators: ", NULL);
    }
    self->ops = ops;
    return (PyObject *)self;
}

const ssk_implicit_operators *ssk_py_implicit_operators_get(PyObject *obj, const char *name)
{
    if (!PyObject_TypeCheck(obj, &ssk_py_implicit_operators_type)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a springskin._core.ImplicitOperators, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((ssk_py_implicit_operators *)obj)->ops;
}

static PyObject *implicit_operators_resolution(ssk_py_implicit_operators *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->resolution);
}

static PyGetSetDef implicit_operators_getset[] = {
    {"resolution", (getter)implicit_operators_resolution, NULL,
     "Grid points per axis of each operator.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_implicit_operators_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.ImplicitOperators",
    .tp_basicsize = sizeof(ssk_py_implicit_operators),
    .tp_dealloc = (destructor)implicit_operators_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ImplicitOperators(resolution=128): ssk_implicit_operators_create.",
    .tp_getset = implicit_operators_getset,
    .tp_new = implicit_operators_new,
};
