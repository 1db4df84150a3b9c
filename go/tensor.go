package ferrotorch

/*
#include "ferrotorch.h"
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Tensor is a reference to a ferrotorch tensor: strided, typed memory with
// autograd state. Copying a Tensor copies the reference; the tensor is
// freed when Go collects the last reference (Note [Tensor lifetime in Go])
// or at Free. The zero Tensor is "no tensor" (an omitted optional, such as
// a Linear layer's missing bias).
type Tensor struct {
	h *handle
}

// C returns the C handle (an FtTensor*), for packages calling the C ABI
// directly; it stays valid while t is reachable (use runtime.KeepAlive).
func (t Tensor) C() unsafe.Pointer {
	if t.h == nil {
		return nil
	}
	return unsafe.Pointer(t.h.p)
}

// WrapC makes a Tensor owning an FtTensor* that a C ABI call returned.
func WrapC(p unsafe.Pointer) Tensor {
	if p == nil {
		return Tensor{}
	}
	pt := (*C.FtTensor)(p)
	return wrap(pt, nbytes(pt))
}

// nbytes asks the C ABI for a tensor's size in bytes.
func nbytes(p *C.FtTensor) int64 {
	var n C.size_t
	var d C.int32_t
	C.ft_tensor_numel(p, &n)
	C.ft_tensor_dtype(p, &d)
	return int64(n) * int64(DType(d).Size())
}

// Defined reports whether t refers to a tensor (the zero Tensor does not).
func (t Tensor) Defined() bool { return t.h != nil && t.h.p != nil }

func (t Tensor) ptr() *C.FtTensor {
	if t.h == nil {
		return nil
	}
	return t.h.p
}

// Free releases this reference now instead of when Go collects it. The
// Tensor (and copies of it) must not be used afterwards.
func (t Tensor) Free() {
	if t.h == nil {
		return
	}
	runtime.SetFinalizer(t.h, nil)
	t.h.release()
}

func shapeArg(shape []int64) (*C.int64_t, C.size_t) {
	if len(shape) == 0 {
		return nil, 0
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0])), C.size_t(len(shape))
}

// FromSlice copies data (a []float32, []float64, []int64, []int32,
// []int16, []int8, []uint8 or []bool) into a new tensor of the given shape.
func FromSlice(data interface{}, shape ...int64) (Tensor, error) {
	var p unsafe.Pointer
	var n int
	var d DType
	switch v := data.(type) {
	case []float32:
		d, n = Float32, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []float64:
		d, n = Float64, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []int64:
		d, n = Int64, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []int32:
		d, n = Int32, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []int16:
		d, n = Int16, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []int8:
		d, n = Int8, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []uint8:
		d, n = Uint8, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []bool:
		d, n = Bool, len(v)
		if n > 0 {
			p = unsafe.Pointer(&v[0])
		}
	default:
		return Tensor{}, &Error{StatusType, fmt.Sprintf("FromSlice: unsupported data type %T", data)}
	}
	if shape == nil {
		shape = []int64{int64(n)}
	}
	sp, nd := shapeArg(shape)
	var out *C.FtTensor
	err := call(func() C.FtStatus {
		return C.ft_tensor_from_data(p, C.size_t(n*d.Size()), sp, nd, C.int32_t(d), &out)
	})
	runtime.KeepAlive(data)
	runtime.KeepAlive(shape)
	if err != nil {
		return Tensor{}, err
	}
	return wrap(out, int64(n*d.Size())), nil
}

// MustFromSlice is FromSlice, panicking on error.
func MustFromSlice(data interface{}, shape ...int64) Tensor {
	t, err := FromSlice(data, shape...)
	must(err)
	return t
}

// ManualSeed seeds the global generator (torch.manual_seed).
func ManualSeed(seed uint64) {
	C.ft_manual_seed(C.uint64_t(seed))
}

func (t Tensor) dims(stride bool) []int64 {
	var buf [16]C.int64_t
	var n C.size_t
	if stride {
		C.ft_tensor_stride(t.ptr(), &buf[0], 16, &n)
	} else {
		C.ft_tensor_shape(t.ptr(), &buf[0], 16, &n)
	}
	runtime.KeepAlive(t.h)
	if n > 16 {
		big := make([]C.int64_t, n)
		if stride {
			C.ft_tensor_stride(t.ptr(), &big[0], n, &n)
		} else {
			C.ft_tensor_shape(t.ptr(), &big[0], n, &n)
		}
		runtime.KeepAlive(t.h)
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(big[i])
		}
		return out
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(buf[i])
	}
	return out
}

// Shape is the sizes (t.shape).
func (t Tensor) Shape() []int64 { return t.dims(false) }

// Stride is the strides in elements (t.stride()).
func (t Tensor) Stride() []int64 { return t.dims(true) }

// Dim is the number of dimensions.
func (t Tensor) Dim() int { return len(t.Shape()) }

// DType is the element type.
func (t Tensor) DType() DType {
	var d C.int32_t
	C.ft_tensor_dtype(t.ptr(), &d)
	runtime.KeepAlive(t.h)
	return DType(d)
}

// Numel is the number of elements.
func (t Tensor) Numel() int64 {
	var n C.size_t
	C.ft_tensor_numel(t.ptr(), &n)
	runtime.KeepAlive(t.h)
	return int64(n)
}

func (t Tensor) copyTo(p unsafe.Pointer, nbytes int) error {
	err := call(func() C.FtStatus { return C.ft_tensor_copy_to(t.ptr(), p, C.size_t(nbytes)) })
	runtime.KeepAlive(t.h)
	return err
}

// Float32s copies a float32 tensor's elements out, row-major.
func (t Tensor) Float32s() ([]float32, error) {
	if d := t.DType(); d != Float32 {
		return nil, &Error{StatusType, "Float32s: the tensor's dtype is " + d.String()}
	}
	out := make([]float32, t.Numel())
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	return out, t.copyTo(p, 4*len(out))
}

// Float64s copies a float64 tensor's elements out, row-major.
func (t Tensor) Float64s() ([]float64, error) {
	if d := t.DType(); d != Float64 {
		return nil, &Error{StatusType, "Float64s: the tensor's dtype is " + d.String()}
	}
	out := make([]float64, t.Numel())
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	return out, t.copyTo(p, 8*len(out))
}

// Int64s copies an int64 tensor's elements out, row-major.
func (t Tensor) Int64s() ([]int64, error) {
	if d := t.DType(); d != Int64 {
		return nil, &Error{StatusType, "Int64s: the tensor's dtype is " + d.String()}
	}
	out := make([]int64, t.Numel())
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	return out, t.copyTo(p, 8*len(out))
}

// Item is the value of a one-element tensor as a float64 (t.item()).
func (t Tensor) Item() (float64, error) {
	var v C.double
	err := call(func() C.FtStatus { return C.ft_tensor_item_double(t.ptr(), &v) })
	runtime.KeepAlive(t.h)
	return float64(v), err
}

// MustItem is Item, panicking on error.
func (t Tensor) MustItem() float64 {
	v, err := t.Item()
	must(err)
	return v
}

// String is torch's printed form.
func (t Tensor) String() string {
	if !t.Defined() {
		return "Tensor(undefined)"
	}
	var s *C.char
	if C.ft_tensor_to_string(t.ptr(), &s) != 0 {
		return "Tensor(?)"
	}
	runtime.KeepAlive(t.h)
	defer C.ft_string_free(s)
	return C.GoString(s)
}

// SetNumThreads sets the threads intra-op parallelism uses
// (torch.set_num_threads).
func SetNumThreads(n int) error {
	return call(func() C.FtStatus { return C.ft_set_num_threads(C.int64_t(n)) })
}

// NumThreads is torch.get_num_threads().
func NumThreads() int { return int(C.ft_get_num_threads()) }
