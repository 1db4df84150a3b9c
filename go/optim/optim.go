// Package optim is torch.optim for Go: SGD, Adam and AdamW over a list of
// tensors (a module's Parameters()), updating them in place, and the
// learning-rate schedulers StepLR, ExponentialLR and CosineAnnealingLR.
// They run ferrotorch's fused optimizer kernels through the C ABI.
package optim

/*
#cgo CFLAGS: -I${SRCDIR}/../../crates/ferrotorch-c/include
#cgo LDFLAGS: -lferrotorch_c
#include "ferrotorch.h"
#include <stdlib.h>
*/
import "C"

import (
	"runtime"
	"unsafe"

	ft "ferrotorch"
)

func check(s C.FtStatus) error {
	if s == 0 {
		return nil
	}
	return &ft.Error{Status: ft.Status(s), Message: C.GoString(C.ft_last_error())}
}

// call runs one C call locked to its thread (the error message is per
// thread; see Note [Errors across cgo] in package ferrotorch).
func call(f func() C.FtStatus) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(f())
}

// Optimizer updates parameters from their gradients.
type Optimizer struct {
	p      *C.FtOptimizer
	params []ft.Tensor // kept reachable: the optimizer updates them
}

func handles(params []ft.Tensor) (unsafe.Pointer, int) {
	if len(params) == 0 {
		return nil, 0
	}
	arr := C.malloc(C.size_t(len(params)) * C.size_t(unsafe.Sizeof(uintptr(0))))
	s := unsafe.Slice((**C.FtTensor)(arr), len(params))
	for i, p := range params {
		s[i] = (*C.FtTensor)(p.C())
	}
	return arr, len(params)
}

func newOptimizer(params []ft.Tensor, make func(**C.FtTensor, C.size_t, **C.FtOptimizer) C.FtStatus) (*Optimizer, error) {
	arr, n := handles(params)
	defer C.free(arr)
	var p *C.FtOptimizer
	err := call(func() C.FtStatus { return make((**C.FtTensor)(arr), C.size_t(n), &p) })
	runtime.KeepAlive(params)
	if err != nil {
		return nil, err
	}
	o := &Optimizer{p: p, params: params}
	runtime.SetFinalizer(o, func(o *Optimizer) { C.ft_optimizer_free(o.p) })
	return o, nil
}

// SGD is optim.SGD(params, lr, momentum, dampening=0, weight_decay,
// nesterov=false).
func SGD(params []ft.Tensor, lr, momentum, weightDecay float64) (*Optimizer, error) {
	return newOptimizer(params, func(ps **C.FtTensor, n C.size_t, out **C.FtOptimizer) C.FtStatus {
		return C.ft_optim_sgd(ps, n, C.double(lr), C.double(momentum), 0, C.double(weightDecay), false, out)
	})
}

// Adam is optim.Adam(params, lr, betas=(0.9, 0.999), eps=1e-8,
// weight_decay).
func Adam(params []ft.Tensor, lr, weightDecay float64) (*Optimizer, error) {
	return newOptimizer(params, func(ps **C.FtTensor, n C.size_t, out **C.FtOptimizer) C.FtStatus {
		return C.ft_optim_adam(ps, n, C.double(lr), 0.9, 0.999, 1e-8, C.double(weightDecay), out)
	})
}

// AdamW is optim.AdamW(params, lr, betas=(0.9, 0.999), eps=1e-8,
// weight_decay).
func AdamW(params []ft.Tensor, lr, weightDecay float64) (*Optimizer, error) {
	return newOptimizer(params, func(ps **C.FtTensor, n C.size_t, out **C.FtOptimizer) C.FtStatus {
		return C.ft_optim_adamw(ps, n, C.double(lr), 0.9, 0.999, 1e-8, C.double(weightDecay), out)
	})
}

// Step applies one update (optimizer.step()).
func (o *Optimizer) Step() error {
	err := call(func() C.FtStatus { return C.ft_optimizer_step(o.p) })
	runtime.KeepAlive(o)
	return err
}

// ZeroGrad clears the gradients (optimizer.zero_grad()).
func (o *Optimizer) ZeroGrad() {
	C.ft_optimizer_zero_grad(o.p)
	runtime.KeepAlive(o)
}

// LR is the learning rate of the (first) parameter group.
func (o *Optimizer) LR() float64 {
	var lr C.double
	C.ft_optimizer_get_lr(o.p, 0, &lr)
	runtime.KeepAlive(o)
	return float64(lr)
}

// SetLR sets the learning rate of the (first) parameter group.
func (o *Optimizer) SetLR(lr float64) {
	C.ft_optimizer_set_lr(o.p, 0, C.double(lr))
	runtime.KeepAlive(o)
}

// Scheduler changes an optimizer's learning rate once per epoch.
type Scheduler struct {
	p   *C.FtScheduler
	opt *Optimizer
}

func newScheduler(o *Optimizer, make func(**C.FtScheduler) C.FtStatus) (*Scheduler, error) {
	var p *C.FtScheduler
	if err := call(func() C.FtStatus { return make(&p) }); err != nil {
		return nil, err
	}
	s := &Scheduler{p: p, opt: o}
	runtime.SetFinalizer(s, func(s *Scheduler) { C.ft_scheduler_free(s.p) })
	return s, nil
}

// StepLR is lr_scheduler.StepLR(optimizer, step_size, gamma).
func StepLR(o *Optimizer, stepSize int, gamma float64) (*Scheduler, error) {
	return newScheduler(o, func(out **C.FtScheduler) C.FtStatus {
		return C.ft_lr_step(o.p, C.size_t(stepSize), C.double(gamma), out)
	})
}

// ExponentialLR is lr_scheduler.ExponentialLR(optimizer, gamma).
func ExponentialLR(o *Optimizer, gamma float64) (*Scheduler, error) {
	return newScheduler(o, func(out **C.FtScheduler) C.FtStatus {
		return C.ft_lr_exponential(o.p, C.double(gamma), out)
	})
}

// CosineAnnealingLR is lr_scheduler.CosineAnnealingLR(optimizer, T_max,
// eta_min).
func CosineAnnealingLR(o *Optimizer, tMax int, etaMin float64) (*Scheduler, error) {
	return newScheduler(o, func(out **C.FtScheduler) C.FtStatus {
		return C.ft_lr_cosine(o.p, C.size_t(tMax), C.double(etaMin), out)
	})
}

// Step advances one epoch (scheduler.step()).
func (s *Scheduler) Step() error {
	err := call(func() C.FtStatus { return C.ft_scheduler_step(s.p, s.opt.p) })
	runtime.KeepAlive(s)
	return err
}

// LastLR is scheduler.get_last_lr()[0].
func (s *Scheduler) LastLR() float64 {
	var lr C.double
	C.ft_scheduler_get_last_lr(s.p, 0, &lr)
	runtime.KeepAlive(s)
	return float64(lr)
}
