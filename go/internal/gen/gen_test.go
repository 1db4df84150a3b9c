package gen

import (
	"bytes"
	"os"
	"testing"

	"ferrotorch"
)

// The committed ops_gen.go is what the generator makes from today's
// schemas (regenerate with: go run ./cmd/genops > ops_gen.go).
func TestGeneratedOpsAreCurrent(t *testing.T) {
	made, err := Generate(ferrotorch.Ops())
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../ops_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(made, committed) {
		t.Fatal("ops_gen.go is stale: run `go run ./cmd/genops > ops_gen.go` in go/ and commit it")
	}
}

func TestParseSchemas(t *testing.T) {
	s, err := Parse("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "max" || s.Overload != "dim" || len(s.Args) != 3 || !s.Args[2].Default {
		t.Fatalf("%+v", s)
	}
	if len(s.Returns) != 2 || s.Returns[0] != "Tensor" {
		t.Fatalf("returns %v", s.Returns)
	}
	s, _ = Parse("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
	if s.Args[0].Type != "Tensor" || !s.Args[2].KwOnly || s.Returns[0] != "Tensor" {
		t.Fatalf("%+v", s)
	}
	if goName("add_") != "Add_" || goName("log_softmax") != "LogSoftmax" || goName("randn") != "RandN" {
		t.Fatal("names")
	}
}
