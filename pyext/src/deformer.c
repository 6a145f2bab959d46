/*
 * deformer.c — springskin._core.Deformer (ssk_deformer: a method or a
 * deformer graph on a backend, for a whole rig) and bake (ssk_scene_bake).
 *
 * Concurrency: the GIL is released around the C compute; a per-deformer
 * lock serializes the calls on one deformer (the core allows one deform at
 * a time per deformer). The lock is only ever waited for with the GIL
 * released, so a thread holding the GIL never blocks on it.
 *
 * Lifetime: the deformer keeps its Rig (and so the Scene owning it), its
 * Binding and GLContext alive, and the positions array of the last deform:
 * the CPU backend writes straight into that array and reads it again for
 * normals() and max_displacement().
 */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ssk_py_deformer.state */
enum { SSK_PY_NO_DEFORM = 0, SSK_PY_DEFORMED = 1, SSK_PY_DEFORM_FAILED = 2 };

/* ValueError unless the last deform succeeded. */
static int check_deformed(const ssk_py_deformer *self, const char *what)
{
    if (self->state == SSK_PY_DEFORMED) return 0;
    PyErr_Format(PyExc_ValueError,
                 self->state == SSK_PY_NO_DEFORM
                     ? "%s: no deform yet (call deform first)"
                     : "%s: the last deform failed (call deform again first)",
                 what);
    return -1;
}

/* Acquires the deformer's lock; waits with the GIL released. */
static void deformer_lock(ssk_py_deformer *self)
{
    if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) return;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
}

/* The arguments Deformer() and bake() share, parsed into their
 * descriptions: method and backend (ssk_py_parse_method/_backend), graph
 * (Graph), binding (Binding) and gl_context (GLContext). An absent (NULL)
 * or None argument leaves its output untouched. The pointers stored are
 * borrowed from the Python objects. Returns 0, or -1 with the exception set
 * (the parser's, or TypeError for an object of the wrong type). */
static int parse_run_options(PyObject *method_obj, PyObject *backend_obj, PyObject *graph_obj,
                             PyObject *binding_obj, PyObject *gl_obj, ssk_method *method,
                             ssk_backend *backend, const ssk_graph **graph,
                             const ssk_binding **binding, ssk_gl_context **gl_context)
{
    if (method_obj && method_obj != Py_None &&
        ssk_py_parse_method(method_obj, "method", method) != 0)
        return -1;
    if (backend_obj && backend_obj != Py_None &&
        ssk_py_parse_backend(backend_obj, "backend", backend) != 0)
        return -1;
    if (graph_obj != Py_None) {
        if (!PyObject_TypeCheck(graph_obj, &ssk_py_graph_type)) {
            PyErr_Format(PyExc_TypeError, "graph: expected a springskin._core.Graph, got %.100s",
                         Py_TYPE(graph_obj)->tp_name);
            return -1;
        }
        *graph = ((ssk_py_graph *)graph_obj)->graph;
    }
    if (binding_obj != Py_None) {
        if (!PyObject_TypeCheck(binding_obj, &ssk_py_binding_type)) {
            PyErr_Format(PyExc_TypeError,
                         "binding: expected a springskin._core.Binding, got %.100s",
                         Py_TYPE(binding_obj)->tp_name);
            return -1;
        }
        *binding = ((ssk_py_binding *)binding_obj)->binding;
    }
    if (gl_obj != Py_None) {
        if (!PyObject_TypeCheck(gl_obj, &ssk_py_gl_context_type)) {
            PyErr_Format(PyExc_TypeError,
                         "gl_context: expected a springskin._core.GLContext, got %.100s",
                         Py_TYPE(gl_obj)->tp_name);
            return -1;
        }
        *gl_context = ((ssk_py_gl_context *)gl_obj)->ctx;
    }
    return 0;
}

