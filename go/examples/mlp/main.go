// Command mlp trains a small MLP from Go (Linear-ReLU-Linear, AdamW,
// cross-entropy) on two synthetic classes, then saves its weights as
// safetensors that the Python package loads (check.py does), with a JSON
// file of test inputs and the Go model's outputs for them.
//
//	go run ./examples/mlp -out /tmp/mlp
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"

	ft "ferrotorch"
	"ferrotorch/nn"
	F "ferrotorch/nn/functional"
	"ferrotorch/optim"
)

// MLP is a user's module: struct embedding, layers as fields.
type MLP struct {
	nn.Module
	FC1 *nn.LinearModule
	FC2 *nn.LinearModule
}

func NewMLP(in, hidden, out int64) *MLP {
	m := &MLP{FC1: nn.Linear(in, hidden, true), FC2: nn.Linear(hidden, out, true)}
	m.Init(m)
	return m
}

func (m *MLP) Forward(x ft.Tensor) ft.Tensor {
	return m.FC2.Forward(ft.MustRelu(m.FC1.Forward(x)))
}

// data is two noisy rings: class 0 inside radius 1, class 1 outside.
func data(n int) (ft.Tensor, ft.Tensor) {
	ft.ManualSeed(42)
	pts := ft.MustRandN([]int64{int64(n), 2})
	xy, _ := pts.Float32s()
	labels := make([]int64, n)
	for i := 0; i < n; i++ {
		if math.Hypot(float64(xy[2*i]), float64(xy[2*i+1])) > 1 {
			labels[i] = 1
		}
	}
	return pts, ft.MustFromSlice(labels)
}

func main() {
	out := flag.String("out", "mlp", "output path prefix (.safetensors, .json)")
	steps := flag.Int("steps", 300, "training steps")
	flag.Parse()

	x, y := data(512)
	model := NewMLP(2, 32, 2)
	opt, err := optim.AdamW(model.Parameters(), 0.01, 0.01)
	if err != nil {
		panic(err)
	}
	for step := 0; step < *steps; step++ {
		ft.GC() // free the last step's intermediates now (GoTorch's design)
		loss := F.MustCrossEntropy(model.Forward(x), y)
		opt.ZeroGrad()
		loss.MustBackward()
		if err := opt.Step(); err != nil {
			panic(err)
		}
		if step%100 == 0 || step == *steps-1 {
			fmt.Printf("step %d loss %.4f\n", step, loss.MustItem())
		}
	}
	ft.FinishGC()

	if err := model.Save(*out + ".safetensors"); err != nil {
		panic(err)
	}
	test := []float32{0, 0, 1.5, -1.5, 0.3, 0.2, -2, 0.1}
	model.Eval()
	var logits []float32
	ft.NoGrad(func() {
		logits, err = model.Forward(ft.MustFromSlice(test, 4, 2)).Float32s()
	})
	if err != nil {
		panic(err)
	}
	js, _ := json.Marshal(map[string]interface{}{"input": test, "output": logits})
	if err := os.WriteFile(*out+".json", js, 0o644); err != nil {
		panic(err)
	}
	fmt.Println("saved", *out+".safetensors")
}
