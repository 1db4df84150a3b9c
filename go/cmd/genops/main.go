// Command genops writes ops_gen.go from the op schemas the C ABI lists:
//
//	go run ./cmd/genops > ops_gen.go
//
// (ops_test.go checks that the committed file is current.)
package main

import (
	"fmt"
	"os"

	"ferrotorch"
	"ferrotorch/internal/gen"
)

func main() {
	src, err := gen.Generate(ferrotorch.Ops())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(src)
}