static PyObject *deformer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"rig",        "method", "backend",           "graph", "binding",
                             "gl_context", "cor",    "implicit_operators", NULL};
    PyObject *rig_obj, *method_obj = NULL, *backend_obj = NULL, *graph_obj = Py_None,
             *binding_obj = Py_None, *gl_obj = Py_None, *cor_obj = Py_None,
             *implicit_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOOOO:Deformer", kwlist, &rig_obj,
                                     &method_obj, &backend_obj, &graph_obj, &binding_obj,
                                     &gl_obj, &cor_obj, &implicit_obj))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_AUTO};
    if (parse_run_options(method_obj, backend_obj, graph_obj, binding_obj, gl_obj, &desc.method,
                          &desc.backend, &desc.graph, &desc.binding, &desc.gl_context) != 0)
        return NULL;
    if (cor_obj != Py_None) {
        uint32_t cor_vertices = 0;
        if (ssk_py_cor_state_arrays(cor_obj, "cor", &desc.cor_centers, &desc.cor_flags,
                                    &cor_vertices) != 0)
            return NULL;
        if (cor_vertices != ssk_rig_vertex_count(rig)) {
            PyErr_Format(PyExc_ValueError,
                         "cor: the centers of rotation are for %u vertices, the rig has %u",
                         cor_vertices, ssk_rig_vertex_count(rig));
            return NULL;
        }
    }
    if (implicit_obj != Py_None) {
        desc.implicit_operators =
            ssk_py_implicit_operators_get(implicit_obj, "implicit_operators");
        if (!desc.implicit_operators) return NULL;
    }
    ssk_py_deformer *self = (ssk_py_deformer *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_INCREF(rig_obj);
    self->rig = rig_obj;
    Py_INCREF(binding_obj);
    self->binding = binding_obj;
    Py_INCREF(gl_obj);
    self->gl_context = gl_obj;
    Py_INCREF(implicit_obj);
    self->implicit_operators = implicit_obj;
    self->vertex_count = ssk_rig_vertex_count(rig);
    self->bone_count = ssk_rig_bone_count(rig);
    self->mesh_count = ssk_rig_mesh_count(rig);
    ssk_error err = {0};
    ssk_status status;
    ssk_deformer *deformer = NULL;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_deformer_create(&deformer, rig, &desc, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        Py_DECREF(self);
        return ssk_py_raise(&err, "Deformer: ", NULL);
    }
    self->deformer = deformer;
    if (err.message[0]) {
        self->warning = PyUnicode_FromString(err.message);
        if (!self->warning) {
            Py_DECREF(self);
            return NULL;
        }
    } else {
        Py_INCREF(Py_None);
        self->warning = Py_None;
    }
    return (PyObject *)self;
}

