package nn

import (
	ft "ferrotorch"
)

// affine is a norm's weight (ones) and bias (zeros) of n elements,
// requiring grad, or two zero Tensors (no affine transform).
func affine(on bool, n ...int64) (ft.Tensor, ft.Tensor) {
	if !on {
		return ft.Tensor{}, ft.Tensor{}
	}
	return ft.MustOnes(n).MustSetRequiresGrad(true), ft.MustZeros(n).MustSetRequiresGrad(true)
}

// LayerNormModule is torch.nn.LayerNorm: each sample normalised over its
// last len(NormalizedShape) dims, then scaled and shifted elementwise.
type LayerNormModule struct {
	Module
	NormalizedShape []int64
	Eps             float64
	Weight          ft.Tensor
	Bias            ft.Tensor
}

// LayerNorm creates a LayerNormModule (eps 1e-5 in torch; elementwiseAffine
// gives it a weight of ones and a bias of zeros).
func LayerNorm(normalizedShape []int64, eps float64, elementwiseAffine bool) *LayerNormModule {
	l := &LayerNormModule{NormalizedShape: append([]int64(nil), normalizedShape...), Eps: eps}
	l.Weight, l.Bias = affine(elementwiseAffine, normalizedShape...)
	l.Init(l)
	return l
}

// Forward is layer_norm.
func (l *LayerNormModule) Forward(x ft.Tensor) ft.Tensor {
	return ft.MustLayerNorm(x, l.NormalizedShape, ft.Kw("weight", l.Weight), ft.Kw("bias", l.Bias),
		ft.Kw("eps", l.Eps))
}

// GroupNormModule is torch.nn.GroupNorm: the channels of each sample in
// NumGroups groups, each normalised over its channels and positions, then
// scaled and shifted per channel.
type GroupNormModule struct {
	Module
	NumGroups, NumChannels int64
	Eps                    float64
	Weight                 ft.Tensor
	Bias                   ft.Tensor
}

// GroupNorm creates a GroupNormModule (eps 1e-5 in torch; affine gives it
// a weight of ones and a bias of zeros per channel). numChannels must be
// a multiple of numGroups, as torch's.
func GroupNorm(numGroups, numChannels int64, eps float64, affineOn bool) *GroupNormModule {
	if numGroups <= 0 || numChannels%numGroups != 0 {
		panic(&ft.Error{Status: ft.StatusValue, Message: "GroupNorm: num_channels must be divisible by num_groups"})
	}
	g := &GroupNormModule{NumGroups: numGroups, NumChannels: numChannels, Eps: eps}
	g.Weight, g.Bias = affine(affineOn, numChannels)
	g.Init(g)
	return g
}

// Forward is group_norm.
func (g *GroupNormModule) Forward(x ft.Tensor) ft.Tensor {
	return ft.MustGroupNorm(x, g.NumGroups, ft.Kw("weight", g.Weight), ft.Kw("bias", g.Bias),
		ft.Kw("eps", g.Eps))
}
