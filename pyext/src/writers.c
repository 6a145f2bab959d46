/*
 * writers.c — springskin._core.PointCacheWriter and springskin._core.AlembicWriter:
 * the core's streaming cache writers (ssk_pc2_writer_*, ssk_abc_writer_*)
 * for callers that produce the frames themselves (the Blender addon streams
 * Blender-posed frames; a pipeline may stream any deformer output).
 *
 * Both write under "<path>.tmp-<pid>" and rename onto the path only when
 * finish() succeeds; abort(), a failed finish() or dropping an unfinished
 * writer removes the temporary file, so no truncated cache is ever left.
 * The GIL is released around the file writes. One call at a time per
 * writer: a call while another thread is inside write()/finish() of the
 * same writer raises RuntimeError instead of racing.
 */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Largest point / vertex / triangle count: indices are int32 in the core. */
#define SSK_PY_WRITER_MAX_COUNT ((npy_intp)INT32_MAX)

typedef struct {
    PyObject_HEAD
    ssk_pc2_writer *writer; /* NULL once finished or aborted */
    PyObject *path;         /* str */
    uint32_t point_count;
    uint64_t frames;
    int busy;               /* a call is running with the GIL released */
} ssk_py_pc2_writer;

typedef struct {
    PyObject_HEAD
    ssk_abc_writer *writer; /* NULL once finished or aborted */
    PyObject *path;         /* str */
    uint32_t vertex_count;  /* whole archive: sum of the meshes' #V */
    uint32_t mesh_count;
    int with_normals;
    uint64_t frames;
    int busy;
} ssk_py_abc_writer;

/* Common guards: closed writer, concurrent call. */
static int writer_usable(const void *writer, int busy, const char *what)
{
    if (busy) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: the writer is in use by another thread (one call at a time)", what);
        return 0;
    }
    if (!writer) {
        PyErr_Format(PyExc_ValueError, "%s: the writer is closed (finished or aborted)", what);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* PointCacheWriter.                                                          */
/* ------------------------------------------------------------------------ */

static PyObject *pc2_writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "point_count", "start_frame", "sample_rate", NULL};
    PyObject *path_obj;
    Py_ssize_t count;
    double start_frame = 0.0, sample_rate = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "On|dd:PointCacheWriter", kwlist,
                                     &path_obj, &count, &start_frame, &sample_rate))
        return NULL;
    if (count < 1 || count > SSK_PY_WRITER_MAX_COUNT) {
        PyErr_Format(PyExc_ValueError, "point_count: expected 1 to %zd points, got %zd",
                     (Py_ssize_t)SSK_PY_WRITER_MAX_COUNT, count);
        return NULL;
    }
    /* float32 fields of the header: finite and representable */
    if (!isfinite(start_frame) || fabs(start_frame) > 3.0e38) {
        PyErr_SetString(PyExc_ValueError, "start_frame: expected a finite float32 number");
        return NULL;
    }
    if (!isfinite(sample_rate) || !(sample_rate > 0.0) || sample_rate > 3.0e38) {
        PyErr_SetString(PyExc_ValueError,
                        "sample_rate: expected a finite number > 0 (frames per sample)");
        return NULL;
    }
    PyObject *path = ssk_py_path(path_obj, "path");
    if (!path) return NULL;
    const char *cpath = PyBytes_AS_STRING(path);
    ssk_pc2_writer *writer = NULL;
    ssk_error err = {0};
    ssk_status status;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_pc2_writer_open(&writer, cpath, (uint32_t)count, (float)start_frame,
                                 (float)sample_rate, &err);
    Py_END_ALLOW_THREADS
    if (status != SSK_OK) {
        ssk_py_raise_output(&err, "PointCacheWriter: ", cpath);
        Py_DECREF(path);
        return NULL;
    }
    ssk_py_pc2_writer *self = (ssk_py_pc2_writer *)type->tp_alloc(type, 0);
    PyObject *path_str = PyUnicode_DecodeFSDefault(cpath);
    Py_DECREF(path);
    if (!self || !path_str) {
        Py_XDECREF(self);
        Py_XDECREF(path_str);
        ssk_pc2_writer_abort(writer);
        return NULL;
    }
    self->writer = writer;
    self->path = path_str;
    self->point_count = (uint32_t)count;
    return (PyObject *)self;
}

