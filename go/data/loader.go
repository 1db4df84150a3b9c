package data

/*
#cgo CFLAGS: -I${SRCDIR}/../../crates/ferrotorch-c/include
#cgo LDFLAGS: -lferrotorch_c
#include "ferrotorch.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	ft "ferrotorch"
)

// Option is one of NewLoader's settings (torch.utils.data.DataLoader's
// keyword arguments).
type Option func(*options)

type options struct {
	batchSize int
	shuffle   bool
	dropLast  bool
	seed      int64
}

// BatchSize is the samples a minibatch holds (1 by default, as torch's).
func BatchSize(n int) Option { return func(o *options) { o.batchSize = n } }

// Shuffle draws a new order of the samples every epoch.
func Shuffle(on bool) Option { return func(o *options) { o.shuffle = on } }

// DropLast drops an epoch's last, smaller minibatch.
func DropLast(on bool) Option { return func(o *options) { o.dropLast = on } }

// Seed fixes the shuffling order (torch's DataLoader with a seeded
// generator); without it the order comes from the global generator.
func Seed(s int64) Option { return func(o *options) { o.seed = s } }

// Loader iterates a dataset in minibatches (torch.utils.data.DataLoader)
// with GoTorch's contract: Scan starts a training step, collecting the
// previous step's unreachable tensors first (ft.GC), so a loop
//
//	for loader.Scan() { x, y := loader.Minibatch()[0], loader.Minibatch()[1]; ... }
//
// holds a flat resident set without calling GC itself. The order of the
// samples is the C ABI's loader's (torch's randperm stream for a seed).
type Loader struct {
	ds     Dataset
	tensor bool // batched by the C loader itself (a TensorDataset)
	fields int
	dl     *C.FtDataLoader
	batch  []ft.Tensor
	err    error
	keep   []ft.Tensor // what the C loader reads
}

// call is ft.CallC for this package's C calls.
func call(f func() C.FtStatus) error { return ft.CallC(func() int32 { return int32(f()) }) }

// NewLoader makes a loader over ds.
func NewLoader(ds Dataset, opts ...Option) (*Loader, error) {
	o := options{batchSize: 1, seed: -1}
	for _, f := range opts {
		f(&o)
	}
	if ds == nil {
		return nil, &ft.Error{Status: ft.StatusValue, Message: "DataLoader: no dataset"}
	}
	if o.batchSize <= 0 {
		return nil, &ft.Error{Status: ft.StatusValue,
			Message: fmt.Sprintf("DataLoader: batch_size should be a positive integer value, but got batch_size=%d", o.batchSize)}
	}
	l := &Loader{ds: ds}
	if td, ok := ds.(*TensorDataset); ok {
		l.tensor, l.fields, l.keep = true, len(td.tensors), td.tensors
	} else {
		// the C loader batches the indices; Go fetches and stacks the samples
		idx, err := ft.Arange(int64(ds.Len()))
		if err != nil {
			return nil, err
		}
		l.keep = []ft.Tensor{idx}
	}
	ptrs := make([]*C.FtTensor, len(l.keep))
	for i, t := range l.keep {
		ptrs[i] = (*C.FtTensor)(t.C())
	}
	var dl *C.FtDataLoader
	err := call(func() C.FtStatus {
		return C.ft_data_loader_new((**C.FtTensor)(unsafe.Pointer(&ptrs[0])), C.size_t(len(ptrs)),
			C.size_t(o.batchSize), C.bool(o.shuffle), C.bool(o.dropLast), C.int64_t(o.seed), &dl)
	})
	runtime.KeepAlive(l.keep)
	if err != nil {
		return nil, err
	}
	l.dl = dl
	runtime.SetFinalizer(l, (*Loader).Close)
	return l, nil
}

// Len is the number of minibatches an epoch has.
func (l *Loader) Len() int {
	if l.dl == nil {
		return 0
	}
	var n C.size_t
	if err := call(func() C.FtStatus { return C.ft_data_loader_len(l.dl, &n) }); err != nil {
		return 0
	}
	return int(n)
}

// Scan starts a step: it collects the previous step's tensors (ft.GC)
// and loads the next minibatch. It returns false at the end of the epoch
// (ending the marking, ft.FinishGC) or on an error (see Err); the next
// Scan starts a new epoch.
func (l *Loader) Scan() bool {
	l.batch = nil
	if l.err != nil || l.dl == nil {
		return false
	}
	ft.GC()
	batch, err := l.next()
	if err != nil {
		l.err = err
	}
	if batch == nil {
		ft.FinishGC()
		return false
	}
	l.batch = batch
	return true
}

// Minibatch is the minibatch Scan loaded: one tensor per field of the
// dataset's samples, stacked along a new dim 0.
func (l *Loader) Minibatch() []ft.Tensor { return l.batch }

// Err is the error that stopped Scan, if any.
func (l *Loader) Err() error { return l.err }

// Close releases the loader (also done when Go collects it).
func (l *Loader) Close() {
	if l.dl != nil {
		C.ft_data_loader_free(l.dl)
		l.dl = nil
	}
}

// next is the C loader's next batch, as the dataset's fields; nil at the
// end of the epoch.
func (l *Loader) next() ([]ft.Tensor, error) {
	out := make([]*C.FtTensor, len(l.keep))
	var n C.size_t
	err := call(func() C.FtStatus {
		return C.ft_data_loader_next(l.dl, (**C.FtTensor)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &n)
	})
	if err != nil || n == 0 {
		return nil, err
	}
	got := make([]ft.Tensor, int(n))
	for i := range got {
		got[i] = ft.WrapC(unsafe.Pointer(out[i]))
	}
	if l.tensor {
		return got, nil
	}
	return l.collate(got[0])
}

// collate fetches the samples of a batch of indices and stacks each field.
func (l *Loader) collate(idx ft.Tensor) ([]ft.Tensor, error) {
	ids, err := idx.Int64s()
	if err != nil {
		return nil, err
	}
	var fields [][]ft.Tensor
	for _, i := range ids {
		s, err := l.ds.Get(int(i))
		if err != nil {
			return nil, err
		}
		if fields == nil {
			fields = make([][]ft.Tensor, len(s))
		}
		if len(s) != len(fields) {
			return nil, &ft.Error{Status: ft.StatusValue,
				Message: fmt.Sprintf("DataLoader: sample %d has %d fields, the batch's first sample %d", i, len(s), len(fields))}
		}
		for k, t := range s {
			fields[k] = append(fields[k], t)
		}
	}
	out := make([]ft.Tensor, len(fields))
	for k, ts := range fields {
		st, err := ft.Stack(ts)
		if err != nil {
			return nil, fmt.Errorf("DataLoader: stacking field %d of a batch: %w", k, err)
		}
		out[k] = st
	}
	return out, nil
}
