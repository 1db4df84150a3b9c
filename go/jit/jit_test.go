package jit_test

import (
	"encoding/json"
	"os"
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
