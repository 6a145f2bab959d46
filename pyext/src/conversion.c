/*
 * conversion.c — numpy arrays in and out of springskin._core.
 *
 * Inputs: any array-like of the right dtype KIND is accepted, whatever its
 * strides, byte order or alignment, and converted with PyArray_FROM_OTF to an
 * aligned, native, C-contiguous float32 (positions, matrices, weights) or
 * int64 (indices, range-checked by the caller, then narrowed to int32)
 * array; a conversion copies only when the input is not already in that
 * form. The kind is checked before converting, so FORCECAST never turns a
 * bool, complex or integer array into floats silently. Every message names
 * the argument and the expected shape.
 */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Room for a formatted shape or index: SSK_PY_MAX_DIMS numbers of up to 20
 * digits, separators and the symbols. */
#define SHAPE_TEXT_SIZE 256

void ssk_py_format_shape(char *buf, size_t size, const ssk_py_shape *shape)
{
    size_t n = 0;
    int bound = 0;
    n += (size_t)snprintf(buf + n, size - n, "(");
    for (int d = 0; d < shape->ndim && n < size; ++d) {
        n += (size_t)snprintf(buf + n, size - n, "%s%s", d ? ", " : "", shape->symbols[d]);
        /* a symbol that is a letter and whose size is known is "bound" */
        if (shape->sizes[d] != SSK_PY_ANY && shape->symbols[d][0] >= 'A' &&
            shape->symbols[d][0] <= 'z')
            bound = 1;
    }
    if (n < size) n += (size_t)snprintf(buf + n, size - n, shape->ndim == 1 ? ",)" : ")");
    if (!bound || n >= size) return;
    n += (size_t)snprintf(buf + n, size - n, " = (");
    for (int d = 0; d < shape->ndim && n < size; ++d) {
        if (shape->sizes[d] == SSK_PY_ANY)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", d ? ", " : "", shape->symbols[d]);
        else
            n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "",
                                  (long long)shape->sizes[d]);
    }
    if (n < size) snprintf(buf + n, size - n, shape->ndim == 1 ? ",)" : ")");
}

static void format_dims(char *buf, size_t size, int ndim, const npy_intp *dims)
{
    size_t n = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && n < size; ++d)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (n < size) snprintf(buf + n, size - n, ndim == 1 ? ",)" : ")");
}

/* "[3, 1]": the multi-index of flat element `flat` of a C-ordered array. */
static void format_index(char *buf, size_t size, int ndim, const npy_intp *dims, npy_intp flat)
{
    npy_intp index[NPY_MAXDIMS];
    for (int d = ndim - 1; d >= 0; --d) {
        index[d] = dims[d] ? flat % dims[d] : 0;
        flat = dims[d] ? flat / dims[d] : 0;
    }
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && n < size; ++d)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)index[d]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

/* obj as an ndarray (new reference), any dtype; TypeError naming `name`
 * when numpy cannot convert it. */
