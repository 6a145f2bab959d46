/*
 * binding.c — springskin._core.Binding (attachment binding, Toothman 2020
 * ch. 3), springskin._core.Graph (deformer graph, Toothman 2020 6.1) and
 * springskin._core.GLContext (the headless GL device).
 */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Binding.                                                                   */
/* ------------------------------------------------------------------------ */

static PyObject *binding_wrap(ssk_binding *binding)
{
    ssk_py_binding *self =
        (ssk_py_binding *)ssk_py_binding_type.tp_alloc(&ssk_py_binding_type, 0);
    if (!self) {
        ssk_binding_destroy(binding);
        return NULL;
    }
    self->binding = binding;
    return (PyObject *)self;
}

/* bind(rig, method='auto', smooth_iterations=6, max_distance=0.0, cache=None,
 * cor=False, progress=None, implicit=False) -> (Binding, reused); cor: also
 * precompute the centers of rotation of CoR skinning
 * (ssk_bind_params.compute_cor, default ssk_cor_params) and store them in
 * the binding; implicit: also fit implicit skinning's fields
 * (ssk_bind_params.compute_implicit) and store them. */

PyObject *ssk_py_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"rig",      "method",   "smooth_iterations", "max_distance",
                             "cache",    "cor",      "progress",          "implicit",
                             NULL};
    PyObject *rig_obj, *method_obj = NULL, *smooth_obj = NULL, *cache_obj = Py_None;
    PyObject *cache = NULL, *binding_obj = NULL, *progress_obj = Py_None;
    double max_distance = 0.0;
    int cor = 0, implicit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOdOpOp:bind", kwlist, &rig_obj,
                                     &method_obj, &smooth_obj, &max_distance, &cache_obj, &cor,
                                     &progress_obj, &implicit))
        return NULL;
    if (ssk_py_progress_check(progress_obj) != 0) return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_error err = {0};
    if (method_obj) {
        if (!PyUnicode_Check(method_obj)) {
            PyErr_Format(PyExc_TypeError, "method: expected a string, got %.100s",
                         Py_TYPE(method_obj)->tp_name);
            return NULL;
        }
        const char *text = PyUnicode_AsUTF8(method_obj);
        if (!text) return NULL;
        if (ssk_bind_method_parse(&params.method, text, &err) != SSK_OK)
            return ssk_py_raise(&err, "method: ", NULL);
    }
    if (smooth_obj) {
        if (!PyLong_Check(smooth_obj) || PyBool_Check(smooth_obj)) {
            PyErr_Format(PyExc_TypeError, "smooth_iterations: expected an int, got %.100s",
                         Py_TYPE(smooth_obj)->tp_name);
            return NULL;
        }
        long long n = PyLong_AsLongLong(smooth_obj);
        if (n == -1 && PyErr_Occurred()) return NULL;
        if (n < 0 || n > (long long)UINT32_MAX) {
            PyErr_Format(PyExc_ValueError,
                         "smooth_iterations: expected a non-negative integer, got %lld", n);
            return NULL;
        }
        params.smooth_iterations = (uint32_t)n;
    }
    if (!isfinite(max_distance) || max_distance < 0.0) {
        char value[32];
        snprintf(value, sizeof value, "%g", max_distance);
        PyErr_Format(PyExc_ValueError,
                     "max_distance: expected a finite number >= 0 (0: no limit), got %s", value);
        return NULL;
    }
    params.max_distance = (float)max_distance;
    params.compute_cor = cor;
    params.compute_implicit = implicit;
    ssk_py_progress progress = {progress_obj, 0};
    if (cor && progress_obj != Py_None) {
        params.cor.progress = ssk_py_progress_call;
        params.cor.progress_user = &progress;
    }
    if (cache_obj != Py_None) {
        cache = ssk_py_path(cache_obj, "cache");
        if (!cache) return NULL;
    }
    ssk_binding *binding = NULL;
    int reused = 0;
    ssk_status status;
    const char *cache_path = cache ? PyBytes_AS_STRING(cache) : NULL;
    Py_BEGIN_ALLOW_THREADS
    status = cache_path ? ssk_binding_cached(&binding, rig, &params, cache_path, &reused, &err)
                        : ssk_binding_create(&binding, rig, &params, &err);
    Py_END_ALLOW_THREADS
    Py_XDECREF(cache);
    if (status != SSK_OK) return ssk_py_raise(&err, "bind: ", NULL);
    binding_obj = binding_wrap(binding);
    if (!binding_obj) return NULL;
    return Py_BuildValue("(NO)", binding_obj, reused ? Py_True : Py_False);
}

