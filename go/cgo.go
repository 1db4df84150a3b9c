// Package ferrotorch is ferrotorch for Go: tensors, every native op of the
// dispatcher, autograd and tensor lifetime, over ferrotorch's C ABI
// (crates/ferrotorch-c) through cgo. It follows GoTorch's design
// (seeds/003): three layers, this package (tensors and native ops,
// RandN, MM, Add, ...), ferrotorch/nn/functional (Linear, Conv2d,
// CrossEntropy, ...) and ferrotorch/nn (modules by struct embedding);
// errors are values, with Must... variants that panic; GC and FinishGC make
// a training step's intermediate tensors free synchronously.
//
// Build: the package links libferrotorch_c; point cgo at it, e.g.
//
//	cargo build --release -p ferrotorch-c
//	export CGO_LDFLAGS="-L$PWD/target/release -Wl,-rpath,$PWD/target/release"
//	cd go && go test ./...
package ferrotorch

/*
#cgo CFLAGS: -I${SRCDIR}/../crates/ferrotorch-c/include
#cgo LDFLAGS: -lferrotorch_c
#include "ferrotorch.h"
#include <stdlib.h>
*/
import "C"
