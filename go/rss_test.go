package ferrotorch_test

import (
	"os"
	"runtime"
	"testing"

	ft "ferrotorch"
	"ferrotorch/internal/testutil"
	"ferrotorch/nn"
	F "ferrotorch/nn/functional"
	"ferrotorch/optim"
)

// An MNIST-sized MLP trained for 2,000 steps on synthetic data holds a
// flat resident set, with GoTorch's GC per step and without it (Note
// [Tensor lifetime in Go]): within 20% of its size after step 100.
func TestTrainingHoldsAFlatRSS(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	for _, withGC := range []bool{true, false} {
		ft.ManualSeed(0)
		x := ft.MustRandN([]int64{64, 784})
		y := ft.MustRandInt(10, []int64{64})
		model := nn.Sequential(nn.Linear(784, 128, true), nn.ReLU(), nn.Linear(128, 10, true))
		opt, err := optim.Adam(model.Parameters(), 1e-3, 0)
		if err != nil {
			t.Fatal(err)
		}
		var base, peak int64
		for step := 1; step <= steps; step++ {
			if withGC {
				ft.GC()
			}
			loss := F.MustCrossEntropy(model.Forward(x), y)
			opt.ZeroGrad()
			loss.MustBackward()
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			if step == 100 {
				base = testutil.RSS(t)
			}
			if step%200 == 0 && os.Getenv("FT_RSS_TRACE") != "" {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				t.Logf("step %d: %.1f MiB (Go sys %.1f MiB, GCs %d)", step, float64(testutil.RSS(t))/(1<<20), float64(ms.Sys)/(1<<20), ms.NumGC)
			}
			if step > 100 {
				if r := testutil.RSS(t); r > peak {
					peak = r
				}
			}
		}
		if withGC {
			ft.FinishGC()
		}
		t.Logf("GC per step %v: RSS %.1f MiB after step 100, peak %.1f MiB after", withGC,
			float64(base)/(1<<20), float64(peak)/(1<<20))
		if float64(peak) > 1.2*float64(base) {
			t.Fatalf("RSS grew from %d to %d bytes (GC per step: %v)", base, peak, withGC)
		}
	}
}