/* load_binding(path, rig=None) -> Binding */
PyObject *ssk_py_load_binding(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"path", "rig", NULL};
    PyObject *path_obj, *rig_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:load_binding", kwlist, &path_obj,
                                     &rig_obj))
        return NULL;
    const ssk_rig *rig = NULL;
    if (rig_obj != Py_None && !(rig = ssk_py_rig_get(rig_obj, "rig"))) return NULL;
    PyObject *path = ssk_py_path(path_obj, "path");
    if (!path) return NULL;
    const char *cpath = PyBytes_AS_STRING(path);
    ssk_binding *binding = NULL;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_binding_load(&binding, cpath, rig, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise(&err, NULL, cpath);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    return binding_wrap(binding);
}

static void binding_dealloc(ssk_py_binding *self)
{
    ssk_binding_destroy(self->binding);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int binding_view(ssk_py_binding *self, ssk_binding_view *view)
{
    ssk_error err = {0};
    if (ssk_binding_get(self->binding, view, &err) != SSK_OK) {
        ssk_py_raise(&err, "binding: ", NULL);
        return -1;
    }
    return 0;
}

/* A dict of the binding's scalars and read-only views of its arrays. */
static PyObject *binding_info(ssk_py_binding *self, PyObject *unused)
{
    (void)unused;
    ssk_binding_view v;
    if (binding_view(self, &v) != 0) return NULL;
    PyObject *me = (PyObject *)self;
    const npy_intp d1[1] = {v.vertex_count}, d3[2] = {v.vertex_count, 3};
    return Py_BuildValue(
        "{s:I,s:I,s:N,s:N,s:N,s:K,s:s,s:I,s:d,s:d,s:O,s:d,s:O,s:I,s:d,s:O}", "vertex_count",
        v.vertex_count,
        "bone_count", v.bone_count, "bones", ssk_py_view(me, NPY_INT32, 1, d1, v.bones), "t",
        ssk_py_view(me, NPY_FLOAT32, 1, d1, v.t), "scale_vectors",
        ssk_py_view(me, NPY_FLOAT32, 2, d3, v.scale_vectors), "rig_hash",
        (unsigned long long)v.rig_hash, "method", ssk_bind_method_name(v.params.method),
        "smooth_iterations", v.params.smooth_iterations, "max_distance",
        (double)v.params.max_distance, "seconds", v.seconds, "has_cor",
        v.cor_centers ? Py_True : Py_False, "cor_seconds", v.cor_seconds, "has_implicit",
        v.has_implicit ? Py_True : Py_False, "implicit_field_count", v.implicit_field_count,
        "implicit_seconds", v.implicit_seconds, "implicit_current",
        v.implicit_current ? Py_True : Py_False);
}

static PyObject *binding_save(ssk_py_binding *self, PyObject *path_obj)
{
    PyObject *path = ssk_py_path(path_obj, "path");
    if (!path) return NULL;
    const char *cpath = PyBytes_AS_STRING(path);
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_binding_save(self->binding, cpath, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise_output(&err, "save: ", cpath);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    Py_RETURN_NONE;
}

static PyObject *binding_report(ssk_py_binding *self, PyObject *rig_obj)
{
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_binding_report report;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_binding_report_compute(&report, self->binding, rig, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) return ssk_py_raise(&err, "report: ", NULL);
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:I,s:(ii),s:I,s:I,s:I}", "mean_scale_length",
                         report.mean_scale_length, "max_scale_length", report.max_scale_length,
                         "max_attachment_gap", report.max_attachment_gap, "off_weight_share",
                         report.off_weight_share, "unrelated_neighbor_vertices",
                         report.unrelated_neighbor_vertices, "unrelated_bones",
                         report.unrelated_bones[0], report.unrelated_bones[1],
                         "unrelated_pair_vertices", report.unrelated_pair_vertices,
                         "weak_bone_vertices", report.weak_bone_vertices,
                         "far_from_weights_vertices", report.far_from_weights_vertices);
}

