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
// returning one value).
func (s *SequentialModule) Forward(x ft.Tensor) ft.Tensor {
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
		v = out[0].Interface()
	}
	return v.(ft.Tensor)
}