static void pc2_writer_dealloc(ssk_py_pc2_writer *self)
{
    /* never finished: the temporary file goes, nothing is renamed */
    ssk_pc2_writer_abort(self->writer);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* write(positions): one sample of point_count (x, y, z). */
static PyObject *pc2_writer_write(ssk_py_pc2_writer *self, PyObject *positions_obj)
{
    if (!writer_usable(self->writer, self->busy, "write")) return NULL;
    ssk_py_shape shape = {2, {"N", "3"}, {(npy_intp)self->point_count, 3}};
    PyArrayObject *positions = ssk_py_float_array(positions_obj, "positions", &shape);
    if (!positions) return NULL;
    ssk_error err = {0};
    ssk_status status;
    const float *data = PyArray_DATA(positions);
    ssk_pc2_writer *writer = self->writer;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_pc2_writer_write(writer, data, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    Py_DECREF(positions);
    if (status != SSK_OK) return ssk_py_raise(&err, "write: ", NULL);
    self->frames++;
    Py_RETURN_NONE;
}

/* finish(): patch the sample count, close, rename onto path. */
static PyObject *pc2_writer_finish(ssk_py_pc2_writer *self, PyObject *unused)
{
    (void)unused;
    if (!writer_usable(self->writer, self->busy, "finish")) return NULL;
    ssk_pc2_writer *writer = self->writer;
    self->writer = NULL; /* freed by finish in every case */
    ssk_error err = {0};
    ssk_status status;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_pc2_writer_finish(writer, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (status != SSK_OK) return ssk_py_raise(&err, "finish: ", NULL);
    Py_RETURN_NONE;
}

/* abort(): remove the temporary file; no-op when already closed. */
static PyObject *pc2_writer_abort(ssk_py_pc2_writer *self, PyObject *unused)
{
    (void)unused;
    if (self->busy) {
        writer_usable(NULL, 1, "abort");
        return NULL;
    }
    ssk_pc2_writer_abort(self->writer);
    self->writer = NULL;
    Py_RETURN_NONE;
}

static PyObject *pc2_writer_get_path(ssk_py_pc2_writer *self, void *c)
{
    (void)c;
    Py_INCREF(self->path);
    return self->path;
}

static PyObject *pc2_writer_get_point_count(ssk_py_pc2_writer *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(self->point_count);
}

static PyObject *pc2_writer_get_frames(ssk_py_pc2_writer *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->frames);
}

static PyObject *pc2_writer_get_closed(ssk_py_pc2_writer *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->writer == NULL);
}

static PyMethodDef pc2_writer_methods[] = {
    {"write", (PyCFunction)pc2_writer_write, METH_O,
     "write(positions): ssk_pc2_writer_write of one (N, 3) sample."},
    {"finish", (PyCFunction)pc2_writer_finish, METH_NOARGS,
     "finish(): ssk_pc2_writer_finish (rename onto path)."},
    {"abort", (PyCFunction)pc2_writer_abort, METH_NOARGS,
     "abort(): ssk_pc2_writer_abort (remove the temporary file)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef pc2_writer_getset[] = {
    {"path", (getter)pc2_writer_get_path, NULL, "The final path (str).", NULL},
    {"point_count", (getter)pc2_writer_get_point_count, NULL, "Points per sample.", NULL},
    {"frames", (getter)pc2_writer_get_frames, NULL, "Samples written so far.", NULL},
    {"closed", (getter)pc2_writer_get_closed, NULL, "True once finished or aborted.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_pc2_writer_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.PointCacheWriter",
    .tp_basicsize = sizeof(ssk_py_pc2_writer),
    .tp_dealloc = (destructor)pc2_writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PointCacheWriter(path, point_count, start_frame=0.0, sample_rate=1.0): "
              "the streaming .pc2 writer (ssk_pc2_writer).",
    .tp_methods = pc2_writer_methods,
    .tp_getset = pc2_writer_getset,
    .tp_new = pc2_writer_new,
};

/* ------------------------------------------------------------------------ */
/* AlembicWriter.                                                             */
/* ------------------------------------------------------------------------ */

/* Per mesh: the converted arrays, kept until ssk_abc_writer_open has read
 * them. */
typedef struct {
    PyObject *name;          /* bytes (UTF-8) or NULL */
    PyArrayObject *triangles; /* int32 (F, 3) or NULL */
    PyArrayObject *uvs;      /* float32 (V, 2) or NULL */
    PyArrayObject *matrix;   /* float32 (4, 4) or NULL */
} abc_mesh_arrays;

static void abc_mesh_arrays_clear(abc_mesh_arrays *a, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; a && i < n; ++i) {
        Py_XDECREF(a[i].name);
        Py_XDECREF(a[i].triangles);
        Py_XDECREF(a[i].uvs);
        Py_XDECREF(a[i].matrix);
    }
}

/* One entry of `meshes`: a 5-tuple (name or None, vertex_count,
 * triangles or None, uvs or None, object_matrix or None). */
static int convert_abc_mesh(PyObject *item, Py_ssize_t index, ssk_abc_mesh_desc *desc,
                            abc_mesh_arrays *arrays)
{
    char label[64];
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 5) {
        PyErr_Format(PyExc_TypeError,
                     "meshes[%zd]: expected a tuple (name, vertex_count, triangles, uvs, "
                     "object_matrix), got %.100s",
                     index, Py_TYPE(item)->tp_name);
        return -1;
    }
    PyObject *name = PyTuple_GET_ITEM(item, 0), *count_obj = PyTuple_GET_ITEM(item, 1);
    PyObject *tri_obj = PyTuple_GET_ITEM(item, 2), *uv_obj = PyTuple_GET_ITEM(item, 3);
    PyObject *matrix_obj = PyTuple_GET_ITEM(item, 4);
    if (name != Py_None) {
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "meshes[%zd].name: expected a str or None, got %.100s",
                         index, Py_TYPE(name)->tp_name);
            return -1;
        }
        arrays->name = PyUnicode_AsUTF8String(name);
        if (!arrays->name) return -1;
        if ((Py_ssize_t)strlen(PyBytes_AS_STRING(arrays->name)) !=
            PyBytes_GET_SIZE(arrays->name)) {
            PyErr_Format(PyExc_ValueError, "meshes[%zd].name: NUL character in the name", index);
            return -1;
        }
        desc->name = PyBytes_AS_STRING(arrays->name);
    }
    if (!PyLong_Check(count_obj) || PyBool_Check(count_obj)) {
        PyErr_Format(PyExc_TypeError, "meshes[%zd].vertex_count: expected an int, got %.100s",
                     index, Py_TYPE(count_obj)->tp_name);
        return -1;
    }
    Py_ssize_t count = PyLong_AsSsize_t(count_obj);
    if (count == -1 && PyErr_Occurred()) return -1;
    if (count < 1 || count > SSK_PY_WRITER_MAX_COUNT) {
        PyErr_Format(PyExc_ValueError, "meshes[%zd].vertex_count: expected 1 to %zd, got %zd",
                     index, (Py_ssize_t)SSK_PY_WRITER_MAX_COUNT, count);
        return -1;
    }
    desc->vertex_count = (uint32_t)count;
    if (tri_obj != Py_None) {
        snprintf(label, sizeof label, "meshes[%zd].triangles", index);
        ssk_py_shape shape = {2, {"F", "3"}, {SSK_PY_ANY, 3}};
        PyArrayObject *tri64 = ssk_py_index_array(tri_obj, label, &shape);
        if (!tri64) return -1;
        const int64_t *v = PyArray_DATA(tri64);
        const npy_intp n = PyArray_SIZE(tri64);
        if (shape.sizes[0] > SSK_PY_WRITER_MAX_COUNT) {
            PyErr_Format(PyExc_ValueError, "%s: too many triangles (%zd)", label,
                         (Py_ssize_t)shape.sizes[0]);
            Py_DECREF(tri64);
            return -1;
        }
        for (npy_intp i = 0; i < n; ++i) {
            if (v[i] >= 0 && v[i] < count) continue;
            PyErr_Format(PyExc_ValueError,
                         "%s: entry [%zd, %zd] = %lld is out of range: expected a vertex "
                         "index in [0, V) = [0, %zd)",
                         label, (Py_ssize_t)(i / 3), (Py_ssize_t)(i % 3), (long long)v[i],
                         count);
            Py_DECREF(tri64);
            return -1;
        }
        arrays->triangles = ssk_py_to_int32(tri64);
        Py_DECREF(tri64);
        if (!arrays->triangles) return -1;
        desc->triangle_count = (uint32_t)shape.sizes[0];
        desc->triangles = PyArray_DATA(arrays->triangles);
    }
    if (uv_obj != Py_None) {
        snprintf(label, sizeof label, "meshes[%zd].uvs", index);
        ssk_py_shape shape = {2, {"V", "2"}, {count, 2}};
        arrays->uvs = ssk_py_float_array(uv_obj, label, &shape);
        if (!arrays->uvs) return -1;
        desc->uvs = PyArray_DATA(arrays->uvs);
    }
    if (matrix_obj != Py_None) {
        snprintf(label, sizeof label, "meshes[%zd].object_matrix", index);
        ssk_py_shape shape = {2, {"4", "4"}, {4, 4}};
        arrays->matrix = ssk_py_float_array(matrix_obj, label, &shape);
        if (!arrays->matrix) return -1;
        desc->object_matrix = PyArray_DATA(arrays->matrix);
    }
    return 0;
}

