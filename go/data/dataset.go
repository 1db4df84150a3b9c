// Package data is torch.utils.data for Go: datasets, and a Loader whose
// Scan collects a training step's tensors (GoTorch's contract, seeds/003):
//
//	loader, err := data.NewLoader(ds, data.BatchSize(64), data.Shuffle(true))
//	for loader.Scan() {
//		batch := loader.Minibatch() // one tensor per field: x, y
//		...
//	}
//	if err := loader.Err(); err != nil { ... }
//
// and a reader of MNIST's IDX files (ReadIDX, LoadMNIST).
package data

import (
	"fmt"

	ft "ferrotorch"
)

// Dataset is a map-style dataset (torch.utils.data.Dataset): Len
// samples, Get(i) one sample's fields (an image and its label, say), each
// a tensor of the same shape for every i.
type Dataset interface {
	Len() int
	Get(i int) ([]ft.Tensor, error)
}

// TensorDataset is torch's TensorDataset: sample i is row i of each
// tensor. A Loader over one batches it in the C ABI's loader, without a
// call back into Go per sample.
type TensorDataset struct {
	tensors []ft.Tensor
	n       int
}

// NewTensorDataset makes a TensorDataset of tensors of the same size in
// dim 0 (at least one).
func NewTensorDataset(tensors ...ft.Tensor) (*TensorDataset, error) {
	if len(tensors) == 0 {
		return nil, &ft.Error{Status: ft.StatusValue, Message: "TensorDataset: at least one tensor is needed"}
	}
	n := int64(-1)
	for i, t := range tensors {
		if !t.Defined() || t.Dim() == 0 {
			return nil, &ft.Error{Status: ft.StatusValue,
				Message: fmt.Sprintf("TensorDataset: tensor %d has no dim 0 to index", i)}
		}
		if d := t.Shape()[0]; n < 0 {
			n = d
		} else if d != n {
			return nil, &ft.Error{Status: ft.StatusValue,
				Message: fmt.Sprintf("TensorDataset: Size mismatch between tensors: tensor 0 has %d rows, tensor %d has %d", n, i, d)}
		}
	}
	return &TensorDataset{tensors: tensors, n: int(n)}, nil
}

// Len is the number of samples.
func (d *TensorDataset) Len() int { return d.n }

// Get is row i of each tensor.
func (d *TensorDataset) Get(i int) ([]ft.Tensor, error) {
	if i < 0 || i >= d.n {
		return nil, &ft.Error{Status: ft.StatusIndex,
			Message: fmt.Sprintf("TensorDataset: index %d is out of range for %d samples", i, d.n)}
	}
	out := make([]ft.Tensor, len(d.tensors))
	for k, t := range d.tensors {
		row, err := ft.Select(t, 0, int64(i))
		if err != nil {
			return nil, err
		}
		out[k] = row
	}
	return out, nil
}

// sliceDataset is a Go slice of samples and how to turn one into tensors.
type sliceDataset[S any] struct {
	samples []S
	fields  func(S) ([]ft.Tensor, error)
}

func (d *sliceDataset[S]) Len() int { return len(d.samples) }

func (d *sliceDataset[S]) Get(i int) ([]ft.Tensor, error) {
	if i < 0 || i >= len(d.samples) {
		return nil, &ft.Error{Status: ft.StatusIndex,
			Message: fmt.Sprintf("SliceDataset: index %d is out of range for %d samples", i, len(d.samples))}
	}
	return d.fields(d.samples[i])
}

// SliceDataset is a dataset of a Go slice of samples; fields turns one
// sample into its tensors when it is loaded.
func SliceDataset[S any](samples []S, fields func(S) ([]ft.Tensor, error)) Dataset {
	return &sliceDataset[S]{samples: samples, fields: fields}
}
