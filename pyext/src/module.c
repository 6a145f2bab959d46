/*
 * module.c — springskin._core: module definition, exceptions and the
 * mapping of ssk_status codes to them, name parsing helpers.
 */
#define SSK_PYEXT_IMPORT_ARRAY
#include "common.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

PyObject *ssk_py_error;
PyObject *ssk_py_gl_unavailable;
PyObject *ssk_py_gl_error;
PyObject *ssk_py_spring_diverged;

PyObject *ssk_py_exception_type(ssk_status status)
{
    switch (status) {
    case SSK_ERROR_INVALID_ARGUMENT:
    case SSK_ERROR_NONFINITE:
    case SSK_ERROR_EMPTY_MESH:
    case SSK_ERROR_TRIANGLE_INDEX:
    case SSK_ERROR_BONE_INDEX:
    case SSK_ERROR_NEGATIVE_WEIGHT:
    case SSK_ERROR_PARENT_INDEX:
    case SSK_ERROR_PARENT_CYCLE:
    case SSK_ERROR_NO_ANIMATION:
    case SSK_ERROR_FRAME_RANGE:
    case SSK_ERROR_BIND:
    case SSK_ERROR_BINDING_MISMATCH:
    case SSK_ERROR_GRAPH:
    case SSK_ERROR_SPRING_UNSTABLE:
        return PyExc_ValueError;
    case SSK_ERROR_IO:
        return PyExc_OSError;
    case SSK_ERROR_OUT_OF_MEMORY:
        return PyExc_MemoryError;
    case SSK_ERROR_GL_UNAVAILABLE:
        return ssk_py_gl_unavailable;
    case SSK_ERROR_GL_SHADER:
    case SSK_ERROR_GL:
        return ssk_py_gl_error;
    case SSK_ERROR_SPRING_DIVERGED:
        return ssk_py_spring_diverged;
    default: /* import, no skeleton, unsupported, and anything new */
        return ssk_py_error;
    }
}

/* Raises `err` as `type`, with (errno, message, path) arguments when
 * code != 0, and the `status` attribute. */
