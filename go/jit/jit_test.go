package jit_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	ft "ferrotorch"
	"ferrotorch/jit"
)

const fixtures = "../../crates/ferrotorch-node/test/fixtures/"

// A program traced and saved by the Python package runs from Go with the
// output Python's run of the saved file gave (mlp.json).
func TestSavedProgramRunsAsInPython(t *testing.T) {
	raw, err := os.ReadFile(fixtures + "mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Input, Output [][]float64
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	var in []float32
	for _, r := range fx.Input {
		for _, v := range r {
			in = append(in, float32(v))
		}
	}
	m, err := jit.Load(fixtures + "mlp.pt")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Forward(ft.MustFromSlice(in, 2, 4))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outs[0].Float32s()
	i := 0
	for _, r := range fx.Output {
		for _, v := range r {
			if got[i] != float32(v) {
				t.Fatalf("output %d: %v, Python %v", i, got[i], v)
			}
			i++
		}
	}
	// wrong input: an error naming the problem, not a crash
	if _, err := m.Forward(ft.MustOnes([]int64{2, 5})); err == nil {
		t.Fatal("a [2, 5] input was accepted by Linear(4, 8)")
	}
	if _, err := jit.Load(fixtures + "mlp.json"); err == nil {
		t.Fatal("a JSON file loaded as a program")
	}
}

// seeds/000's flow on a file PyTorch wrote: a CNN traced and saved by
// torch.jit.trace(...).save() (ferrotorch-jit's TorchScript fixtures,
// gen.py) runs from Go with PyTorch's output.
func TestArchivePyTorchWroteRunsWithItsOutput(t *testing.T) {
	const dir = "../../crates/ferrotorch-jit/tests/fixtures/torchscript/"
	raw, err := os.ReadFile(dir + "cnn_io.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		InputShape []int64   `json:"input_shape"`
		Input      []float64 `json:"input"`
		Output     []float64 `json:"output"`
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	in := make([]float32, len(fx.Input))
	for i, v := range fx.Input {
		in[i] = float32(v)
	}
	m, err := jit.Load(dir + "cnn.pt")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Forward(ft.MustFromSlice(in, fx.InputShape...))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outs[0].Float32s()
	if len(got) != len(fx.Output) {
		t.Fatalf("%d outputs, PyTorch %d", len(got), len(fx.Output))
	}
	for i, v := range fx.Output {
		if d := float64(got[i]) - v; d > 1e-5*(1+abs(v)) || -d > 1e-5*(1+abs(v)) {
			t.Fatalf("output %d: %v, PyTorch %v", i, got[i], v)
		}
	}
	if _, err := jit.Load(dir + "scripted.pt"); err == nil || !strings.Contains(err.Error(), "'if' is control flow") {
		t.Fatalf("a scripted archive: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
