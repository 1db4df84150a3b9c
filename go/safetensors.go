package ferrotorch

/*
#include "ferrotorch.h"
#include <stdlib.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Named is a tensor with its dotted name (a state dict entry).
type Named struct {
	Name   string
	Tensor Tensor
}

// SaveSafetensors writes named tensors to a safetensors file at path
// (atomically), readable by safetensors.torch.load_file and by
// ferrotorch's Python package.
func SaveSafetensors(entries []Named, path string) error {
	var sd *C.FtStateDict
	if err := call(func() C.FtStatus { return C.ft_state_dict_new(&sd) }); err != nil {
		return err
	}
	defer C.ft_state_dict_free(sd)
	for _, e := range entries {
		cs := C.CString(e.Name)
		err := call(func() C.FtStatus { return C.ft_state_dict_insert(sd, cs, e.Tensor.ptr()) })
		C.free(unsafe.Pointer(cs))
		runtime.KeepAlive(e.Tensor.h)
		if err != nil {
			return err
		}
	}
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return call(func() C.FtStatus { return C.ft_safetensors_save(sd, cp) })
}

// LoadSafetensors reads a safetensors file (validated before use; it
// never runs code), in the file's order.
func LoadSafetensors(path string) ([]Named, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var sd *C.FtStateDict
	if err := call(func() C.FtStatus { return C.ft_safetensors_load(cp, &sd) }); err != nil {
		return nil, err
	}
	defer C.ft_state_dict_free(sd)
	var n C.size_t
	C.ft_state_dict_len(sd, &n)
	out := make([]Named, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var key *C.char
		if err := call(func() C.FtStatus { return C.ft_state_dict_key(sd, i, &key) }); err != nil {
			return nil, err
		}
		var t *C.FtTensor
		err := call(func() C.FtStatus { return C.ft_state_dict_get(sd, key, &t) })
		name := C.GoString(key)
		C.ft_string_free(key)
		if err != nil {
			return nil, err
		}
		out = append(out, Named{name, wrap(t, nbytes(t))})
	}
	return out, nil
}