static PyArrayObject *as_array(PyObject *obj, const char *name, const ssk_py_shape *shape)
{
    if (PyArray_Check(obj)) {
        Py_INCREF(obj);
        return (PyArrayObject *)obj;
    }
    PyObject *array = PyArray_FROM_O(obj);
    if (array) return (PyArrayObject *)array;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    char expected[SHAPE_TEXT_SIZE];
    ssk_py_format_shape(expected, sizeof expected, shape);
    PyErr_Format(PyExc_TypeError, "%s: expected an array of shape %s, got %.100s, which numpy "
                                  "cannot convert (%S)",
                 name, expected, Py_TYPE(obj)->tp_name, value ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return NULL;
}

/* TypeError "name: expected <what>, got dtype int64" (plus the Python type
 * when the input was not an ndarray). */
static void dtype_error(PyObject *obj, PyArrayObject *array, const char *name, const char *what)
{
    PyObject *dtype = PyObject_Str((PyObject *)PyArray_DESCR(array));
    if (!dtype) return;
    if (PyArray_Check(obj))
        PyErr_Format(PyExc_TypeError, "%s: expected %s, got an array of dtype %U", name, what,
                     dtype);
    else
        PyErr_Format(PyExc_TypeError, "%s: expected %s, got %.100s (dtype %U)", name, what,
                     Py_TYPE(obj)->tp_name, dtype);
    Py_DECREF(dtype);
}

/* Checks ndim and the known sizes; fills the free ones. */
static int check_shape(PyArrayObject *array, const char *name, ssk_py_shape *shape)
{
    int ndim = PyArray_NDIM(array);
    const npy_intp *dims = PyArray_DIMS(array);
    int ok = ndim == shape->ndim;
    for (int d = 0; ok && d < ndim; ++d)
        if (shape->sizes[d] != SSK_PY_ANY && shape->sizes[d] != dims[d]) ok = 0;
    if (!ok) {
        char expected[SHAPE_TEXT_SIZE], got[SHAPE_TEXT_SIZE];
        ssk_py_format_shape(expected, sizeof expected, shape);
        format_dims(got, sizeof got, ndim, dims);
        PyErr_Format(PyExc_ValueError, "%s: expected shape %s, got %s", name, expected, got);
        return -1;
    }
    for (int d = 0; d < ndim; ++d) shape->sizes[d] = dims[d];
    return 0;
}

/* ValueError "name: non-finite value (nan) at [3, 1]..." for element `flat`,
 * or (range) "name: value 3e+38 at [3, 1] is beyond SSK_MAX_MAGNITUDE ..."
 * for a finite value too large for the kernels (issue #19). */
static void non_finite_error(const char *name, PyArrayObject *array, npy_intp flat,
                             double value, int range)
{
    char index[SHAPE_TEXT_SIZE], text[32];
    format_index(index, sizeof index, PyArray_NDIM(array), PyArray_DIMS(array), flat);
    if (range) {
        snprintf(text, sizeof text, "%g", value);
        PyErr_Format(PyExc_ValueError,
                     "%s: value %s at %s is beyond SSK_MAX_MAGNITUDE (|x| <= 1e15: larger "
                     "values overflow float32 in the kernels)",
                     name, text, index);
        return;
    }
    PyErr_Format(PyExc_ValueError, "%s: non-finite value (%s) at %s; every value must be finite",
                 name, isnan(value) ? "nan" : value > 0 ? "inf" : "-inf", index);
}

PyArrayObject *ssk_py_float_array(PyObject *obj, const char *name, ssk_py_shape *shape)
{
    PyArrayObject *array = as_array(obj, name, shape), *wide = NULL, *converted = NULL;
    if (!array) return NULL;
    if (PyArray_DESCR(array)->kind != 'f') {
        dtype_error(obj, array, name, "floating-point values (float32 or float64)");
        goto fail;
    }
    if (check_shape(array, name, shape) != 0) goto fail;
    const int requirements = NPY_ARRAY_IN_ARRAY | NPY_ARRAY_NOTSWAPPED | NPY_ARRAY_FORCECAST;
    if (PyArray_TYPE(array) == NPY_FLOAT32) {
        /* float32 of any byte order and strides: no copy when already native
         * and C-contiguous */
        converted = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)array, NPY_FLOAT32,
                                                      requirements);
        if (!converted) goto fail;
        const float *data = PyArray_DATA(converted);
        const npy_intp count = PyArray_SIZE(converted);
        for (npy_intp i = 0; i < count; ++i)
            if (!(fabsf(data[i]) <= SSK_MAX_MAGNITUDE)) {
                non_finite_error(name, converted, i, data[i], isfinite(data[i]));
                goto fail;
            }
    } else {
        /* float16/64 (and longer): through native float64, checked against
         * the float32 range before narrowing, so nothing overflows silently
         * (or with numpy's cast warning) */
        wide = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)array, NPY_FLOAT64, requirements);
        if (!wide) goto fail;
        converted = (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(wide), PyArray_DIMS(wide),
                                                       NPY_FLOAT32);
        if (!converted) goto fail;
        const double *src = PyArray_DATA(wide);
        float *dst = PyArray_DATA(converted);
        const npy_intp count = PyArray_SIZE(wide);
        for (npy_intp i = 0; i < count; ++i) {
            /* checked before narrowing: nothing overflows silently */
            if (!(fabs(src[i]) <= SSK_MAX_MAGNITUDE)) {
                non_finite_error(name, wide, i, src[i], isfinite(src[i]));
                goto fail;
            }
            dst[i] = (float)src[i];
        }
    }
    Py_XDECREF(wide);
    Py_DECREF(array);
    return converted;
