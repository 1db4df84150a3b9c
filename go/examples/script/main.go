// Command script loads a saved program (a model traced and saved with
// ferrotorch's Python package: torch.jit.trace(...).save(path)) and runs
// it on an input, printing the output.
//
//	go run ./examples/script ../crates/ferrotorch-node/test/fixtures/mlp.pt 2 4
package main

import (
	"fmt"
	"os"
	"strconv"

	ft "ferrotorch"
	"ferrotorch/jit"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: script PROGRAM.pt SIZE...")
		os.Exit(2)
	}
	var shape []int64
	for _, s := range os.Args[2:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad size", s)
			os.Exit(2)
		}
		shape = append(shape, n)
	}
	m, err := jit.Load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	x := ft.MustLinspace(-1, 1, shapeNumel(shape)).MustView(shape)
	var outs []ft.Tensor
	ft.NoGrad(func() { outs, err = m.Forward(x) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, o := range outs {
		fmt.Println(o)
	}
}

func shapeNumel(shape []int64) int64 {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	return n
}
