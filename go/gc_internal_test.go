package ferrotorch

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// dropped makes n tensors through the fast path, keeps only their C
// handles, and lets the Go objects become unreachable.
func dropped(n int) []*handle {
	a, b := MustOnes([]int64{4}), MustOnes([]int64{4})
	hs := make([]*handle, n)
	for i := range hs {
		t := MustAdd(a, b)
		hs[i] = &handle{p: t.h.p}
	}
	return hs
}

// Handles whose Go objects were collected are freed in C: by GC (which
// flushes the queue before it returns), and otherwise by the next op
// called from Go (Note [Go finalizer cost]).
func TestCollectedHandlesAreFreedInC(t *testing.T) {
	GC()
	hs := dropped(50)
	GC()
	for i, h := range hs {
		if handleLive(h.p) {
			t.Fatalf("handle %d is still live after GC", i)
		}
	}
	FinishGC()

	hs = dropped(50)
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for fqLenNow() < 50 && time.Now().Before(deadline) {
		runtime.Gosched() // the finalizers run on their own goroutine
	}
	if fqLenNow() < 50 {
		t.Skip("the finalizers did not run in time")
	}
	for _, h := range hs {
		if !handleLive(h.p) {
			t.Fatal("a queued handle was freed before any op ran")
		}
	}
	out := MustNeg(MustOnes([]int64{1})) // frees the queue inside its cgo call
	for i, h := range hs {
		if h.p != out.h.p && handleLive(h.p) {
			t.Fatalf("handle %d is still live after the next op", i)
		}
	}
}

func fqLenNow() int {
	fqMu.Lock()
	defer fqMu.Unlock()
	return len(fq)
}

// Small tensors count what they cost in C, not only their data, so a loop
// of 1-element ops collects by pressure long before Go's own heap would
// ask for it: 20,000 of them are about 5 MiB in C but 80 KB of data and
// under 2 MiB of Go objects (Note [Tensor lifetime in Go], tensorOverhead).
func TestSmallTensorsCountTheirOverhead(t *testing.T) {
	a, b := MustOnes([]int64{1}), MustOnes([]int64{1})
	for atomic.LoadInt32(&collecting) != 0 {
		time.Sleep(time.Millisecond) // an earlier test's threshold update
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	for i := 0; i < 20000; i++ {
		MustAdd(a, b)
	}
	runtime.ReadMemStats(&ms)
	if n := ms.NumGC - before; n < 2 {
		t.Fatalf("%d collections during 20,000 1-element adds; want pressure to collect", n)
	}
}