static PyObject *raise_as(PyObject *type, const ssk_error *err, const char *prefix, int code,
                          const char *path)
{
    const ssk_status status = err->status == SSK_OK ? SSK_ERROR_INVALID_ARGUMENT : err->status;
    const char *message = err->message[0] ? err->message : ssk_status_message(status);
    /* no "bake: bake: ..." when the core's message already names the call */
    if (prefix && strncmp(message, prefix, strlen(prefix)) == 0) prefix = NULL;
    PyObject *text = PyUnicode_FromFormat("%s%s", prefix ? prefix : "", message);
    if (!text) return NULL;
    PyObject *args = NULL, *exc = NULL;
    if (code != 0 && path)
        args = Py_BuildValue("(iON)", code, text, PyUnicode_DecodeFSDefault(path));
    else
        args = PyTuple_Pack(1, text);
    Py_DECREF(text);
    if (!args) return NULL;
    exc = PyObject_Call(type, args, NULL);
    Py_DECREF(args);
    if (!exc) return NULL;
    PyObject *name = PyUnicode_FromString(ssk_status_name(status));
    if (!name || PyObject_SetAttrString(exc, "status", name) != 0) {
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(name);
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *ssk_py_raise(const ssk_error *err, const char *prefix, const char *path)
{
    const ssk_status status = err->status == SSK_OK ? SSK_ERROR_INVALID_ARGUMENT : err->status;
    struct stat st;
    if (status == SSK_ERROR_IO && path && stat(path, &st) != 0 && errno == ENOENT)
        return raise_as(PyExc_FileNotFoundError, err, prefix, ENOENT, path);
    return raise_as(ssk_py_exception_type(status), err, prefix, 0, NULL);
}

PyObject *ssk_py_raise_output(const ssk_error *err, const char *prefix, const char *path)
{
    const ssk_status status = err->status == SSK_OK ? SSK_ERROR_INVALID_ARGUMENT : err->status;
    if (status != SSK_ERROR_IO || !path) return ssk_py_raise(err, prefix, NULL);
    /* the folder of path ("." when it has none) */
    const char *slash = strrchr(path, '/');
    char folder[4096];
    if (!slash) {
        snprintf(folder, sizeof folder, ".");
    } else {
        const size_t n = slash == path ? 1 : (size_t)(slash - path);
        snprintf(folder, sizeof folder, "%.*s", (int)(n < sizeof folder ? n : sizeof folder - 1),
                 path);
    }
    struct stat st;
    if (stat(folder, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? raise_as(PyExc_FileNotFoundError, err, prefix, ENOENT, path)
                   : raise_as(PyExc_OSError, err, prefix, errno, path);
    if (!S_ISDIR(st.st_mode))
        return raise_as(PyExc_NotADirectoryError, err, prefix, ENOTDIR, path);
    if (access(folder, W_OK | X_OK) != 0)
        return raise_as(PyExc_PermissionError, err, prefix, EACCES, path);
    return raise_as(PyExc_OSError, err, prefix, 0, NULL);
}

static int parse_name(PyObject *obj, const char *name, int *out,
                      ssk_status (*parse)(void *, const char *, ssk_error *))
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a string, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *text = PyUnicode_AsUTF8(obj);
    if (!text) return -1;
    ssk_error err = {0};
    if (parse(out, text, &err) != SSK_OK) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%s: ", name);
        ssk_py_raise(&err, prefix, NULL);
        return -1;
    }
    return 0;
}

static ssk_status parse_method_cb(void *out, const char *text, ssk_error *err)
{
    ssk_method m;
    ssk_status s = ssk_method_parse(&m, text, err);
    if (s == SSK_OK) *(int *)out = (int)m;
    return s;
}

static ssk_status parse_backend_cb(void *out, const char *text, ssk_error *err)
{
    ssk_backend b;
    ssk_status s = ssk_backend_parse(&b, text, err);
    if (s == SSK_OK) *(int *)out = (int)b;
    return s;
}

int ssk_py_parse_method(PyObject *obj, const char *name, ssk_method *out)
{
    int value = 0;
    if (parse_name(obj, name, &value, parse_method_cb) != 0) return -1;
    *out = (ssk_method)value;
    return 0;
}

int ssk_py_parse_backend(PyObject *obj, const char *name, ssk_backend *out)
{
    int value = 0;
    if (parse_name(obj, name, &value, parse_backend_cb) != 0) return -1;
    *out = (ssk_backend)value;
    return 0;
}

/* A tuple of the names name_of(0 .. count-1), skipping values without a
 * name (NULL). */
static PyObject *name_tuple(int count, const char *(*name_of)(int))
{
    PyObject *list = PyList_New(0), *tuple = NULL;
    if (!list) return NULL;
    for (int i = 0; i < count; ++i) {
        const char *name = name_of(i);
        if (!name) continue;
        PyObject *s = PyUnicode_FromString(name);
        if (!s || PyList_Append(list, s) != 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    tuple = PyList_AsTuple(list);
    Py_DECREF(list);
    return tuple;
}

static const char *method_name_of(int i) { return ssk_method_name((ssk_method)i); }
static const char *backend_name_of(int i) { return ssk_backend_name((ssk_backend)i); }
static const char *bind_method_name_of(int i) { return ssk_bind_method_name((ssk_bind_method)i); }
static const char *profile_name_of(int i) { return ssk_radial_profile_name((ssk_radial_profile)i); }

static PyObject *py_status_message(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *name = NULL;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "status_message: expected a status name");
        return NULL;
    }
    for (int s = 0; s < SSK_STATUS_COUNT; ++s)
        if (PyUnicode_CompareWithASCIIString(arg, ssk_status_name((ssk_status)s)) == 0)
            return PyUnicode_FromString(ssk_status_message((ssk_status)s));
    name = PyObject_Repr(arg);
    if (name) PyErr_Format(PyExc_ValueError, "status_message: unknown status %U", name);
    Py_XDECREF(name);
    return NULL;
}

/* threading(threads=None, spin_microseconds=None) -> (threads, spin):
 * ssk_threading_set with the given fields changed (None keeps one), then
 * ssk_threading_get. Range errors -> ValueError (the package checks types
 * first). */
static PyObject *py_threading(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"threads", "spin_microseconds", NULL};
    PyObject *threads = Py_None, *spin = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:threading", kwlist, &threads, &spin))
        return NULL;
    ssk_threading t;
    ssk_threading_get(&t);
    if (threads != Py_None || spin != Py_None) {
        ssk_threading want = t; /* None keeps the count in use */
        if (threads != Py_None) {
            const long long n = PyLong_AsLongLong(threads);
            if (n == -1 && PyErr_Occurred()) return NULL;
            if (n < 0 || n > UINT32_MAX) {
                PyErr_Format(PyExc_ValueError,
                             "threading: threads must be 0 (one per CPU) to 256, got %lld", n);
                return NULL;
            }
            want.threads = (uint32_t)n;
        }
        if (spin != Py_None) {
            const long long n = PyLong_AsLongLong(spin);
            if (n == -1 && PyErr_Occurred()) return NULL;
            if (n < 0 || n > UINT32_MAX) {
                PyErr_Format(PyExc_ValueError,
                             "threading: spin_microseconds must be 0 to 1000000, got %lld", n);
                return NULL;
            }
            want.spin_microseconds = (uint32_t)n;
        }
        ssk_error err = {0};
        ssk_status st;
        Py_BEGIN_ALLOW_THREADS
        st = ssk_threading_set(&want, &err);
        Py_END_ALLOW_THREADS
        if (st != SSK_OK) {
            PyErr_SetString(PyExc_ValueError, err.message);
            return NULL;
        }
        ssk_threading_get(&t);
    }
    return Py_BuildValue("(II)", (unsigned)t.threads, (unsigned)t.spin_microseconds);
}

/* remove_temporary_files(): ssk_temp_files_remove (issue #19). */
static PyObject *py_remove_temporary_files(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    ssk_temp_files_remove();
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"remove_temporary_files", py_remove_temporary_files, METH_NOARGS,
     "ssk_temp_files_remove: unlink the temporary files being written."},
    {"threading", (PyCFunction)(void (*)(void))py_threading, METH_VARARGS | METH_KEYWORDS,
     "threading(threads=None, spin_microseconds=None) -> (threads, spin_microseconds): "
     "ssk_threading_set / ssk_threading_get."},
    {"import_scene", (PyCFunction)(void (*)(void))ssk_py_import_scene,
     METH_VARARGS | METH_KEYWORDS,
     "import_scene(path) -> Scene: ssk_scene_import (Assimp), GIL released."},
    {"bind", (PyCFunction)(void (*)(void))ssk_py_bind, METH_VARARGS | METH_KEYWORDS,
     "bind(rig, method='auto', smooth_iterations=6, max_distance=0.0, cache=None, cor=False, "
     "progress=None, implicit=False)"
     " -> (Binding, reused): ssk_binding_create or ssk_binding_cached."},
    {"load_binding", (PyCFunction)(void (*)(void))ssk_py_load_binding,
     METH_VARARGS | METH_KEYWORDS, "load_binding(path, rig=None) -> Binding: ssk_binding_load."},
    {"graph_parse", (PyCFunction)(void (*)(void))ssk_py_graph_parse,
     METH_VARARGS | METH_KEYWORDS, "graph_parse(json, rig) -> Graph: ssk_graph_parse."},
    {"graph_load", (PyCFunction)(void (*)(void))ssk_py_graph_load,
     METH_VARARGS | METH_KEYWORDS, "graph_load(path, rig) -> Graph: ssk_graph_load."},
    {"graph_from_method", (PyCFunction)(void (*)(void))ssk_py_graph_from_method,
     METH_VARARGS | METH_KEYWORDS,
     "graph_from_method(method, rig) -> Graph: ssk_graph_from_method."},
    {"bake", (PyCFunction)(void (*)(void))ssk_py_bake, METH_VARARGS | METH_KEYWORDS,
     "bake(scene, path, method='lbs', backend='auto', fps=24.0, animation=0, first=0, "
     "last=-1, graph=None, binding=None, gl_context=None, normals=False, cage=None, "
     "cage_edit=None, implicit_operators=None, shard=None) -> dict: "
     "ssk_scene_bake (path None with shard: a frame shard of that directory)."},
    {"pose_joints", (PyCFunction)(void (*)(void))ssk_py_pose_joints,
     METH_VARARGS | METH_KEYWORDS, "pose_joints(joints, baseline, offset, radius) (7.2)."},
    {"pose_from_strokes", (PyCFunction)(void (*)(void))ssk_py_pose_from_strokes,
     METH_VARARGS | METH_KEYWORDS,
     "pose_from_strokes(rig, skinning, baseline, offset, radius) (7.2)."},
    {"surface_points", (PyCFunction)(void (*)(void))ssk_py_surface_points,
     METH_VARARGS | METH_KEYWORDS, "surface_points(rig, triangles, barycentric, positions)."},
    {"surface_roi", (PyCFunction)(void (*)(void))ssk_py_surface_roi,
     METH_VARARGS | METH_KEYWORDS, "surface_roi(rig, triangles, grow) (7.4)."},
    {"bulge_offsets", (PyCFunction)(void (*)(void))ssk_py_bulge_offsets,
     METH_VARARGS | METH_KEYWORDS, "bulge_offsets(rig, binding, stroke, kinematic, amount)."},
    {"merge", (PyCFunction)(void (*)(void))ssk_py_merge, METH_VARARGS | METH_KEYWORDS,
     "merge(directory, path, first=0, last=-1) -> dict: the shards of one bake into one "
     "cache; ssk_shards_merge."},
    {"skin_vectors", (PyCFunction)(void (*)(void))ssk_py_skin_vectors,
     METH_VARARGS | METH_KEYWORDS,
     "skin_vectors(rig, rows, vectors, skinning_matrices, object_matrices=None, method='lbs') "
     "-> (N, 3): ssk_rig_skin_vectors, GIL released."},
    {"status_message", py_status_message, METH_O,
     "status_message(name) -> str: the generic message of a status name."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "springskin._core",
    "Private extension module of springskin: the SpringSkin C core on numpy arrays.\n"
    "Use the `springskin` package, which validates and documents.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

static int add_type(PyObject *module, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0) return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

static int add_object(PyObject *module, const char *name, PyObject *value)
{
    if (!value) return -1;
    if (PyModule_AddObject(module, name, value) < 0) {
        Py_DECREF(value);
        return -1;
    }
    return 0;
}

/* A new exception class springskin.<name>(base), documented. */
static PyObject *new_exception(const char *name, PyObject *base, const char *doc)
{
    char qualified[128];
    snprintf(qualified, sizeof qualified, "springskin.%s", name);
    return PyErr_NewExceptionWithDoc(qualified, doc, base, NULL);
}

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *module = PyModule_Create(&module_def);
    if (!module) return NULL;
    ssk_py_error = new_exception(
        "SpringSkinError", PyExc_RuntimeError,
        "Errors of the SpringSkin core that are not about an argument: a file Assimp cannot "
        "import, a file without a skeleton, an unsupported request. Attribute `status`: the "
        "C status name (SSK_ERROR_...).");
    if (!ssk_py_error) goto fail;
    ssk_py_gl_unavailable = new_exception(
        "GLUnavailableError", ssk_py_error,
        "No usable OpenGL 4.3 context through EGL (backend='gl' only; 'auto' falls back to "
        "the CPU with a warning).");
    ssk_py_gl_error = new_exception("GLError", ssk_py_error,
                                    "An OpenGL error or a GLSL shader that does not compile "
                                    "(the message carries GLSL's log).");
    ssk_py_spring_diverged = new_exception(
        "SpringDivergedError", ssk_py_error,
        "The spring solver diverged. The positions of the last good iterate were still "
        "written: attribute `positions` holds them, `report` the spring report.");
    if (!ssk_py_gl_unavailable || !ssk_py_gl_error || !ssk_py_spring_diverged) goto fail;
    Py_INCREF(ssk_py_error);
    Py_INCREF(ssk_py_gl_unavailable);
    Py_INCREF(ssk_py_gl_error);
    Py_INCREF(ssk_py_spring_diverged);
    if (add_object(module, "SpringSkinError", ssk_py_error) < 0 ||
        add_object(module, "GLUnavailableError", ssk_py_gl_unavailable) < 0 ||
        add_object(module, "GLError", ssk_py_gl_error) < 0 ||
        add_object(module, "SpringDivergedError", ssk_py_spring_diverged) < 0)
        goto fail;
    if (add_type(module, &ssk_py_rig_type, "Rig") < 0 ||
        add_type(module, &ssk_py_scene_type, "Scene") < 0 ||
        add_type(module, &ssk_py_binding_type, "Binding") < 0 ||
        add_type(module, &ssk_py_graph_type, "Graph") < 0 ||
        add_type(module, &ssk_py_gl_context_type, "GLContext") < 0 ||
        add_type(module, &ssk_py_deformer_type, "Deformer") < 0 ||
        add_type(module, &ssk_py_pc2_writer_type, "PointCacheWriter") < 0 ||
        add_type(module, &ssk_py_abc_writer_type, "AlembicWriter") < 0 ||
        add_type(module, &ssk_py_cor_state_type, "CorState") < 0 ||
        add_type(module, &ssk_py_implicit_operators_type, "ImplicitOperators") < 0 ||
        add_type(module, &ssk_py_cage_type, "Cage") < 0 ||
        add_type(module, &ssk_py_stroke_type, "Stroke") < 0)
        goto fail;
    if (add_object(module, "version", PyUnicode_FromString(ssk_version_string())) < 0 ||
        add_object(module, "methods", name_tuple(SSK_METHOD_COUNT, method_name_of)) < 0 ||
        add_object(module, "backends", name_tuple(SSK_BACKEND_COUNT, backend_name_of)) < 0 ||
        add_object(module, "bind_methods",
                   name_tuple(SSK_BIND_METHOD_COUNT, bind_method_name_of)) < 0 ||
        add_object(module, "radial_profiles",
                   name_tuple(SSK_RADIAL_PROFILE_COUNT, profile_name_of)) < 0 ||
        PyModule_AddIntConstant(module, "MAX_INFLUENCES", SSK_MAX_INFLUENCES) < 0 ||
        add_object(module, "WEIGHT_EPSILON", PyFloat_FromDouble(SSK_WEIGHT_EPSILON)) < 0 ||
        add_object(module, "STROKE_EPSILON_WINDOW_PX",
                   PyFloat_FromDouble(SSK_STROKE_EPSILON_WINDOW_PX)) < 0 ||
        add_object(module, "STROKE_EPSILON_RELATIVE",
                   PyFloat_FromDouble(SSK_STROKE_EPSILON_RELATIVE)) < 0 ||
        PyModule_AddIntConstant(module, "ROI_GROW_LIMIT", SSK_ROI_GROW_LIMIT) < 0)
        goto fail;
    return module;
fail:
    Py_DECREF(module);
    return NULL;
}