static PyMethodDef binding_methods[] = {
    {"info", (PyCFunction)binding_info, METH_NOARGS,
     "info() -> dict: counts, parameters and read-only views (bones, t, scale_vectors)."},
    {"save", (PyCFunction)binding_save, METH_O, "save(path): ssk_binding_save."},
    {"report", (PyCFunction)binding_report, METH_O,
     "report(rig) -> dict: ssk_binding_report_compute."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ssk_py_binding_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.Binding",
    .tp_basicsize = sizeof(ssk_py_binding),
    .tp_dealloc = (destructor)binding_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An attachment binding (ssk_binding); made by bind() or load_binding().",
    .tp_methods = binding_methods,
};

/* ------------------------------------------------------------------------ */
/* Graph.                                                                     */
/* ------------------------------------------------------------------------ */

static PyObject *graph_wrap(ssk_graph *graph, PyObject *rig)
{
    ssk_py_graph *self = (ssk_py_graph *)ssk_py_graph_type.tp_alloc(&ssk_py_graph_type, 0);
    if (!self) {
        ssk_graph_destroy(graph);
        return NULL;
    }
    self->graph = graph;
    Py_INCREF(rig);
    self->rig = rig;
    return (PyObject *)self;
}

PyObject *ssk_py_graph_parse(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"json", "rig", NULL};
    PyObject *json_obj, *rig_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:graph_parse", kwlist, &json_obj, &rig_obj))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    if (!PyUnicode_Check(json_obj)) {
        PyErr_Format(PyExc_TypeError, "graph: expected a JSON str, got %.100s",
                     Py_TYPE(json_obj)->tp_name);
        return NULL;
    }
    Py_ssize_t len = 0;
    const char *json = PyUnicode_AsUTF8AndSize(json_obj, &len);
    if (!json) return NULL;
    ssk_graph *graph = NULL;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_graph_parse(&graph, json, rig, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) return ssk_py_raise(&err, "graph: ", NULL);
    return graph_wrap(graph, rig_obj);
}

PyObject *ssk_py_graph_load(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"path", "rig", NULL};
    PyObject *path_obj, *rig_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:graph_load", kwlist, &path_obj, &rig_obj))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    PyObject *path = ssk_py_path(path_obj, "graph");
    if (!path) return NULL;
    const char *cpath = PyBytes_AS_STRING(path);
    ssk_graph *graph = NULL;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_graph_load(&graph, cpath, rig, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise(&err, "graph: ", cpath);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    return graph_wrap(graph, rig_obj);
}

PyObject *ssk_py_graph_from_method(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"method", "rig", NULL};
    PyObject *method_obj, *rig_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:graph_from_method", kwlist, &method_obj,
                                     &rig_obj))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_method method;
    if (ssk_py_parse_method(method_obj, "method", &method) != 0) return NULL;
    ssk_graph *graph = NULL;
    ssk_error err = {0};
    if (ssk_graph_from_method(&graph, method, rig, &err) != SSK_OK)
        return ssk_py_raise(&err, "graph: ", NULL);
    return graph_wrap(graph, rig_obj);
}

