// Package functional is torch.nn.functional for Go: the stateless layer
// functions modules are built from (GoTorch's nn/functional). Each calls
// one dispatcher op; errors are values, with Must... variants.
package functional

import (
	ft "ferrotorch"
)

// Linear is F.linear(input, weight, bias): input @ weight.T + bias; bias
// may be the zero Tensor.
func Linear(input, weight, bias ft.Tensor) (ft.Tensor, error) {
	return ft.Linear(input, weight, ft.Kw("bias", bias))
}

// MustLinear is Linear, panicking on error.
func MustLinear(input, weight, bias ft.Tensor) ft.Tensor {
	return mustT(Linear(input, weight, bias))
}

// Conv2d is F.conv2d(input, weight, bias, stride, padding, dilation,
// groups) with per-dimension (or single) stride, padding and dilation.
func Conv2d(input, weight, bias ft.Tensor, stride, padding, dilation []int64, groups int64) (ft.Tensor, error) {
	return ft.Conv2d(input, weight, ft.Kw("bias", bias), ft.Kw("stride", stride),
		ft.Kw("padding", padding), ft.Kw("dilation", dilation), ft.Kw("groups", groups))
}

// MustConv2d is Conv2d, panicking on error.
func MustConv2d(input, weight, bias ft.Tensor, stride, padding, dilation []int64, groups int64) ft.Tensor {
	return mustT(Conv2d(input, weight, bias, stride, padding, dilation, groups))
}

// BatchNorm is F.batch_norm(input, running_mean, running_var, weight,
// bias, training, momentum, eps); any tensor may be the zero Tensor.
func BatchNorm(input, runningMean, runningVar, weight, bias ft.Tensor, training bool, momentum, eps float64) (ft.Tensor, error) {
	return ft.BatchNorm(input, weight, bias, runningMean, runningVar, training, momentum, eps, false)
}

// MaxPool2d is F.max_pool2d(input, kernel_size, stride, padding).
func MaxPool2d(input ft.Tensor, kernelSize, stride, padding []int64) (ft.Tensor, error) {
	return ft.MaxPool2d(input, kernelSize, ft.Kw("stride", stride), ft.Kw("padding", padding))
}

// ReLU is F.relu.
func ReLU(input ft.Tensor) (ft.Tensor, error) { return ft.Relu(input) }

// Tanh is F.tanh.
func Tanh(input ft.Tensor) (ft.Tensor, error) { return ft.Tanh(input) }

// Sigmoid is F.sigmoid.
func Sigmoid(input ft.Tensor) (ft.Tensor, error) { return ft.Sigmoid(input) }

// Softmax is F.softmax(input, dim).
func Softmax(input ft.Tensor, dim int64) (ft.Tensor, error) { return ft.Softmax(input, dim) }

// LogSoftmax is F.log_softmax(input, dim).
func LogSoftmax(input ft.Tensor, dim int64) (ft.Tensor, error) {
	return ft.LogSoftmax(input, dim)
}

// Dropout is F.dropout(input, p, training).
func Dropout(input ft.Tensor, p float64, training bool) (ft.Tensor, error) {
	return ft.Dropout(input, p, training)
}

// Embedding is F.embedding(input, weight).
func Embedding(input, weight ft.Tensor) (ft.Tensor, error) { return ft.Embedding(weight, input) }

// Reduction is a loss's reduction: "mean" (the default), "sum" or "none".
type Reduction string

func reduction(r []Reduction) (int64, error) {
	if len(r) == 0 {
		return 1, nil
	}
	switch r[0] {
	case "none":
		return 0, nil
	case "mean":
		return 1, nil
	case "sum":
		return 2, nil
	}
	return 0, &ft.Error{Status: ft.StatusValue, Message: string(r[0]) + " is not a valid value for reduction"}
}

// CrossEntropy is F.cross_entropy(input, target, reduction): class
// indices (int64) as targets.
func CrossEntropy(input, target ft.Tensor, r ...Reduction) (ft.Tensor, error) {
	red, err := reduction(r)
	if err != nil {
		return ft.Tensor{}, err
	}
	return ft.CrossEntropyLoss(input, target, ft.Kw("reduction", red))
}

// MustCrossEntropy is CrossEntropy, panicking on error.
func MustCrossEntropy(input, target ft.Tensor, r ...Reduction) ft.Tensor {
	return mustT(CrossEntropy(input, target, r...))
}

// NLLLoss is F.nll_loss(input, target, reduction).
func NLLLoss(input, target ft.Tensor, r ...Reduction) (ft.Tensor, error) {
	red, err := reduction(r)
	if err != nil {
		return ft.Tensor{}, err
	}
	return ft.NllLoss(input, target, ft.Kw("reduction", red))
}

// MSELoss is F.mse_loss(input, target, reduction).
func MSELoss(input, target ft.Tensor, r ...Reduction) (ft.Tensor, error) {
	red, err := reduction(r)
	if err != nil {
		return ft.Tensor{}, err
	}
	return ft.MseLoss(input, target, ft.Kw("reduction", red))
}

// MustMSELoss is MSELoss, panicking on error.
func MustMSELoss(input, target ft.Tensor, r ...Reduction) ft.Tensor {
	return mustT(MSELoss(input, target, r...))
}

// BinaryCrossEntropyWithLogits is F.binary_cross_entropy_with_logits.
func BinaryCrossEntropyWithLogits(input, target ft.Tensor, r ...Reduction) (ft.Tensor, error) {
	red, err := reduction(r)
	if err != nil {
		return ft.Tensor{}, err
	}
	return ft.BinaryCrossEntropyWithLogits(input, target, ft.Kw("reduction", red))
}

func mustT(t ft.Tensor, err error) ft.Tensor {
	if err != nil {
		panic(err)
	}
	return t
}