static void deformer_dealloc(ssk_py_deformer *self)
{
    if (self->deformer) {
        ssk_deformer *deformer = self->deformer;
        /* GL: releases buffers on the context's thread, no GIL needed */
        Py_BEGIN_ALLOW_THREADS
        ssk_deformer_destroy(deformer);
        Py_END_ALLOW_THREADS
    }
    if (self->lock) PyThread_free_lock(self->lock);
    Py_XDECREF(self->last_positions);
    Py_XDECREF(self->warning);
    Py_XDECREF(self->gl_context);
    Py_XDECREF(self->implicit_operators);
    Py_XDECREF(self->binding);
    Py_XDECREF(self->rig);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *spring_report_dict(const ssk_spring_report *r)
{
    return Py_BuildValue("{s:I,s:d,s:d,s:O}", "iterations", r->iterations, "residual",
                         (double)r->residual, "energy", r->energy, "converged",
                         r->converged ? Py_True : Py_False);
}

/* Raises SpringDivergedError with attributes `positions` and `report`. */
static void raise_diverged(const ssk_error *err, PyObject *positions,
                           const ssk_spring_report *report)
{
    ssk_py_raise(err, "deform: ", NULL);
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyObject *report_obj = spring_report_dict(report);
    if (value && report_obj) {
        if (PyObject_SetAttrString(value, "positions", positions) != 0 ||
            PyObject_SetAttrString(value, "report", report_obj) != 0) {
            Py_XDECREF(report_obj);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
            return;
        }
    }
    Py_XDECREF(report_obj);
    PyErr_Restore(type, value, traceback);
}

/* deform(skinning_matrices, object_matrices=None, frame=None, out=None)
 * -> (V, 3) float32 */
static PyObject *deformer_deform(ssk_py_deformer *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"skinning_matrices", "object_matrices", "frame", "out", NULL};
    PyObject *skin_obj, *objects_obj = Py_None, *frame_obj = Py_None, *out_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:deform", kwlist, &skin_obj,
                                     &objects_obj, &frame_obj, &out_obj))
        return NULL;
    PyArrayObject *skin = NULL, *objects = NULL;
    PyObject *out = NULL;
    double frame = 0.0;
    if (frame_obj != Py_None) {
        frame = PyFloat_AsDouble(frame_obj);
        if (frame == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "frame: expected a number or None, got %.100s",
                         Py_TYPE(frame_obj)->tp_name);
            return NULL;
        }
        if (!isfinite(frame)) {
            PyErr_SetString(PyExc_ValueError, "frame: expected a finite number");
            return NULL;
        }
    }
    ssk_py_shape sshape = {3, {"B", "4", "4"}, {self->bone_count, 4, 4}};
    skin = ssk_py_float_array(skin_obj, "skinning_matrices", &sshape);
    if (!skin) goto fail;
    if (objects_obj != Py_None) {
        ssk_py_shape oshape = {3, {"M", "4", "4"}, {self->mesh_count, 4, 4}};
        objects = ssk_py_float_array(objects_obj, "object_matrices", &oshape);
        if (!objects) goto fail;
    }
    const npy_intp vdims[2] = {self->vertex_count, 3};
    if (out_obj != Py_None) {
        ssk_py_shape vshape = {2, {"V", "3"}, {self->vertex_count, 3}};
        if (ssk_py_check_out(out_obj, "out", &vshape) != 0) goto fail;
        Py_INCREF(out_obj);
        out = out_obj;
    } else {
        out = PyArray_SimpleNew(2, (npy_intp *)vdims, NPY_FLOAT32);
        if (!out) goto fail;
    }
    float *dst = PyArray_DATA((PyArrayObject *)out);
    const float *skin_data = PyArray_DATA(skin);
    const float *object_data = objects ? PyArray_DATA(objects) : NULL;
    ssk_error err = {0};
    ssk_status status;
    ssk_spring_report report;
    const int set_frame = frame_obj != Py_None;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    if (set_frame) ssk_deformer_set_frame(self->deformer, frame);
    status = ssk_deformer_deform(self->deformer, dst, skin_data, object_data, &err);
    ssk_deformer_spring_report(self->deformer, &report);
    Py_END_ALLOW_THREADS
    /* The CPU backend aliases `out` when its kernels run and reads it again
     * in normals and max_displacement: keep the array of a successful
     * deform alive; after a failure (which may come before or after the
     * aliasing) those two are refused until the next successful deform. */
    PyObject *released = NULL;
    if (status == SSK_OK || status == SSK_ERROR_SPRING_DIVERGED) {
        released = self->last_positions;
        Py_INCREF(out);
        self->last_positions = out;
        self->state = SSK_PY_DEFORMED;
    } else {
        self->state = SSK_PY_DEFORM_FAILED;
    }
    PyThread_release_lock(self->lock);
    Py_XDECREF(released);
    if (status == SSK_ERROR_SPRING_DIVERGED) {
        raise_diverged(&err, out, &report);
        goto fail;
    }
    if (status != SSK_OK) {
        ssk_py_raise(&err, "deform: ", NULL);
        goto fail;
    }
    Py_DECREF(skin);
    Py_XDECREF(objects);
    return out;
fail:
    Py_XDECREF(skin);
    Py_XDECREF(objects);
    Py_XDECREF(out);
    return NULL;
}