fail:
    Py_XDECREF(converted);
    Py_XDECREF(wide);
    Py_DECREF(array);
    return NULL;
}

PyArrayObject *ssk_py_double_array(PyObject *obj, const char *name, ssk_py_shape *shape)
{
    PyArrayObject *array = as_array(obj, name, shape), *converted = NULL;
    if (!array) return NULL;
    const char kind = PyArray_DESCR(array)->kind;
    if (kind != 'f' && kind != 'i' && kind != 'u') {
        dtype_error(obj, array, name, "real numbers (float or integer)");
        goto fail;
    }
    if (check_shape(array, name, shape) != 0) goto fail;
    converted = (PyArrayObject *)PyArray_FROM_OTF(
        (PyObject *)array, NPY_FLOAT64,
        NPY_ARRAY_IN_ARRAY | NPY_ARRAY_NOTSWAPPED | NPY_ARRAY_FORCECAST);
    if (!converted) goto fail;
    const double *data = PyArray_DATA(converted);
    const npy_intp count = PyArray_SIZE(converted);
    for (npy_intp i = 0; i < count; ++i)
        if (!(fabs(data[i]) <= SSK_MAX_MAGNITUDE)) {
            non_finite_error(name, converted, i, data[i], isfinite(data[i]));
            goto fail;
        }
    Py_DECREF(array);
    return converted;
fail:
    Py_XDECREF(converted);
    Py_DECREF(array);
    return NULL;
}

PyArrayObject *ssk_py_index_array(PyObject *obj, const char *name, ssk_py_shape *shape)
{
    PyArrayObject *array = as_array(obj, name, shape), *converted = NULL;
    if (!array) return NULL;
    const char kind = PyArray_DESCR(array)->kind;
    if (kind != 'i' && kind != 'u') {
        dtype_error(obj, array, name, "integer indices (int32 or int64)");
        goto fail;
    }
    if (check_shape(array, name, shape) != 0) goto fail;
    converted = (PyArrayObject *)PyArray_FROM_OTF(
        (PyObject *)array, NPY_INT64,
        NPY_ARRAY_IN_ARRAY | NPY_ARRAY_NOTSWAPPED | NPY_ARRAY_FORCECAST);
    if (!converted) goto fail;
    Py_DECREF(array);
    return converted;
fail:
    Py_XDECREF(converted);
    Py_DECREF(array);
    return NULL;
}

PyArrayObject *ssk_py_to_int32(PyArrayObject *a64)
{
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(a64),
                                                            PyArray_DIMS(a64), NPY_INT32);
    if (!out) return NULL;
    const int64_t *src = PyArray_DATA(a64);
    int32_t *dst = PyArray_DATA(out);
    const npy_intp count = PyArray_SIZE(a64);
    for (npy_intp i = 0; i < count; ++i) dst[i] = (int32_t)src[i];
    return out;
}

