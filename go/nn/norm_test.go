package nn_test

import (
	"math"
	"sort"
	"testing"

	ft "ferrotorch"
	"ferrotorch/nn"
)

// normalised is (v - mean) / sqrt(var + eps) of v (biased variance), in
// float64: the reference the norms are checked against.
func normalised(v []float64, eps float64) []float64 {
	mean, sq := 0.0, 0.0
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sq += (x - mean) * (x - mean)
	}
	std := math.Sqrt(sq/float64(len(v)) + eps)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = (x - mean) / std
	}
	return out
}

func closeTo(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-5 {
			t.Fatalf("%s[%d] = %v, want %v (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func TestLayerNormAndGroupNormMatchTheirFormulas(t *testing.T) {
	data := []float32{1, 2, 4, -3, 0.5, 6, 2, 2, 9, -1, 0, 3}
	x := ft.MustFromSlice(data, 2, 6)
	ln := nn.LayerNorm([]int64{6}, 1e-5, true)
	got, _ := ln.Forward(x).Float32s()
	var want []float64
	for r := 0; r < 2; r++ {
		row := make([]float64, 6)
		for i := range row {
			row[i] = float64(data[r*6+i])
		}
		want = append(want, normalised(row, 1e-5)...)
	}
	closeTo(t, "layer_norm", got, want)
	names := []string{}
	for _, p := range ln.NamedParameters() {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	if len(names) != 2 || names[0] != "bias" || names[1] != "weight" {
		t.Fatalf("LayerNorm's parameters: %v", names)
	}
	plain := nn.LayerNorm([]int64{6}, 1e-5, false)
	if len(plain.Parameters()) != 0 {
		t.Fatal("a LayerNorm without affine has parameters")
	}
	got, _ = plain.Forward(x).Float32s()
	closeTo(t, "layer_norm without affine", got, want)

	// GroupNorm: (1, 4, 3), 2 groups of 2 channels × 3 positions
	g := nn.GroupNorm(2, 4, 1e-5, true)
	ft.NoGrad(func() {
		g.Weight.MustCopy_(ft.MustFromSlice([]float32{1, 2, 1, 0.5}))
		g.Bias.MustCopy_(ft.MustFromSlice([]float32{0, 1, 0, -1}))
	})
	got, _ = g.Forward(ft.MustFromSlice(data, 1, 4, 3)).Float32s()
	want = nil
	w, b := []float64{1, 2, 1, 0.5}, []float64{0, 1, 0, -1}
	for grp := 0; grp < 2; grp++ {
		v := make([]float64, 6)
		for i := range v {
			v[i] = float64(data[grp*6+i])
		}
		for i, z := range normalised(v, 1e-5) {
			c := grp*2 + i/3
			want = append(want, z*w[c]+b[c])
		}
	}
	closeTo(t, "group_norm", got, want)
	// the parameters get gradients
	loss := g.Forward(ft.MustFromSlice(data, 1, 4, 3)).MustSum()
	loss.MustBackward()
	if !g.Bias.Grad().Defined() {
		t.Fatal("GroupNorm's bias got no gradient")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("GroupNorm(3, 4): no panic")
		}
	}()
	nn.GroupNorm(3, 4, 1e-5, true)
}
