package nn

import (
	"fmt"
	"math"
	"reflect"

	ft "ferrotorch"
	F "ferrotorch/nn/functional"
)

// uniform is a new leaf of shape drawn from U(-bound, bound), requiring
// grad: PyTorch's default initialisation of Linear and Conv2d
// (kaiming_uniform_ with a = sqrt(5) gives bound 1/sqrt(fan_in)).
func uniform(bound float64, shape ...int64) ft.Tensor {
	t := ft.MustEmpty(shape)
	ft.NoGrad(func() { t.MustUniform_(ft.Kw("from", -bound), ft.Kw("to", bound)) })
	return t.MustSetRequiresGrad(true)
}

// LinearModule is torch.nn.Linear.
type LinearModule struct {
	Module
	InFeatures, OutFeatures int64
	Weight                  ft.Tensor
	Bias                    ft.Tensor
}

// Linear creates a LinearModule with PyTorch's initialisation.
func Linear(in, out int64, bias bool) *LinearModule {
	l := &LinearModule{InFeatures: in, OutFeatures: out}
	bound := 1 / math.Sqrt(float64(in))
	l.Weight = uniform(bound, out, in)
	if bias {
		l.Bias = uniform(bound, out)
	}
	l.Init(l)
	return l
}

// Forward is x @ W.T + b.
func (l *LinearModule) Forward(x ft.Tensor) ft.Tensor {
	return F.MustLinear(x, l.Weight, l.Bias)
}

// Conv2dModule is torch.nn.Conv2d (square kernels).
type Conv2dModule struct {
	Module
	InChannels, OutChannels, KernelSize, Stride, Padding, Dilation, Groups int64
	Weight                                                                 ft.Tensor
	Bias                                                                   ft.Tensor
}

// Conv2d creates a Conv2dModule with PyTorch's initialisation.
func Conv2d(in, out, kernel, stride, padding int64, bias bool) *Conv2dModule {
	c := &Conv2dModule{InChannels: in, OutChannels: out, KernelSize: kernel, Stride: stride,
		Padding: padding, Dilation: 1, Groups: 1}
	bound := 1 / math.Sqrt(float64(in*kernel*kernel))
	c.Weight = uniform(bound, out, in, kernel, kernel)
	if bias {
		c.Bias = uniform(bound, out)
	}
	c.Init(c)
	return c
}

// Forward is the convolution.
func (c *Conv2dModule) Forward(x ft.Tensor) ft.Tensor {
	return F.MustConv2d(x, c.Weight, c.Bias, []int64{c.Stride}, []int64{c.Padding},
		[]int64{c.Dilation}, c.Groups)
}

// BatchNorm2dModule is torch.nn.BatchNorm2d (affine, tracking statistics).
type BatchNorm2dModule struct {
	Module
	NumFeatures       int64
	Eps, Momentum     float64
	Weight            ft.Tensor
	Bias              ft.Tensor
	RunningMean       ft.Tensor `ferrotorch:"buffer"`
	RunningVar        ft.Tensor `ferrotorch:"buffer"`
	NumBatchesTracked ft.Tensor `ferrotorch:"buffer"`
}

// BatchNorm2d creates a BatchNorm2dModule (weight 1, bias 0, running
// mean 0 and variance 1, as PyTorch).
func BatchNorm2d(numFeatures int64, eps, momentum float64) *BatchNorm2dModule {
	b := &BatchNorm2dModule{NumFeatures: numFeatures, Eps: eps, Momentum: momentum}
	n := []int64{numFeatures}
	b.Weight = ft.MustOnes(n).MustSetRequiresGrad(true)
	b.Bias = ft.MustZeros(n).MustSetRequiresGrad(true)
	b.RunningMean = ft.MustZeros(n)
	b.RunningVar = ft.MustOnes(n)
	b.NumBatchesTracked = ft.MustZeros([]int64{}, ft.Kw("dtype", ft.Int64))
	b.Init(b)
	return b
}

// Forward normalises with batch statistics in training (updating the
// running ones) and the running ones in eval.
func (b *BatchNorm2dModule) Forward(x ft.Tensor) ft.Tensor {
	if b.IsTraining() {
		ft.NoGrad(func() { b.NumBatchesTracked.MustAdd_(ft.MustOnesLike(b.NumBatchesTracked)) })
	}
	y, err := F.BatchNorm(x, b.RunningMean, b.RunningVar, b.Weight, b.Bias, b.IsTraining(), b.Momentum, b.Eps)
	if err != nil {
		panic(err)
	}
	return y
}

// ReLUModule is torch.nn.ReLU.
type ReLUModule struct{ Module }

// ReLU creates a ReLUModule.
func ReLU() *ReLUModule {
	r := &ReLUModule{}
	r.Init(r)
	return r
}

// Forward is max(x, 0).
func (r *ReLUModule) Forward(x ft.Tensor) ft.Tensor { return ft.MustRelu(x) }

// TanhModule is torch.nn.Tanh.
type TanhModule struct{ Module }

// Tanh creates a TanhModule.
func Tanh() *TanhModule {
	t := &TanhModule{}
	t.Init(t)
	return t
}

// Forward is tanh(x).
func (t *TanhModule) Forward(x ft.Tensor) ft.Tensor { return ft.MustTanh(x) }

// DropoutModule is torch.nn.Dropout.
type DropoutModule struct {
	Module
	P float64
}

// Dropout creates a DropoutModule.
func Dropout(p float64) *DropoutModule {
	d := &DropoutModule{P: p}
	d.Init(d)
	return d
}

