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

// A goroutine making tensors yields once yieldEvery has passed, checking
// the clock on every 16th tensor, and never inside NoGrad (Note [Yielding
// to sysmon]).
func TestMakingTensorsYieldsWhenDue(t *testing.T) {
	a := MustOnes([]int64{1})
	due := func() { atomic.StoreInt64(&lastYield, time.Now().UnixNano()-2*yieldEvery) }
	made := func(n int) {
		for i := 0; i < n; i++ {
			MustAdd(a, a)
		}
	}
	due()
	made(16)
	if since := time.Now().UnixNano() - atomic.LoadInt64(&lastYield); since > yieldEvery {
		t.Fatalf("16 tensors made %v after a yield was due, and none happened", time.Duration(since))
	}
	before := atomic.LoadInt64(&lastYield)
	made(16)
	if atomic.LoadInt64(&lastYield) != before {
		t.Fatal("yielded again before yieldEvery passed")
	}
	due()
	before = atomic.LoadInt64(&lastYield)
	NoGrad(func() { made(32) })
	if atomic.LoadInt64(&lastYield) != before {
		t.Fatal("yielded inside NoGrad, on a locked thread")
	}
}

// FreeInto releases a tensor's reference at once and keeps its bytes
// counted against the keeper until the keeper goes; with no keeper it is
// Free. (Finalizers of earlier tests' tensors may lower liveBytes by a few
// KiB meanwhile, so the tensors are 4 MiB and the checks allow 1 MiB.)
func TestFreeIntoMovesTheBytesToTheKeeper(t *testing.T) {
	const slack = 1 << 20
	near := func(what string, got, want int64) {
		t.Helper()
		if got > want || got < want-slack {
			t.Fatalf("%s: %d live bytes, want %d (less at most %d)", what, got, want, slack)
		}
	}
	GC() // earlier tests' garbage collected and its finalizers run first
	FinishGC()
	time.Sleep(10 * time.Millisecond)
	a := MustOnes([]int64{1 << 20})
	keeper, inter := MustAdd(a, a), MustAdd(a, a)
	kb, ib := atomic.LoadInt64(&keeper.h.bytes), atomic.LoadInt64(&inter.h.bytes)
	live := atomic.LoadInt64(&liveBytes)
	inter.FreeInto(keeper)
	if inter.Defined() {
		t.Fatal("FreeInto left the tensor defined")
	}
	if got := atomic.LoadInt64(&keeper.h.bytes); got != kb+ib {
		t.Fatalf("keeper counts %d bytes, want %d", got, kb+ib)
	}
	near("after FreeInto", atomic.LoadInt64(&liveBytes), live)
	keeper.Free()
	near("after the keeper's Free", atomic.LoadInt64(&liveBytes), live-kb-ib)
	lone := MustAdd(a, a)
	lb := atomic.LoadInt64(&lone.h.bytes)
	live = atomic.LoadInt64(&liveBytes)
	lone.FreeInto(Tensor{})
	near("FreeInto with no keeper", atomic.LoadInt64(&liveBytes), live-lb)
}