int ssk_py_check_out(PyObject *out, const char *name, const ssk_py_shape *shape)
{
    char expected[SHAPE_TEXT_SIZE];
    ssk_py_format_shape(expected, sizeof expected, shape);
    if (!PyArray_Check(out)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a C-contiguous float32 numpy array of shape %s, got %.100s",
                     name, expected, Py_TYPE(out)->tp_name);
        return -1;
    }
    PyArrayObject *array = (PyArrayObject *)out;
    if (PyArray_TYPE(array) != NPY_FLOAT32 || !PyArray_ISNOTSWAPPED(array)) {
        PyObject *dtype = PyObject_Str((PyObject *)PyArray_DESCR(array));
        if (dtype)
            PyErr_Format(PyExc_TypeError,
                         "%s: expected a native float32 array of shape %s (written in "
                         "place), got dtype %U",
                         name, expected, dtype);
        Py_XDECREF(dtype);
        return -1;
    }
    int ok = PyArray_NDIM(array) == shape->ndim;
    for (int d = 0; ok && d < shape->ndim; ++d)
        if (PyArray_DIMS(array)[d] != shape->sizes[d]) ok = 0;
    if (!ok) {
        char got[SHAPE_TEXT_SIZE];
        format_dims(got, sizeof got, PyArray_NDIM(array), PyArray_DIMS(array));
        PyErr_Format(PyExc_ValueError, "%s: expected shape %s, got %s", name, expected, got);
        return -1;
    }
    if (!PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: expected a C-contiguous, aligned array of shape %s (written in "
                     "place); use numpy.ascontiguousarray or let deform allocate",
                     name, expected);
        return -1;
    }
    if (!PyArray_ISWRITEABLE(array)) {
        PyErr_Format(PyExc_ValueError, "%s: the array of shape %s is read-only", name,
                     expected);
        return -1;
    }
    return 0;
}

PyObject *ssk_py_view(PyObject *base, int typenum, int ndim, const npy_intp *dims,
                      const void *data)
{
    PyArrayObject *array;
    if (!data) {
        /* an empty array (e.g. no triangles): nothing to share */
        array = (PyArrayObject *)PyArray_ZEROS(ndim, (npy_intp *)dims, typenum, 0);
        if (!array) return NULL;
    } else {
        array = (PyArrayObject *)PyArray_SimpleNewFromData(ndim, (npy_intp *)dims, typenum,
                                                           (void *)data);
        if (!array) return NULL;
        Py_INCREF(base);
        if (PyArray_SetBaseObject(array, base) != 0) {
            Py_DECREF(array);
            return NULL;
        }
    }
    PyArray_CLEARFLAGS(array, NPY_ARRAY_WRITEABLE);
    return (PyObject *)array;
}

PyObject *ssk_py_copy(int typenum, int ndim, const npy_intp *dims, const void *data)
{
    PyArrayObject *array = (PyArrayObject *)PyArray_SimpleNew(ndim, (npy_intp *)dims, typenum);
    if (!array) return NULL;
    if (data && PyArray_NBYTES(array)) memcpy(PyArray_DATA(array), data, PyArray_NBYTES(array));
    return (PyObject *)array;
}

PyObject *ssk_py_path(PyObject *obj, const char *name)
{
    PyObject *bytes = NULL;
    if (!PyUnicode_Check(obj) && !PyBytes_Check(obj) &&
        !PyObject_HasAttrString(obj, "__fspath__")) {
        PyErr_Format(PyExc_TypeError, "%s: expected a path (str or os.PathLike), got %.100s",
                     name, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (!PyUnicode_FSConverter(obj, &bytes)) return NULL;
    if (PyBytes_GET_SIZE(bytes) == 0) {
        Py_DECREF(bytes);
        PyErr_Format(PyExc_ValueError, "%s: empty path", name);
        return NULL;
    }
    return bytes;
}

void ssk_py_progress_call(void *user, uint32_t done, uint32_t total)
{
    ssk_py_progress *p = user;
    if (p->failed) return;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *r = PyObject_CallFunction(p->fn, "d", total ? (double)done / total : 1.0);
    if (!r) {
        PyErr_WriteUnraisable(p->fn);
        p->failed = 1;
    }
    Py_XDECREF(r);
    PyGILState_Release(gil);
}

int ssk_py_progress_check(PyObject *fn)
{
    if (fn == Py_None || PyCallable_Check(fn)) return 0;
    PyErr_Format(PyExc_TypeError, "progress: expected a callable or None, got %.100s",
                 Py_TYPE(fn)->tp_name);
    return -1;
}
