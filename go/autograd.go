package ferrotorch

/*
#include "ferrotorch.h"
*/
import "C"

import "runtime"

// RequiresGrad reports whether gradients flow to t (t.requires_grad).
func (t Tensor) RequiresGrad() bool {
	var b C.bool
	C.ft_tensor_requires_grad(t.ptr(), &b)
	runtime.KeepAlive(t.h)
	return bool(b)
}

// SetRequiresGrad is t.requires_grad_(b): leaves of floating dtypes only.
// It returns t.
func (t Tensor) SetRequiresGrad(b bool) (Tensor, error) {
	err := call(func() C.FtStatus { return C.ft_tensor_set_requires_grad(t.ptr(), C.bool(b)) })
	runtime.KeepAlive(t.h)
	return t, err
}

// MustSetRequiresGrad is SetRequiresGrad, panicking on error.
func (t Tensor) MustSetRequiresGrad(b bool) Tensor {
	_, err := t.SetRequiresGrad(b)
	must(err)
	return t
}

// Grad is t.grad; the zero Tensor when there is none.
func (t Tensor) Grad() Tensor {
	var g *C.FtTensor
	if call(func() C.FtStatus { return C.ft_tensor_grad(t.ptr(), &g) }) != nil || g == nil {
		return Tensor{}
	}
	runtime.KeepAlive(t.h)
	return wrap(g, 0)
}

// SetGrad sets t.grad (the zero Tensor clears it).
func (t Tensor) SetGrad(g Tensor) error {
	err := call(func() C.FtStatus { return C.ft_tensor_set_grad(t.ptr(), g.ptr()) })
	runtime.KeepAlive(t.h)
	runtime.KeepAlive(g.h)
	return err
}

// Backward computes gradients of t (a one-element tensor) with respect to
// the leaves it depends on (t.backward()).
func (t Tensor) Backward() error {
	return t.BackwardWith(Tensor{}, false, false)
}

// MustBackward is Backward, panicking on error.
func (t Tensor) MustBackward() {
	must(t.Backward())
}

// BackwardWith is t.backward(gradient, retain_graph, create_graph);
// gradient may be the zero Tensor for a one-element t.
func (t Tensor) BackwardWith(gradient Tensor, retainGraph, createGraph bool) error {
	err := call(func() C.FtStatus {
		return C.ft_tensor_backward(t.ptr(), gradient.ptr(), C.bool(retainGraph), C.bool(createGraph))
	})
	runtime.KeepAlive(t.h)
	runtime.KeepAlive(gradient.h)
	return err
}

// Detach is t.detach(): the same data, outside the graph.
func (t Tensor) Detach() Tensor {
	var out *C.FtTensor
	if call(func() C.FtStatus { return C.ft_tensor_detach(t.ptr(), &out) }) != nil {
		return Tensor{}
	}
	runtime.KeepAlive(t.h)
	return wrap(out, 0)
}

// IsGradEnabled reports whether ops record the graph
// (torch.is_grad_enabled()) on the calling goroutine's thread.
func IsGradEnabled() bool {
	return bool(C.ft_is_grad_enabled())
}

// NoGrad runs f without recording the graph (with torch.no_grad():).
// Grad mode is per thread in ferrotorch, as in torch, so f runs with the
// goroutine locked to its thread; goroutines f starts record as usual.
func NoGrad(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev C.bool
	C.ft_set_grad_enabled(false, &prev)
	defer C.ft_set_grad_enabled(prev, nil)
	f()
}