/* Optional metadata string (None or str) as UTF-8 bytes. */
static int convert_optional_text(PyObject *obj, const char *name, PyObject **bytes)
{
    *bytes = NULL;
    if (obj == Py_None) return 0;
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a str or None, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *bytes = PyUnicode_AsUTF8String(obj);
    if (!*bytes) return -1;
    if ((Py_ssize_t)strlen(PyBytes_AS_STRING(*bytes)) != PyBytes_GET_SIZE(*bytes)) {
        PyErr_Format(PyExc_ValueError, "%s: NUL character in the text", name);
        Py_CLEAR(*bytes);
        return -1;
    }
    return 0;
}

static PyObject *abc_writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path",   "meshes",      "fps",          "start_time",
                             "normals", "application", "date_written", NULL};
    PyObject *path_obj, *meshes_obj, *app_obj = Py_None, *date_obj = Py_None;
    double fps, start_time = 0.0;
    int normals = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOd|dpOO:AlembicWriter", kwlist, &path_obj,
                                     &meshes_obj, &fps, &start_time, &normals, &app_obj,
                                     &date_obj))
        return NULL;
    PyObject *path = NULL, *meshes = NULL, *app = NULL, *date = NULL, *result = NULL;
    ssk_abc_mesh_desc *descs = NULL;
    abc_mesh_arrays *arrays = NULL;
    Py_ssize_t n = 0;
    uint64_t total = 0;
    if (!isfinite(fps) || !(fps > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "fps: expected a finite number > 0");
        return NULL;
    }
    if (!isfinite(start_time)) {
        PyErr_SetString(PyExc_ValueError, "start_time: expected a finite number of seconds");
        return NULL;
    }
    meshes = PySequence_Fast(meshes_obj, "meshes: expected a sequence of mesh tuples");
    if (!meshes) goto done;
    n = PySequence_Fast_GET_SIZE(meshes);
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "meshes: expected at least one mesh");
        goto done;
    }
    descs = PyMem_Calloc((size_t)n, sizeof *descs);
    arrays = PyMem_Calloc((size_t)n, sizeof *arrays);
    if (!descs || !arrays) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        if (convert_abc_mesh(PySequence_Fast_GET_ITEM(meshes, i), i, &descs[i], &arrays[i]) != 0)
            goto done;
        total += descs[i].vertex_count;
    }
    if (total > (uint64_t)SSK_PY_WRITER_MAX_COUNT) {
        PyErr_Format(PyExc_ValueError, "meshes: %llu vertices in all, at most %zd",
                     (unsigned long long)total, (Py_ssize_t)SSK_PY_WRITER_MAX_COUNT);
        goto done;
    }
    if (convert_optional_text(app_obj, "application", &app) != 0 ||
        convert_optional_text(date_obj, "date_written", &date) != 0)
        goto done;
    path = ssk_py_path(path_obj, "path");
    if (!path) goto done;
    {
        const char *cpath = PyBytes_AS_STRING(path);
        ssk_abc_desc desc = {
            .meshes = descs,
            .mesh_count = (uint32_t)n,
            .fps = fps,
            .start_time = start_time,
            .with_normals = normals,
            .application = app ? PyBytes_AS_STRING(app) : NULL,
            .date_written = date ? PyBytes_AS_STRING(date) : NULL,
        };
        ssk_abc_writer *writer = NULL;
        ssk_error err = {0};
        ssk_status status;
        Py_BEGIN_ALLOW_THREADS
        status = ssk_abc_writer_open(&writer, cpath, &desc, &err);
        Py_END_ALLOW_THREADS
        if (status != SSK_OK) {
            ssk_py_raise_output(&err, "AlembicWriter: ", cpath);
            goto done;
        }
        ssk_py_abc_writer *self = (ssk_py_abc_writer *)type->tp_alloc(type, 0);
        PyObject *path_str = PyUnicode_DecodeFSDefault(cpath);
        if (!self || !path_str) {
            Py_XDECREF(self);
            Py_XDECREF(path_str);
            ssk_abc_writer_abort(writer);
            goto done;
        }
        self->writer = writer;
        self->path = path_str;
        self->vertex_count = (uint32_t)total;
        self->mesh_count = (uint32_t)n;
        self->with_normals = normals;
        result = (PyObject *)self;
    }
