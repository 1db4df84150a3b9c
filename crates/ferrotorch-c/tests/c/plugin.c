/*
 * A ferrotorch plugin (Note [Plugin ABI]): two custom ops written in C,
 * registered when torch.ops.load_library / ferrotorch_c::plugin::
 * load_library loads this file. It calls the library only through the
 * pointers get_proc gives (it does not link libferrotorch_c).
 *
 *   ftplugin::axpy(Tensor x, Tensor y, float a=1.0) -> Tensor
 *       a * x + y for float32 tensors of one shape, in a C loop;
 *   ftplugin::twice(Tensor x) -> Tensor
 *       x + x, by calling the library's own add op.
 *
 * Built with -DFT_TEST_ABI=<n> it claims plugin ABI version n instead,
 * which loading must refuse.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ferrotorch.h"

static __typeof__(ft_set_error) *set_error;
static __typeof__(ft_library_def) *library_def;
static __typeof__(ft_tensor_numel) *tensor_numel;
static __typeof__(ft_tensor_dtype) *tensor_dtype;
static __typeof__(ft_tensor_shape) *tensor_shape;
static __typeof__(ft_tensor_copy_to) *tensor_copy_to;
static __typeof__(ft_tensor_from_data) *tensor_from_data;
static __typeof__(ft_call) *call;

#define MAX_DIMS 16

static FtStatus axpy(void *user_data, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    if (nargs != 3) {
        set_error("axpy: expected 3 arguments");
        return FT_ERROR_TYPE;
    }
    const FtTensor *x = args[0].tensor, *y = args[1].tensor;
    double a = args[2].f;
    int32_t dx, dy;
    size_t n, ny, ndim, ndim_y;
    int64_t shape[MAX_DIMS], shape_y[MAX_DIMS];
    if (tensor_dtype(x, &dx) || tensor_dtype(y, &dy) || tensor_numel(x, &n) ||
        tensor_numel(y, &ny) || tensor_shape(x, shape, MAX_DIMS, &ndim) ||
        tensor_shape(y, shape_y, MAX_DIMS, &ndim_y))
        return FT_ERROR_RUNTIME; /* the library set the message */
    if (dx != FT_FLOAT32 || dy != FT_FLOAT32) {
        set_error("axpy: x and y must be float32");
        return FT_ERROR_TYPE;
    }
    int same = ndim == ndim_y;
    for (size_t i = 0; same && i < ndim; i++)
        same = shape[i] == shape_y[i];
    if (!same) {
        set_error("axpy: x and y must have the same shape");
        return FT_ERROR_VALUE;
    }
    float *xs = malloc(n * sizeof(float) + 1), *ys = malloc(n * sizeof(float) + 1);
    FtStatus s = FT_OK;
    if (!xs || !ys) {
        set_error("axpy: out of memory");
        s = FT_ERROR_RUNTIME;
    }
    if (s == FT_OK)
        s = tensor_copy_to(x, xs, n * sizeof(float));
    if (s == FT_OK)
        s = tensor_copy_to(y, ys, n * sizeof(float));
    if (s == FT_OK) {
        for (size_t i = 0; i < n; i++)
            ys[i] = (float)a * xs[i] + ys[i];
        FtTensor *out;
        s = tensor_from_data(ys, n * sizeof(float), shape, ndim, FT_FLOAT32, &out);
        if (s == FT_OK) {
            result->tag = FT_TAG_TENSOR;
            result->tensor = out;
        }
    }
    free(xs);
    free(ys);
    return s;
}

static FtStatus twice(void *user_data, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)nargs;
    FtValue both[2] = {args[0], args[0]};
    size_t n = 0;
    return call("add", both, 2, NULL, 0, result, 1, &n);
}

uint32_t ferrotorch_plugin_abi_version(void) {
#ifdef FT_TEST_ABI
    return FT_TEST_ABI;
#else
    return FT_PLUGIN_ABI_VERSION;
#endif
}

FtStatus ferrotorch_plugin_init(FtGetProc get_proc) {
    set_error = (__typeof__(set_error))get_proc("ft_set_error");
    library_def = (__typeof__(library_def))get_proc("ft_library_def");
    tensor_numel = (__typeof__(tensor_numel))get_proc("ft_tensor_numel");
    tensor_dtype = (__typeof__(tensor_dtype))get_proc("ft_tensor_dtype");
    tensor_shape = (__typeof__(tensor_shape))get_proc("ft_tensor_shape");
    tensor_copy_to = (__typeof__(tensor_copy_to))get_proc("ft_tensor_copy_to");
    tensor_from_data = (__typeof__(tensor_from_data))get_proc("ft_tensor_from_data");
    call = (__typeof__(call))get_proc("ft_call");
    if (!set_error || !library_def || !tensor_numel || !tensor_dtype || !tensor_shape ||
        !tensor_copy_to || !tensor_from_data || !call || get_proc("ft_no_such_function"))
        return FT_ERROR_RUNTIME;
    FtStatus s = library_def("ftplugin::axpy(Tensor x, Tensor y, float a=1.0) -> Tensor", axpy, NULL);
    if (s != FT_OK)
        return s;
    return library_def("ftplugin::twice(Tensor x) -> Tensor", twice, NULL);
}