// Forward zeroes elements with probability P in training.
func (d *DropoutModule) Forward(x ft.Tensor) ft.Tensor {
	y, err := F.Dropout(x, d.P, d.IsTraining())
	if err != nil {
		panic(err)
	}
	return y
}

// FlattenModule is torch.nn.Flatten (dims 1 to -1).
type FlattenModule struct{ Module }

// Flatten creates a FlattenModule.
func Flatten() *FlattenModule {
	f := &FlattenModule{}
	f.Init(f)
	return f
}

// Forward flattens all but the first dimension.
func (f *FlattenModule) Forward(x ft.Tensor) ft.Tensor {
	return x.MustFlatten(ft.Kw("start_dim", 1))
}

// MaxPool2dModule is torch.nn.MaxPool2d (square windows).
type MaxPool2dModule struct {
	Module
	KernelSize, Stride, Padding int64
}

// MaxPool2d creates a MaxPool2dModule (stride 0 means kernel_size).
func MaxPool2d(kernel, stride, padding int64) *MaxPool2dModule {
	if stride == 0 {
		stride = kernel
	}
	m := &MaxPool2dModule{KernelSize: kernel, Stride: stride, Padding: padding}
	m.Init(m)
	return m
}

// Forward takes window maxima.
func (m *MaxPool2dModule) Forward(x ft.Tensor) ft.Tensor {
	y, err := F.MaxPool2d(x, []int64{m.KernelSize}, []int64{m.Stride}, []int64{m.Padding})
	if err != nil {
		panic(err)
	}
	return y
}

// EmbeddingModule is torch.nn.Embedding.
type EmbeddingModule struct {
	Module
	Weight ft.Tensor
}

// Embedding creates an EmbeddingModule with N(0, 1) weights.
func Embedding(num, dim int64) *EmbeddingModule {
	e := &EmbeddingModule{Weight: ft.MustRandN([]int64{num, dim}).MustSetRequiresGrad(true)}
	e.Init(e)
	return e
}

// Forward looks up rows of Weight.
func (e *EmbeddingModule) Forward(idx ft.Tensor) ft.Tensor {
	y, err := F.Embedding(idx, e.Weight)
	if err != nil {
		panic(err)
	}
	return y
}

// SequentialModule is torch.nn.Sequential: children named 0, 1, ...
type SequentialModule struct {
	Module
	Layers []IModule `ferrotorch:"inline"`
}

// Sequential chains modules; each must have a Forward method.
func Sequential(layers ...IModule) *SequentialModule {
	s := &SequentialModule{Layers: layers}
	s.Init(s)
	return s
}

// Forward passes x through every layer, calling each one's Forward by
// reflection (GoTorch's way: Forward may have any signature taking and
// returning one value). A tensor passed between two of this package's
// layers is freed once the next one has run (Note [Sequential frees its
// intermediates]).
func (s *SequentialModule) Forward(x ft.Tensor) ft.Tensor {
	return s.forward(x, ft.Tensor.FreeInto).(ft.Tensor)
}

// Note [Sequential frees its intermediates]
// A tensor that one layer of a Sequential hands to the next is seen by no
// one else when both layers are this package's own, which keep no
// reference to what they are given or return. Forward therefore frees its
// handle as soon as the next layer has run, as Rust's Sequential drops it
// and Python's reference count frees it; the tensor itself lives on while
// autograd needs it (the graph holds its own reference), so its bytes are
// counted against the next layer's result until that is freed in turn
// (Tensor.FreeInto): the collection pressure of Note [Tensor lifetime in
// Go] is what it was, and a training loop that never calls GC still holds
// a flat resident set (rss_test.go: without the transfer, the graphs of
// uncollected results grew it from 48 to 105 MiB). Left to Go's
// collector, these handles kept a W8 step's activations (1 MB of the 1.75
// MB it makes) alive until the next collection, so every step wrote to
// memory that the steps before had left cold; freed, they return to the
// allocator after backward. rss_test.go's peak without GC calls went from
// 35.2 to 31.9 MiB, and W8 from Go's step time by 2-7 % (alternated runs
// on a noisy host; freeing them without the transfer gained more, by
// collecting less, which is what grew the resident set). A
// user's module might keep its input or output, so a tensor is freed only
// between two of ours, by exact type (a struct that embeds one of ours
// and overrides Forward is the user's).

// ownLayer reports whether l is one of this package's layers (Note
// [Sequential frees its intermediates]).
func ownLayer(l IModule) bool {
	switch l.(type) {
	case *LinearModule, *Conv2dModule, *BatchNorm2dModule, *ReLUModule, *TanhModule,
		*DropoutModule, *FlattenModule, *MaxPool2dModule, *EmbeddingModule:
		return true
	}
	return false
}

// forward is Forward with the function that frees an intermediate into
// the next layer's result given (tests pass one that records).
func (s *SequentialModule) forward(x ft.Tensor, free func(t, keeper ft.Tensor)) interface{} {
	var v interface{} = x
	for i, l := range s.Layers {
		f := reflect.ValueOf(l).MethodByName("Forward")
		if !f.IsValid() {
			panic(fmt.Sprintf("nn.Sequential: layer %d (%T) has no Forward method", i, l))
		}
		out := f.Call([]reflect.Value{reflect.ValueOf(v)})
		if len(out) == 0 {
			panic(fmt.Sprintf("nn.Sequential: layer %d's Forward returns nothing", i))
		}
		next := out[0].Interface()
		if i > 0 && ownLayer(s.Layers[i-1]) && ownLayer(l) {
			if t, ok := v.(ft.Tensor); ok && t != x && next != v {
				keeper, _ := next.(ft.Tensor)
				free(t, keeper)
			}
		}
		v = next
	}
	return v
}