done:
    abc_mesh_arrays_clear(arrays, n);
    PyMem_Free(arrays);
    PyMem_Free(descs);
    Py_XDECREF(meshes);
    Py_XDECREF(path);
    Py_XDECREF(app);
    Py_XDECREF(date);
    return result;
}

static void abc_writer_dealloc(ssk_py_abc_writer *self)
{
    ssk_abc_writer_abort(self->writer);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* write(positions, normals=None, object_matrices=None) */
static PyObject *abc_writer_write(ssk_py_abc_writer *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"positions", "normals", "object_matrices", NULL};
    PyObject *positions_obj, *normals_obj = Py_None, *objects_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:write", kwlist, &positions_obj,
                                     &normals_obj, &objects_obj))
        return NULL;
    if (!writer_usable(self->writer, self->busy, "write")) return NULL;
    if (self->with_normals && normals_obj == Py_None) {
        PyErr_SetString(PyExc_ValueError,
                        "normals: the writer was opened with normals=True; give (V, 3) normals");
        return NULL;
    }
    if (!self->with_normals && normals_obj != Py_None) {
        PyErr_SetString(PyExc_ValueError,
                        "normals: the writer was opened with normals=False; give None");
        return NULL;
    }
    PyArrayObject *positions = NULL, *normals = NULL, *objects = NULL;
    PyObject *result = NULL;
    ssk_py_shape vshape = {2, {"V", "3"}, {(npy_intp)self->vertex_count, 3}};
    positions = ssk_py_float_array(positions_obj, "positions", &vshape);
    if (!positions) goto done;
    if (normals_obj != Py_None) {
        ssk_py_shape nshape = {2, {"V", "3"}, {(npy_intp)self->vertex_count, 3}};
        normals = ssk_py_float_array(normals_obj, "normals", &nshape);
        if (!normals) goto done;
    }
    if (objects_obj != Py_None) {
        ssk_py_shape oshape = {3, {"M", "4", "4"}, {(npy_intp)self->mesh_count, 4, 4}};
        objects = ssk_py_float_array(objects_obj, "object_matrices", &oshape);
        if (!objects) goto done;
    }
    {
        ssk_abc_writer *writer = self->writer;
        const float *p = PyArray_DATA(positions);
        const float *nrm = normals ? PyArray_DATA(normals) : NULL;
        const float *obj = objects ? PyArray_DATA(objects) : NULL;
        ssk_error err = {0};
        ssk_status status;
        self->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        status = ssk_abc_writer_write_frame(writer, p, nrm, obj, &err);
        Py_END_ALLOW_THREADS
        self->busy = 0;
        if (status != SSK_OK) {
            ssk_py_raise(&err, "write: ", NULL);
            goto done;
        }
        self->frames++;
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    Py_XDECREF(positions);
    Py_XDECREF(normals);
    Py_XDECREF(objects);
    return result;
}

