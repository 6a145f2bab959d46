/*
 * skin_vectors.c — springskin._core.skin_vectors: ssk_rig_skin_vectors on
 * numpy arrays (strict conversion, the GIL released around the kernel).
 */
#include "common.h"

/* skin_vectors(rig, rows (N,), vectors (N, 3), skinning (B, 4, 4),
 * object_matrices (M, 4, 4) or None, method 'lbs' | 'dqs') -> (N, 3) float32 */
PyObject *ssk_py_skin_vectors(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"rig", "rows", "vectors", "skinning_matrices", "object_matrices",
                             "method", NULL};
    PyObject *rig_obj, *rows_obj, *vec_obj, *skin_obj, *objects_obj = Py_None,
                                                       *method_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|OO:skin_vectors", kwlist, &rig_obj,
                                     &rows_obj, &vec_obj, &skin_obj, &objects_obj, &method_obj))
        return NULL;
    const ssk_rig *rig = ssk_py_rig_get(rig_obj, "rig");
    if (!rig) return NULL;
    ssk_method method = SSK_METHOD_LBS;
    if (method_obj != Py_None && ssk_py_parse_method(method_obj, "method", &method) != 0)
        return NULL;
    PyArrayObject *rows64 = NULL, *vec = NULL, *skin = NULL, *objects = NULL, *out = NULL;
    uint32_t *rows = NULL;
    ssk_py_shape rs = {1, {"N"}, {SSK_PY_ANY}};
    if (!(rows64 = ssk_py_index_array(rows_obj, "rows", &rs))) goto fail;
    const npy_intp n = rs.sizes[0];
    const npy_intp nv = ssk_rig_vertex_count(rig);
    rows = malloc(((size_t)n + 1) * sizeof *rows);
    if (!rows) {
        PyErr_NoMemory();
        goto fail;
    }
    const int64_t *r64 = PyArray_DATA(rows64);
    for (npy_intp i = 0; i < n; ++i) {
        if (r64[i] < 0 || r64[i] >= nv) {
            PyErr_Format(PyExc_ValueError, "rows: row %zd is %lld, expected 0 to %zd", (Py_ssize_t)i,
                         (long long)r64[i], (Py_ssize_t)(nv - 1));
            goto fail;
        }
        rows[i] = (uint32_t)r64[i];
    }
    ssk_py_shape vs = {2, {"N", "3"}, {n, 3}};
    if (!(vec = ssk_py_float_array(vec_obj, "vectors", &vs))) goto fail;
    ssk_py_shape ss = {3, {"B", "4", "4"}, {ssk_rig_bone_count(rig), 4, 4}};
    if (!(skin = ssk_py_float_array(skin_obj, "skinning_matrices", &ss))) goto fail;
    if (objects_obj != Py_None) {
        ssk_py_shape os = {3, {"M", "4", "4"}, {ssk_rig_mesh_count(rig), 4, 4}};
        if (!(objects = ssk_py_float_array(objects_obj, "object_matrices", &os))) goto fail;
    }
    npy_intp dims[2] = {n, 3};
    if (!(out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT32))) goto fail;
    ssk_error err = {0};
    ssk_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ssk_rig_skin_vectors(PyArray_DATA(out), rig, rows, (uint32_t)n, PyArray_DATA(vec),
                              PyArray_DATA(skin), objects ? PyArray_DATA(objects) : NULL, method,
                              &err);
    Py_END_ALLOW_THREADS
    if (st != SSK_OK) {
        ssk_py_raise(&err, "skin_vectors: ", NULL);
        goto fail;
    }
    free(rows);
    Py_DECREF(rows64);
    Py_DECREF(vec);
    Py_DECREF(skin);
    Py_XDECREF(objects);
    return (PyObject *)out;
fail:
    free(rows);
    Py_XDECREF(out);
    Py_XDECREF(objects);
    Py_XDECREF(skin);
    Py_XDECREF(vec);
    Py_XDECREF(rows64);
    return NULL;
}