/* normals(out=None) -> (V, 3) float32 */
static PyObject *deformer_normals(ssk_py_deformer *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"out", NULL};
    PyObject *out_obj = Py_None, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:normals", kwlist, &out_obj)) return NULL;
    const npy_intp vdims[2] = {self->vertex_count, 3};
    if (out_obj != Py_None) {
        ssk_py_shape vshape = {2, {"V", "3"}, {self->vertex_count, 3}};
        if (ssk_py_check_out(out_obj, "out", &vshape) != 0) return NULL;
        Py_INCREF(out_obj);
        out = out_obj;
    } else {
        out = PyArray_SimpleNew(2, (npy_intp *)vdims, NPY_FLOAT32);
        if (!out) return NULL;
    }
    if (check_deformed(self, "normals") != 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (self->last_positions == out) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_ValueError,
                        "out: the positions array of the last deform cannot receive the "
                        "normals (the CPU backend computes them from it)");
        return NULL;
    }
    float *dst = PyArray_DATA((PyArrayObject *)out);
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    status = ssk_deformer_normals(self->deformer, dst, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        Py_DECREF(out);
        return ssk_py_raise(&err, "normals: ", NULL);
    }
    return out;
}

/* max_displacement(reference) -> float */
static PyObject *deformer_max_displacement(ssk_py_deformer *self, PyObject *args,
                                           PyObject *kwargs)
{
    static char *kwlist[] = {"reference", NULL};
    PyObject *ref_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:max_displacement", kwlist, &ref_obj))
        return NULL;
    if (check_deformed(self, "max_displacement") != 0) return NULL;
    ssk_py_shape shape = {2, {"V", "3"}, {self->vertex_count, 3}};
    PyArrayObject *reference = ssk_py_float_array(ref_obj, "reference", &shape);
    if (!reference) return NULL;
    const float *ref = PyArray_DATA(reference);
    float value = 0.0f;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    status = ssk_deformer_max_displacement(self->deformer, &value, ref, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(reference);
    if (status != SSK_OK) return ssk_py_raise(&err, "max_displacement: ", NULL);
    return PyFloat_FromDouble(value);
}

static PyObject *deformer_spring_report(ssk_py_deformer *self, PyObject *unused)
{
    (void)unused;
    ssk_spring_report report;
    deformer_lock(self);
    ssk_deformer_spring_report(self->deformer, &report);
    PyThread_release_lock(self->lock);
    return spring_report_dict(&report);
}

/* ssk_deformer_spring_unsettled: (V,) float32, a new array. */
static PyObject *deformer_spring_unsettled(ssk_py_deformer *self, PyObject *unused)
{
    (void)unused;
    const npy_intp dims[1] = {self->vertex_count};
    PyObject *out = PyArray_SimpleNew(1, (npy_intp *)dims, NPY_FLOAT32);
    if (!out) return NULL;
    float *dst = (float *)PyArray_DATA((PyArrayObject *)out);
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    status = ssk_deformer_spring_unsettled(self->deformer, dst, self->vertex_count, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        Py_DECREF(out);
        return ssk_py_raise(&err, "spring_unsettled: ", NULL);
    }
    return out;
}

static PyObject *deformer_timing(ssk_py_deformer *self, PyObject *unused)
{
    (void)unused;
    ssk_deform_timing timing;
    deformer_lock(self);
    ssk_deformer_timing(self->deformer, &timing);
    PyThread_release_lock(self->lock);
    return Py_BuildValue("{s:d,s:d,s:d}", "upload_seconds", timing.upload_seconds,
                         "compute_seconds", timing.compute_seconds, "readback_seconds",
                         timing.readback_seconds);
}

static PyObject *deformer_set_frame(ssk_py_deformer *self, PyObject *arg)
{
    double frame = PyFloat_AsDouble(arg);
    if (frame == -1.0 && PyErr_Occurred()) return NULL;
    if (!isfinite(frame)) {
        PyErr_SetString(PyExc_ValueError, "frame: expected a finite number");
        return NULL;
    }
    deformer_lock(self);
    ssk_deformer_set_frame(self->deformer, frame);
    PyThread_release_lock(self->lock);
    Py_RETURN_NONE;
}

static PyObject *deformer_backend(ssk_py_deformer *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(ssk_backend_name(ssk_deformer_backend(self->deformer)));
}

static PyObject *deformer_device_name(ssk_py_deformer *self, void *c)
{
    (void)c;
    const char *name = ssk_deformer_device_name(self->deformer);
    return PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");
}

static PyObject *deformer_warning(ssk_py_deformer *self, void *c)
{
    (void)c;
    Py_INCREF(self->warning);
    return self->warning;
}

static PyObject *deformer_rig(ssk_py_deformer *self, void *c)
{
    (void)c;
    Py_INCREF(self->rig);
    return self->rig;
}

static PyObject *deformer_vertex_count(ssk_py_deformer *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(self->vertex_count);
}

static PyMethodDef deformer_methods[] = {
    {"deform", (PyCFunction)(void (*)(void))deformer_deform, METH_VARARGS | METH_KEYWORDS,
     "deform(skinning_matrices, object_matrices=None, frame=None, out=None) -> (V, 3)."},
    {"normals", (PyCFunction)(void (*)(void))deformer_normals, METH_VARARGS | METH_KEYWORDS,
     "normals(out=None) -> (V, 3) float32."},
    {"max_displacement", (PyCFunction)(void (*)(void))deformer_max_displacement,
     METH_VARARGS | METH_KEYWORDS, "max_displacement(reference) -> float."},
    {"spring_report", (PyCFunction)deformer_spring_report, METH_NOARGS,
     "spring_report() -> dict."},
    {"spring_unsettled", (PyCFunction)deformer_spring_unsettled, METH_NOARGS,
     "spring_unsettled() -> (V,) float32."},
    {"timing", (PyCFunction)deformer_timing, METH_NOARGS, "timing() -> dict (seconds)."},
    {"set_frame", (PyCFunction)deformer_set_frame, METH_O, "set_frame(frame)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef deformer_getset[] = {
    {"backend", (getter)deformer_backend, NULL, "The backend used: 'cpu' or 'gl'.", NULL},
    {"device_name", (getter)deformer_device_name, NULL, "CPU description or GL renderer.",
     NULL},
    {"warning", (getter)deformer_warning, NULL, "AUTO's fallback warning, or None.", NULL},
    {"rig", (getter)deformer_rig, NULL, "The Rig.", NULL},
    {"vertex_count", (getter)deformer_vertex_count, NULL, "Rows #V of positions.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_deformer_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.Deformer",
    .tp_basicsize = sizeof(ssk_py_deformer),
    .tp_dealloc = (destructor)deformer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Deformer(rig, method='lbs', backend='auto', graph=None, binding=None, "
              "gl_context=None, cor=None, implicit_operators=None): an ssk_deformer (see "
              "springskin.Deformer).",
    .tp_methods = deformer_methods,
    .tp_getset = deformer_getset,
    .tp_new = deformer_new,
};

/* ------------------------------------------------------------------------ */
/* bake                                                                       */
/* ------------------------------------------------------------------------ */

PyObject *ssk_py_bake(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"scene",  "path",  "method",  "backend", "fps",        "animation",
                             "first",  "last",  "graph",   "binding", "gl_context", "normals",
                             "cage",   "cage_edit", "implicit_operators", "shard", "deformer",
                             NULL};
    PyObject *scene_obj, *path_obj, *method_obj = NULL, *backend_obj = NULL,
             *graph_obj = Py_None, *binding_obj = Py_None, *gl_obj = Py_None,
             *cage_obj = Py_None, *cage_edit_obj = Py_None, *implicit_obj = Py_None,
             *shard_obj = Py_None, *deformer_obj = Py_None;
    double fps = 24.0;
    unsigned int animation = 0;
    int first = 0, last = -1, normals = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OOdIiiOOOpOOOOO:bake", kwlist, &scene_obj,
                                     &path_obj, &method_obj, &backend_obj, &fps, &animation,
                                     &first, &last, &graph_obj, &binding_obj, &gl_obj, &normals,
                                     &cage_obj, &cage_edit_obj, &implicit_obj, &shard_obj,
                                     &deformer_obj))
        return NULL;
    if (deformer_obj != Py_None && !PyObject_TypeCheck(deformer_obj, &ssk_py_deformer_type)) {
        PyErr_Format(PyExc_TypeError, "deformer: expected a springskin._core.Deformer, got %.100s",
                     Py_TYPE(deformer_obj)->tp_name);
        return NULL;
    }
    if ((path_obj == Py_None) == (shard_obj == Py_None)) {
        PyErr_SetString(PyExc_ValueError, "bake: give one of path and shard (a directory)");
        return NULL;
    }
    if (!PyObject_TypeCheck(scene_obj, &ssk_py_scene_type)) {
        PyErr_Format(PyExc_TypeError, "scene: expected a springskin._core.Scene, got %.100s",
                     Py_TYPE(scene_obj)->tp_name);
        return NULL;
    }
    ssk_bake_desc desc = {0};
    desc.method = SSK_METHOD_LBS;
    desc.backend = SSK_BACKEND_AUTO;
    desc.fps = fps;
    desc.animation = animation;
    desc.first_frame = first;
    desc.last_frame = last;
    desc.with_normals = normals;
    if (parse_run_options(method_obj, backend_obj, graph_obj, binding_obj, gl_obj, &desc.method,
                          &desc.backend, &desc.graph, &desc.binding, &desc.gl_context) != 0)
        return NULL;
    if (implicit_obj != Py_None) {
        desc.implicit_operators = ssk_py_implicit_operators_get(implicit_obj, "implicit_operators");
        if (!desc.implicit_operators) return NULL;
    }
    const ssk_scene *scene = ((ssk_py_scene *)scene_obj)->scene;
    /* coupled cage (issue #21): both or neither, bound to this scene's rig */
    PyArrayObject *cage_edit = NULL;
    if ((cage_obj == Py_None) != (cage_edit_obj == Py_None)) {
        PyErr_SetString(PyExc_ValueError,
                        "cage, cage_edit: give both (a cage and its edited rest vertices) or "
                        "neither");
        return NULL;
    }
    if (cage_obj != Py_None) {
        const ssk_rig *cage_rig = NULL;
        desc.cage = ssk_py_cage_get(cage_obj, "cage", &cage_rig);
        if (!desc.cage) return NULL;
        if (cage_rig != ssk_scene_rig(scene)) {
            PyErr_SetString(PyExc_ValueError,
                            "cage: bound to another rig than the baked one (bind the cage "
                            "to this rig)");
            return NULL;
        }
        ssk_py_shape shape = {2, {"c", "3"}, {ssk_cage_vertex_count(desc.cage), 3}};
        cage_edit = ssk_py_float_array(cage_edit_obj, "cage_edit", &shape);
        if (!cage_edit) return NULL;
        desc.cage_edit = PyArray_DATA(cage_edit);
    }
    /* the output file, or the shard directory (issue #23) */
    const int sharded = shard_obj != Py_None;
    PyObject *path = ssk_py_path(sharded ? shard_obj : path_obj, sharded ? "shard" : "path");
    if (!path) {
        Py_XDECREF(cage_edit);
        return NULL;
    }
    if (sharded) desc.shard_directory = PyBytes_AS_STRING(path);
    else desc.output_path = PyBytes_AS_STRING(path);
    ssk_bake_stats stats;
    ssk_error err = {0};
    ssk_status status;
    /* a deformer given (issue #23): one call at a time on it; its last
     * deform is no longer the Python object's */
    ssk_py_deformer *given = deformer_obj != Py_None ? (ssk_py_deformer *)deformer_obj : NULL;
    if (given) {
        deformer_lock(given);
        desc.deformer = given->deformer;
    }
    if (desc.cage) ssk_py_cage_lock(cage_obj);
    Py_BEGIN_ALLOW_THREADS
    status = ssk_scene_bake(scene, &desc, &stats, &err);
    Py_END_ALLOW_THREADS
    if (desc.cage) ssk_py_cage_release(cage_obj);
    if (given) {
        given->state = SSK_PY_NO_DEFORM;
        PyThread_release_lock(given->lock);
    }
    Py_XDECREF(cage_edit);
    if (status != SSK_OK) {
        ssk_py_raise_output(&err, "bake: ", sharded ? NULL : desc.output_path);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    PyObject *warning = stats.warning[0] ? PyUnicode_FromString(stats.warning) : Py_None;
    if (!warning) return NULL;
    if (warning == Py_None) Py_INCREF(Py_None);
    /* [(frame, residual), ...]: the first SSK_BAKE_LISTED_FRAMES unconverged */
    const uint32_t listed = stats.spring_frames_unconverged < SSK_BAKE_LISTED_FRAMES
                                ? stats.spring_frames_unconverged
                                : SSK_BAKE_LISTED_FRAMES;
    PyObject *frames = PyList_New(listed);
    if (!frames) {
        Py_DECREF(warning);
        return NULL;
    }
    for (uint32_t k = 0; k < listed; ++k) {
        PyObject *pair = Py_BuildValue("(id)", (int)stats.spring_unconverged_frames[k],
                                       (double)stats.spring_unconverged_residuals[k]);
        if (!pair) {
            Py_DECREF(frames);
            Py_DECREF(warning);
            return NULL;
        }
        PyList_SET_ITEM(frames, k, pair);
    }
    return Py_BuildValue(
        "{s:I,s:I,s:d,s:d,s:s,s:s,s:N,s:K,s:I,s:d,s:I,s:N,s:O}", "frame_count", stats.frame_count,
        "vertex_count", stats.vertex_count, "wall_seconds", stats.wall_seconds,
        "deform_seconds", stats.deform_seconds, "backend", ssk_backend_name(stats.backend),
        "device", stats.device, "warning", warning, "spring_iterations",
        (unsigned long long)stats.spring_iterations, "spring_iterations_max",
        stats.spring_iterations_max, "spring_residual_max", (double)stats.spring_residual_max,
        "spring_frames_unconverged", stats.spring_frames_unconverged,
        "spring_unconverged_frames", frames, "shard_reused",
        stats.shard_reused ? Py_True : Py_False);
}

/* ------------------------------------------------------------------------ */
/* merge (issue #23)                                                          */
/* ------------------------------------------------------------------------ */

PyObject *ssk_py_merge(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"directory", "path", "first", "last", NULL};
    PyObject *dir_obj, *path_obj;
    int first = 0, last = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|ii:merge", kwlist, &dir_obj, &path_obj,
                                     &first, &last))
        return NULL;
    PyObject *dir = ssk_py_path(dir_obj, "directory");
    if (!dir) return NULL;
    PyObject *path = ssk_py_path(path_obj, "path");
    if (!path) {
        Py_DECREF(dir);
        return NULL;
    }
    ssk_merge_stats stats;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_shards_merge(PyBytes_AS_STRING(dir), PyBytes_AS_STRING(path), first, last,
                              &stats, &err);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (status != SSK_OK)
        ssk_py_raise_output(&err, "merge: ", PyBytes_AS_STRING(path));
    else
        result = Py_BuildValue("{s:I,s:I,s:I,s:K,s:d}", "shard_count", stats.shard_count,
                               "frame_count", stats.frame_count, "vertex_count",
                               stats.vertex_count, "bytes_read",
                               (unsigned long long)stats.bytes_read, "wall_seconds",
                               stats.wall_seconds);
    Py_DECREF(dir);
    Py_DECREF(path);
    return result;
}
