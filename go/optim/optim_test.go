package optim_test

import (
	"math"
	"testing"

	ft "ferrotorch"
	"ferrotorch/optim"
)

// SGD with momentum minimises (w - 3)^2 and StepLR decays the rate on
// schedule; both against hand-computed values.
func TestSGDAndStepLR(t *testing.T) {
	w := ft.MustZeros([]int64{1}, ft.Kw("dtype", ft.Float64)).MustSetRequiresGrad(true)
	opt, err := optim.SGD([]ft.Tensor{w}, 0.1, 0.0, 0.0)
	if err != nil {
		t.Fatal(err)
	}
	// one plain SGD step from 0: grad = 2(w - 3) = -6, w = 0.6
	loss := w.MustSubScalar(3).MustPowTensorScalar(2).MustSum()
	loss.MustBackward()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	v, _ := w.Float64s()
	if math.Abs(v[0]-0.6) > 1e-12 {
		t.Fatalf("after one step w = %v", v[0])
	}
	sched, err := optim.StepLR(opt, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for epoch := 0; epoch < 400; epoch++ {
		opt.ZeroGrad()
		w.MustSubScalar(3).MustPowTensorScalar(2).MustSum().MustBackward()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if epoch < 5 {
			if err := sched.Step(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if lr := opt.LR(); math.Abs(lr-0.1*0.25) > 1e-15 || math.Abs(sched.LastLR()-lr) > 0 {
		t.Fatalf("lr after 5 epochs of StepLR(2, 0.5): %v", lr)
	}
	v, _ = w.Float64s()
	if math.Abs(v[0]-3) > 1e-6 {
		t.Fatalf("w = %v", v[0])
	}
	// an optimizer of a non-leaf is refused with torch's message
	y := w.MustMulScalar(2)
	if _, err := optim.Adam([]ft.Tensor{y}, 0.1, 0); err == nil {
		t.Fatal("a non-leaf was accepted")
	}
}

func TestCosineAnnealingRates(t *testing.T) {
	w := ft.MustZeros([]int64{1}).MustSetRequiresGrad(true)
	opt, _ := optim.Adam([]ft.Tensor{w}, 1.0, 0)
	s, err := optim.CosineAnnealingLR(opt, 10, 0.0)
	if err != nil {
		t.Fatal(err)
	}
	for e := 1; e <= 10; e++ {
		if err := s.Step(); err != nil {
			t.Fatal(err)
		}
		want := 0.5 * (1 + math.Cos(math.Pi*float64(e)/10))
		if math.Abs(opt.LR()-want) > 1e-12 {
			t.Fatalf("epoch %d: lr %v, want %v", e, opt.LR(), want)
		}
	}
}
