// Command bench times issue 22's Go workloads: `Add` on 1-element tensors
// (ns per call, the cgo call included) and one W8 training step (an MLP
// 784-512-512-10 at batch 128, SGD with momentum 0.9, cross-entropy),
// the medians of -reps repetitions. bench/go.py runs it beside the same
// workloads from Rust and PyTorch, alternating rounds.
package main

import (
	"flag"
	"fmt"
	"sort"
	"time"

	ft "ferrotorch"
	"ferrotorch/nn"
	F "ferrotorch/nn/functional"
	"ferrotorch/optim"
)

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func addNs(reps int) float64 {
	a, b := ft.MustOnes([]int64{1}), ft.MustOnes([]int64{1})
	const n = 200000
	for i := 0; i < 20000; i++ {
		ft.MustAdd(a, b)
	}
	var ts []float64
	for r := 0; r < reps; r++ {
		t := time.Now()
		for i := 0; i < n; i++ {
			ft.MustAdd(a, b)
		}
		ts = append(ts, float64(time.Since(t).Nanoseconds())/n)
	}
	return median(ts)
}

func w8Ms(reps int, gc bool) float64 {
	ft.ManualSeed(0)
	net := nn.Sequential(nn.Linear(784, 512, true), nn.ReLU(), nn.Linear(512, 512, true), nn.ReLU(),
		nn.Linear(512, 10, true))
	opt, err := optim.SGD(net.Parameters(), 0.01, 0.9, 0)
	if err != nil {
		panic(err)
	}
	x := ft.MustRandN([]int64{128, 784})
	y := ft.MustRandInt(10, []int64{128})
	step := func() {
		if gc {
			ft.GC()
		}
		loss := F.MustCrossEntropy(net.Forward(x), y)
		opt.ZeroGrad()
		loss.MustBackward()
		if err := opt.Step(); err != nil {
			panic(err)
		}
	}
	for i := 0; i < 5; i++ {
		step()
	}
	const inner = 20
	var ts []float64
	for r := 0; r < reps; r++ {
		t := time.Now()
		for i := 0; i < inner; i++ {
			step()
		}
		ts = append(ts, float64(time.Since(t).Nanoseconds())/inner/1e6)
	}
	if gc {
		ft.FinishGC()
	}
	return median(ts)
}

func main() {
	reps := flag.Int("reps", 5, "repetitions (the median is printed)")
	threads := flag.Int("threads", 2, "intra-op threads")
	flag.Parse()
	if err := ft.SetNumThreads(*threads); err != nil {
		panic(err)
	}
	fmt.Printf("go add 1-element %.1f ns\n", addNs(*reps))
	fmt.Printf("go W8 step %.3f ms\n", w8Ms(*reps, false))
	fmt.Printf("go W8 step with GC %.3f ms\n", w8Ms(*reps, true))
}
