// Package jit runs saved programs (torch.jit.save output of ferrotorch's
// tracer) from Go: load a file, call Forward. Loading validates the file
// and never runs code from it.
package jit

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

// ScriptModule is a loaded program (torch.jit.ScriptModule).
type ScriptModule struct {
	p *C.FtScriptModule
}

// call is ft.CallC for this package's C calls.
func call(f func() C.FtStatus) error { return ft.CallC(func() int32 { return int32(f()) }) }

// Load reads a saved program (torch.jit.load).
func Load(path string) (*ScriptModule, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var p *C.FtScriptModule
	if err := call(func() C.FtStatus { return C.ft_script_module_load(cp, &p) }); err != nil {
		return nil, err
	}
	m := &ScriptModule{p}
	runtime.SetFinalizer(m, func(m *ScriptModule) { C.ft_script_module_free(m.p) })
	return m, nil
}

// Forward runs the program on inputs and returns its outputs.
func (m *ScriptModule) Forward(inputs ...ft.Tensor) ([]ft.Tensor, error) {
	n := len(inputs)
	arr := C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(arr)
	s := unsafe.Slice((**C.FtTensor)(arr), n+1)
	for i, t := range inputs {
		s[i] = (*C.FtTensor)(t.C())
	}
	const capacity = 16
	var outs [capacity]*C.FtTensor
	var got C.size_t
	err := call(func() C.FtStatus {
		return C.ft_script_module_forward(m.p, (**C.FtTensor)(arr), C.size_t(n), &outs[0], capacity, &got)
	})
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	res := make([]ft.Tensor, int(got))
	for i := range res {
		res[i] = ft.WrapC(unsafe.Pointer(outs[i]))
	}
	return res, nil
}
