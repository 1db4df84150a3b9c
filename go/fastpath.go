package ferrotorch

/*
#include "ferrotorch.h"
#include <string.h>

// Note [The Go fast path]: a call whose arguments are only tensors builds
// its boxed values on the C stack here, so no Go memory crosses into C
// (cgo would move the Go buffers to the heap) and the result comes back by
// value: one cgo call, no allocation on the Go side but the handle. The
// same call first frees the handles Go's finalizers queued (Note [Go
// finalizer cost]), so a loop of small ops pays no cgo call for frees.
typedef struct {
	FtStatus status;
	FtTensor *tensor;
	size_t nbytes;
} go_result;

static size_t go_nbytes(FtTensor *t) {
	size_t n = 0;
	int32_t d = 0;
	ft_tensor_numel(t, &n);
	ft_tensor_dtype(t, &d);
	switch (d) {
	case FT_UINT8: case FT_INT8: case FT_BOOL: return n;
	case FT_INT16: case FT_FLOAT16: case FT_BFLOAT16: return 2 * n;
	case FT_INT32: case FT_FLOAT32: return 4 * n;
	default: return 8 * n;
	}
}

static go_result go_call_tensors(FtTensor **freeq, size_t nfree, uint32_t id, int n, FtTensor *a, FtTensor *b, FtTensor *c) {
	go_result r = {0, NULL, 0};
	if (nfree) ft_tensor_free_many(freeq, nfree);
	FtValue args[3];
	FtTensor *ts[3] = {a, b, c};
	memset(args, 0, sizeof args);
	for (int i = 0; i < n; i++) {
		args[i].tag = ts[i] ? FT_TAG_TENSOR : FT_TAG_NONE;
		args[i].tensor = ts[i];
	}
	FtValue out;
	size_t got = 0;
	r.status = ft_op_call(id, args, (size_t)n, NULL, 0, &out, 1, &got);
	if (r.status == FT_OK && got == 1 && out.tag == FT_TAG_TENSOR) {
		r.tensor = out.tensor;
		r.nbytes = out.len;
	}
	return r;
}

// The typed entry points of the common ops (ferrotorch.h), by number.
static go_result go_typed(FtTensor **freeq, size_t nfree, int op, FtTensor *a, FtTensor *b) {
	go_result r = {0, NULL, 0};
	if (nfree) ft_tensor_free_many(freeq, nfree);
	FtTensor *out = NULL;
	switch (op) {
	case 0: r.status = ft_add(a, b, &out); break;
	case 1: r.status = ft_sub(a, b, &out); break;
	case 2: r.status = ft_mul(a, b, &out); break;
	case 3: r.status = ft_div(a, b, &out); break;
	case 4: r.status = ft_matmul(a, b, &out); break;
	case 5: r.status = ft_mm(a, b, &out); break;
	case 6: r.status = ft_neg(a, &out); break;
	case 7: r.status = ft_exp(a, &out); break;
	case 8: r.status = ft_log(a, &out); break;
	case 9: r.status = ft_tanh(a, &out); break;
	case 10: r.status = ft_sigmoid(a, &out); break;
	case 11: r.status = ft_relu(a, &out); break;
	default: r.status = FT_ERROR_VALUE; return r;
	}
	if (r.status == FT_OK) {
		r.tensor = out;
		r.nbytes = go_nbytes(out);
	}
	return r;
}
*/
import "C"

import "runtime"

// typed entry point numbers (go_typed).
const (
	typedAdd = iota
	typedSub
	typedMul
	typedDiv
	typedMatmul
	typedMM
	typedNeg
	typedExp
	typedLog
	typedTanh
	typedSigmoid
	typedRelu
)

func goResult(r C.go_result) (Tensor, error) {
	if r.status != 0 {
		return Tensor{}, lastError(r.status)
	}
	if r.tensor == nil {
		return Tensor{}, &Error{StatusType, "expected one tensor result"}
	}
	return wrap(r.tensor, int64(r.nbytes)), nil
}

// freeQueueArg takes the queued handles for an op call to free.
func freeQueueArg() ([]*C.FtTensor, **C.FtTensor) {
	q := takeFreeQueue()
	if len(q) == 0 {
		return q, nil
	}
	return q, &q[0]
}

// fastTensors calls op with n tensor arguments (Note [The Go fast path]).
func fastTensors(op *opRef, n int, a, b, c Tensor) (Tensor, error) {
	id, err := op.resolve()
	if err != nil {
		return Tensor{}, err
	}
	q, qp := freeQueueArg()
	runtime.LockOSThread()
	r := C.go_call_tensors(qp, C.size_t(len(q)), id, C.int(n), a.ptr(), b.ptr(), c.ptr())
	t, err := goResult(r)
	runtime.UnlockOSThread()
	putFreeQueue(q)
	runtime.KeepAlive(a.h)
	runtime.KeepAlive(b.h)
	runtime.KeepAlive(c.h)
	return t, err
}

// typed calls a typed entry point of the C ABI.
func typed(op int, a, b Tensor) (Tensor, error) {
	q, qp := freeQueueArg()
	runtime.LockOSThread()
	r := C.go_typed(qp, C.size_t(len(q)), C.int(op), a.ptr(), b.ptr())
	t, err := goResult(r)
	runtime.UnlockOSThread()
	putFreeQueue(q)
	runtime.KeepAlive(a.h)
	runtime.KeepAlive(b.h)
	return t, err
}