static void graph_dealloc(ssk_py_graph *self)
{
    ssk_graph_destroy(self->graph);
    Py_XDECREF(self->rig);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *graph_to_json(ssk_py_graph *self, PyObject *unused)
{
    (void)unused;
    char *json = ssk_graph_to_json(self->graph);
    if (!json) return PyErr_NoMemory();
    PyObject *result = PyUnicode_FromString(json);
    free(json);
    return result;
}

static PyObject *graph_needs_binding(ssk_py_graph *self, void *c)
{
    (void)c;
    return PyBool_FromLong(ssk_graph_needs_binding(self->graph));
}

static PyObject *graph_rig(ssk_py_graph *self, void *c)
{
    (void)c;
    Py_INCREF(self->rig);
    return self->rig;
}

static PyMethodDef graph_methods[] = {
    {"to_json", (PyCFunction)graph_to_json, METH_NOARGS,
     "to_json() -> str: the canonical JSON (ssk_graph_to_json)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"needs_binding", (getter)graph_needs_binding, NULL,
     "True when a node needs an attachment binding.", NULL},
    {"rig", (getter)graph_rig, NULL, "The Rig the graph was validated against.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.Graph",
    .tp_basicsize = sizeof(ssk_py_graph),
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A validated deformer graph (ssk_graph); made by graph_parse(), graph_load() "
              "or graph_from_method().",
    .tp_methods = graph_methods,
    .tp_getset = graph_getset,
};

/* ------------------------------------------------------------------------ */
/* GLContext.                                                                 */
/* ------------------------------------------------------------------------ */

static PyObject *gl_context_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, ":GLContext", kwlist)) return NULL;
    ssk_gl_context *ctx = NULL;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_gl_context_create(&ctx, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) return ssk_py_raise(&err, "GLContext: ", NULL);
    ssk_py_gl_context *self = (ssk_py_gl_context *)type->tp_alloc(type, 0);
    if (!self) {
        ssk_gl_context_destroy(ctx);
        return NULL;
    }
    self->ctx = ctx;
    return (PyObject *)self;
}

static void gl_context_dealloc(ssk_py_gl_context *self)
{
    if (self->ctx) {
        ssk_gl_context *ctx = self->ctx;
        /* joins the context's thread, which never takes the GIL */
        Py_BEGIN_ALLOW_THREADS
        ssk_gl_context_destroy(ctx);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *gl_context_info(ssk_py_gl_context *self, PyObject *unused)
{
    (void)unused;
    ssk_gl_info info;
    ssk_error err = {0};
    if (ssk_gl_context_info(self->ctx, &info, &err) != SSK_OK)
        return ssk_py_raise(&err, "info: ", NULL);
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:O,s:(iii),s:(iii),s:i,s:i,s:L,s:i,s:O}", "platform",
        info.platform,
        "device", info.device, "vendor", info.vendor, "renderer", info.renderer, "version",
        info.version, "glsl_version", info.glsl_version, "hardware",
        info.hardware ? Py_True : Py_False, "max_work_group_count",
        info.max_work_group_count[0], info.max_work_group_count[1],
        info.max_work_group_count[2], "max_work_group_size", info.max_work_group_size[0],
        info.max_work_group_size[1], info.max_work_group_size[2],
        "max_work_group_invocations", info.max_work_group_invocations,
        "max_shared_memory_bytes", info.max_shared_memory_bytes, "max_ssbo_bytes",
        info.max_ssbo_bytes, "subgroup_size", info.subgroup_size, "subgroup_arithmetic",
        info.subgroup_arithmetic ? Py_True : Py_False);
}

static PyMethodDef gl_context_methods[] = {
    {"info", (PyCFunction)gl_context_info, METH_NOARGS,
     "info() -> dict: ssk_gl_context_info."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ssk_py_gl_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.GLContext",
    .tp_basicsize = sizeof(ssk_py_gl_context),
    .tp_dealloc = (destructor)gl_context_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GLContext(): a headless OpenGL 4.3 context on its own thread "
              "(ssk_gl_context).",
    .tp_methods = gl_context_methods,
    .tp_new = gl_context_new,
};
