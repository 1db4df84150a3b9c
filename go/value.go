package ferrotorch

/*
#include "ferrotorch.h"
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Opt is a keyword argument of an op: Kw("dim", 1), Kw("keepdim", true).
type Opt struct {
	Name  string
	Value interface{}
}

// Kw makes a keyword argument (torch's name=value).
func Kw(name string, value interface{}) Opt { return Opt{name, value} }

// opRef is an op looked up by name once (Note [Op ids in C]).
type opRef struct {
	name string
	once sync.Once
	id   C.uint32_t
	err  error
}

func (o *opRef) resolve() (C.uint32_t, error) {
	o.once.Do(func() {
		cs := C.CString(o.name)
		defer C.free(unsafe.Pointer(cs))
		o.err = call(func() C.FtStatus { return C.ft_op_find(cs, &o.id) })
	})
	return o.id, o.err
}

const maxArgs = 16

// argBuf builds an op call's boxed arguments (Note [Boxed values in C]):
// a fixed array (no Go pointers in it, as cgo requires), with lists and
// strings copied to C memory freed after the call.
type argBuf struct {
	vals  [maxArgs]C.FtValue
	n     int
	kw    []C.FtKwarg
	frees []unsafe.Pointer
	held  [maxArgs]*handle // the positional tensors, kept alive for the call
	keep  []Tensor         // tensors inside lists and keyword arguments
	err   error
}

func (a *argBuf) next() *C.FtValue {
	if a.n == maxArgs {
		a.err = &Error{StatusType, fmt.Sprintf("an op takes at most %d positional arguments", maxArgs)}
		return &C.FtValue{}
	}
	a.n++
	return &a.vals[a.n-1]
}

func (a *argBuf) tensor(t Tensor) {
	v := a.next()
	if !t.Defined() {
		v.tag = C.FT_TAG_NONE
		return
	}
	v.tag = C.FT_TAG_TENSOR
	v.tensor = t.h.p
	a.held[a.n-1] = t.h
}

func (a *argBuf) setTensor(v *C.FtValue, t Tensor) {
	if !t.Defined() {
		v.tag = C.FT_TAG_NONE
		return
	}
	v.tag = C.FT_TAG_TENSOR
	v.tensor = t.ptr()
	a.keep = append(a.keep, t)
}

func (a *argBuf) cmem(n int) unsafe.Pointer {
	if n == 0 {
		n = 1
	}
	p := C.malloc(C.size_t(n))
	a.frees = append(a.frees, p)
	return p
}

// set stores any supported Go value in v.
func (a *argBuf) set(v *C.FtValue, x interface{}) {
	switch x := x.(type) {
	case nil:
		v.tag = C.FT_TAG_NONE
	case Tensor:
		a.setTensor(v, x)
	case int:
		v.tag, v.i = C.FT_TAG_INT, C.int64_t(x)
	case int64:
		v.tag, v.i = C.FT_TAG_INT, C.int64_t(x)
	case int32:
		v.tag, v.i = C.FT_TAG_INT, C.int64_t(x)
	case float64:
		v.tag, v.f = C.FT_TAG_FLOAT, C.double(x)
	case float32:
		v.tag, v.f = C.FT_TAG_FLOAT, C.double(x)
	case bool:
		v.tag = C.FT_TAG_BOOL
		if x {
			v.i = 1
		}
	case DType:
		v.tag, v.i = C.FT_TAG_DTYPE, C.int64_t(x)
	case string:
		cs := C.CString(x)
		a.frees = append(a.frees, unsafe.Pointer(cs))
		v.tag, v.str = C.FT_TAG_STR, cs
	case []int64:
		p := a.cmem(8 * len(x))
		copy(unsafe.Slice((*int64)(p), len(x)), x)
		v.tag, v.list, v.len = C.FT_TAG_INT_LIST, p, C.size_t(len(x))
	case []int:
		p := a.cmem(8 * len(x))
		s := unsafe.Slice((*int64)(p), len(x))
		for i, e := range x {
			s[i] = int64(e)
		}
		v.tag, v.list, v.len = C.FT_TAG_INT_LIST, p, C.size_t(len(x))
	case []float64:
		p := a.cmem(8 * len(x))
		copy(unsafe.Slice((*float64)(p), len(x)), x)
		v.tag, v.list, v.len = C.FT_TAG_FLOAT_LIST, p, C.size_t(len(x))
	case []bool:
		p := a.cmem(len(x))
		s := unsafe.Slice((*uint8)(p), len(x))
		for i, e := range x {
			if e {
				s[i] = 1
			}
		}
		v.tag, v.list, v.len = C.FT_TAG_BOOL_LIST, p, C.size_t(len(x))
	case []Tensor:
		p := a.cmem(int(unsafe.Sizeof(uintptr(0))) * len(x))
		s := unsafe.Slice((**C.FtTensor)(p), len(x))
		opt := false
		for i, t := range x {
			if t.Defined() {
				s[i] = t.ptr()
				a.keep = append(a.keep, t)
			} else {
				opt = true
			}
		}
		v.tag, v.list, v.len = C.FT_TAG_TENSOR_LIST, p, C.size_t(len(x))
		if opt {
			v.tag = C.FT_TAG_OPT_TENSOR_LIST
		}
	default:
		a.err = &Error{StatusType, fmt.Sprintf("a value of Go type %T cannot be an op argument", x)}
	}
}

func (a *argBuf) any(x interface{}) { a.set(a.next(), x) }

func (a *argBuf) opts(opts []Opt) {
	if len(opts) == 0 {
		return
	}
	a.kw = make([]C.FtKwarg, len(opts))
	for i, o := range opts {
		cs := C.CString(o.Name)
		a.frees = append(a.frees, unsafe.Pointer(cs))
		a.kw[i].name = cs
		a.set(&a.kw[i].value, o.Value)
	}
}

// results of one op call.
type results struct {
	vals [8]C.FtValue
	n    C.size_t
}

// call runs op with the built arguments; results hold new handles.
func (a *argBuf) call(op *opRef, opts []Opt, r *results) error {
	id, err := op.resolve()
	if err != nil {
		return err
	}
	a.opts(opts)
	if len(a.frees) > 0 {
		defer a.free()
	}
	if a.err != nil {
		return a.err
	}
	var kw *C.FtKwarg
	if len(a.kw) > 0 {
		// C memory: the keyword array holds C pointers only, but is a Go
		// slice; copy it out so no Go memory with pointers crosses
		p := a.cmem(len(a.kw) * int(unsafe.Sizeof(C.FtKwarg{})))
		copy(unsafe.Slice((*C.FtKwarg)(p), len(a.kw)), a.kw)
		kw = (*C.FtKwarg)(p)
	}
	runtime.LockOSThread()
	s := C.ft_op_call(id, &a.vals[0], C.size_t(a.n), kw, C.size_t(len(a.kw)), &r.vals[0], 8, &r.n)
	err = lastError(s)
	runtime.UnlockOSThread()
	runtime.KeepAlive(a.keep)
	runtime.KeepAlive(&a.held)
	return err
}

func (a *argBuf) free() {
	for _, p := range a.frees {
		C.free(p)
	}
}

// value converts result i to a Go value, taking ownership of handles.
func (r *results) value(i int) interface{} {
	v := &r.vals[i]
	switch v.tag {
	case C.FT_TAG_TENSOR:
		return wrap(v.tensor, int64(v.len))
	case C.FT_TAG_INT:
		return int64(v.i)
	case C.FT_TAG_FLOAT:
		return float64(v.f)
	case C.FT_TAG_BOOL:
		return v.i != 0
	case C.FT_TAG_DTYPE:
		return DType(v.i)
	case C.FT_TAG_STR:
		return C.GoString(v.str)
	case C.FT_TAG_INT_LIST:
		return append([]int64(nil), unsafe.Slice((*int64)(v.list), int(v.len))...)
	case C.FT_TAG_FLOAT_LIST:
		return append([]float64(nil), unsafe.Slice((*float64)(v.list), int(v.len))...)
	case C.FT_TAG_BOOL_LIST:
		b := unsafe.Slice((*uint8)(v.list), int(v.len))
		out := make([]bool, len(b))
		for j, x := range b {
			out[j] = x != 0
		}
		return out
	}
	return nil
}

func (r *results) all() []interface{} {
	out := make([]interface{}, int(r.n))
	for i := range out {
		out[i] = r.value(i)
	}
	return out
}

// tensor is the single tensor result (other results are freed).
func (r *results) tensor() (Tensor, error) {
	if r.n == 1 && r.vals[0].tag == C.FT_TAG_TENSOR {
		return wrap(r.vals[0].tensor, int64(r.vals[0].len)), nil
	}
	vs := r.all()
	if len(vs) == 1 {
		if t, ok := vs[0].(Tensor); ok {
			return t, nil
		}
	}
	return Tensor{}, &Error{StatusType, fmt.Sprintf("expected one tensor result, got %d values", len(vs))}
}

func (r *results) tensors() ([]Tensor, error) {
	vs := r.all()
	out := make([]Tensor, len(vs))
	for i, v := range vs {
		t, ok := v.(Tensor)
		if !ok {
			return nil, &Error{StatusType, fmt.Sprintf("result %d is not a tensor", i)}
		}
		out[i] = t
	}
	return out, nil
}

func (r *results) scalar() (interface{}, error) {
	vs := r.all()
	if len(vs) != 1 {
		return nil, &Error{StatusType, fmt.Sprintf("expected one result, got %d", len(vs))}
	}
	return vs[0], nil
}

var opsByName sync.Map // name -> *opRef

// Call calls the op called name (any dispatcher op: "add", "sum",
// "cross_entropy_loss", ...) with positional arguments and keyword
// arguments given as Opt values anywhere among args. Results: Tensor,
// int64, float64, bool, DType, string, []int64, []float64 or []bool, one
// per returned value (a returned list of tensors gives one per tensor).
func Call(name string, args ...interface{}) ([]interface{}, error) {
	ref, _ := opsByName.LoadOrStore(name, &opRef{name: name})
	var a argBuf
	var opts []Opt
	for _, x := range args {
		if o, ok := x.(Opt); ok {
			opts = append(opts, o)
		} else {
			a.any(x)
		}
	}
	var r results
	if err := a.call(ref.(*opRef), opts, &r); err != nil {
		return nil, err
	}
	return r.all(), nil
}

// MustCall is Call, panicking on error.
func MustCall(name string, args ...interface{}) []interface{} {
	v, err := Call(name, args...)
	must(err)
	return v
}

// Scalar is a number argument of an op: an int, float64 or bool value
// (torch's Scalar).
type Scalar interface{}

// scalarAs is the single result as a T.
func scalarAs[T any](r *results) (T, error) {
	var zero T
	v, err := r.scalar()
	if err != nil {
		return zero, err
	}
	x, ok := v.(T)
	if !ok {
		return zero, &Error{StatusType, fmt.Sprintf("the result is a %T, not a %T", v, zero)}
	}
	return x, nil
}
