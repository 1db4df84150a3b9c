package nn

import (
	"testing"

	ft "ferrotorch"
)

// keeper is a user's module that keeps its input (Note [Sequential frees
// its intermediates]: what it was given must stay usable).
type keeper struct {
	Module
	last ft.Tensor
}

func newKeeper() *keeper {
	k := &keeper{}
	k.Init(k)
	return k
}

func (k *keeper) Forward(x ft.Tensor) ft.Tensor {
	k.last = x
	return x.MustMul(ft.MustOnes([]int64{1}))
}

// ownLinear embeds one of ours and overrides Forward, keeping its output:
// a user's module, not ours.
type ownLinear struct {
	*LinearModule
	out ft.Tensor
}

func (l *ownLinear) Forward(x ft.Tensor) ft.Tensor {
	l.out = l.LinearModule.Forward(x)
	return l.out
}

func floats(t *testing.T, x ft.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sameFloats(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// Between two of our layers the intermediate is freed; the result and the
// gradients are those of the same layers called one by one.
func TestSequentialFreesIntermediatesBetweenOwnLayers(t *testing.T) {
	ft.ManualSeed(3)
	l1, relu, l2 := Linear(4, 8, true), ReLU(), Linear(8, 3, true)
	s := Sequential(l1, relu, l2)
	x := ft.MustRandN([]int64{5, 4})
	var freed []ft.Tensor
	y := s.forward(x, func(t, keeper ft.Tensor) { freed = append(freed, t); t.FreeInto(keeper) }).(ft.Tensor)
	if len(freed) != 2 {
		t.Fatalf("freed %d intermediates, want 2 (Linear's and ReLU's outputs)", len(freed))
	}
	for i, f := range freed {
		if f.Defined() {
			t.Errorf("intermediate %d still holds its tensor", i)
		}
	}
	if !x.Defined() || !y.Defined() {
		t.Fatal("the input or the result was freed")
	}
	y.MustSum().MustBackward()
	gotY, gotG := floats(t, y), floats(t, l1.Weight.Grad())

	l1.Weight.SetGrad(ft.Tensor{})
	want := l2.Forward(relu.Forward(l1.Forward(x)))
	want.MustSum().MustBackward()
	sameFloats(t, "output", gotY, floats(t, want))
	sameFloats(t, "first weight's gradient", gotG, floats(t, l1.Weight.Grad()))
}

// A user's module (or a struct embedding one of ours) may keep what it
// is given or returns: nothing next to it is freed.
func TestSequentialKeepsWhatUserModulesSee(t *testing.T) {
	ft.ManualSeed(4)
	k := newKeeper()
	own := &ownLinear{LinearModule: Linear(8, 8, true)}
	s := Sequential(Linear(4, 8, true), k, ReLU(), own, ReLU())
	var freed int
	y := s.forward(ft.MustRandN([]int64{2, 4}), func(t, keeper ft.Tensor) { freed++; t.FreeInto(keeper) }).(ft.Tensor)
	if freed != 0 {
		t.Fatalf("freed %d tensors next to user modules", freed)
	}
	if len(floats(t, k.last)) != 16 || len(floats(t, own.out)) != 16 || len(floats(t, y)) != 16 {
		t.Fatal("a kept tensor lost its values")
	}
}