static PyObject *abc_writer_finish(ssk_py_abc_writer *self, PyObject *unused)
{
    (void)unused;
    if (!writer_usable(self->writer, self->busy, "finish")) return NULL;
    ssk_abc_writer *writer = self->writer;
    self->writer = NULL; /* freed by finish in every case */
    ssk_error err = {0};
    ssk_status status;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    status = ssk_abc_writer_finish(writer, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (status != SSK_OK) return ssk_py_raise(&err, "finish: ", NULL);
    Py_RETURN_NONE;
}

static PyObject *abc_writer_abort(ssk_py_abc_writer *self, PyObject *unused)
{
    (void)unused;
    if (self->busy) {
        writer_usable(NULL, 1, "abort");
        return NULL;
    }
    ssk_abc_writer_abort(self->writer);
    self->writer = NULL;
    Py_RETURN_NONE;
}

static PyObject *abc_writer_get_path(ssk_py_abc_writer *self, void *c)
{
    (void)c;
    Py_INCREF(self->path);
    return self->path;
}

static PyObject *abc_writer_get_vertex_count(ssk_py_abc_writer *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(self->vertex_count);
}

static PyObject *abc_writer_get_mesh_count(ssk_py_abc_writer *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(self->mesh_count);
}

static PyObject *abc_writer_get_frames(ssk_py_abc_writer *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->frames);
}

static PyObject *abc_writer_get_closed(ssk_py_abc_writer *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->writer == NULL);
}

static PyObject *abc_writer_get_normals(ssk_py_abc_writer *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->with_normals);
}

static PyMethodDef abc_writer_methods[] = {
    {"write", (PyCFunction)(void (*)(void))abc_writer_write, METH_VARARGS | METH_KEYWORDS,
     "write(positions, normals=None, object_matrices=None): ssk_abc_writer_write_frame."},
    {"finish", (PyCFunction)abc_writer_finish, METH_NOARGS,
     "finish(): ssk_abc_writer_finish (rename onto path)."},
    {"abort", (PyCFunction)abc_writer_abort, METH_NOARGS,
     "abort(): ssk_abc_writer_abort (remove the temporary file)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef abc_writer_getset[] = {
    {"path", (getter)abc_writer_get_path, NULL, "The final path (str).", NULL},
    {"vertex_count", (getter)abc_writer_get_vertex_count, NULL,
     "Rows of write()'s positions: the meshes' vertex counts summed.", NULL},
    {"mesh_count", (getter)abc_writer_get_mesh_count, NULL, "Meshes in the archive.", NULL},
    {"frames", (getter)abc_writer_get_frames, NULL, "Frames written so far.", NULL},
    {"closed", (getter)abc_writer_get_closed, NULL, "True once finished or aborted.", NULL},
    {"normals", (getter)abc_writer_get_normals, NULL, "True when N is written.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ssk_py_abc_writer_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "springskin._core.AlembicWriter",
    .tp_basicsize = sizeof(ssk_py_abc_writer),
    .tp_dealloc = (destructor)abc_writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "AlembicWriter(path, meshes, fps, start_time=0.0, normals=False, "
              "application=None, date_written=None): the streaming Alembic writer "
              "(ssk_abc_writer); meshes: tuples (name, vertex_count, triangles, uvs, "
              "object_matrix).",
    .tp_methods = abc_writer_methods,
    .tp_getset = abc_writer_getset,
    .tp_new = abc_writer_new,
};
