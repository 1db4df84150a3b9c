package ferrotorch

/*
#include "ferrotorch.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Note [Tensor lifetime in Go]
// A Tensor holds a C handle (one reference to a ferrotorch tensor) in a
// small Go object with a finalizer that frees the handle when Go's
// mark-and-sweep collector finds the object unreachable. Go's collector
// only sees its own heap, where a tensor costs a few bytes, so two things
// keep C memory bounded:
//
//   - Pressure: the bytes held by live handles are counted, and when they
//     grow by as much as was live after the last collection (at least
//     pressureFloor: Go's own default policy, GOGC=100, applied to C
//     memory), the goroutine making the tensor collects. A training loop
//     that never calls GC still holds a flat resident set. See Note
//     [Pressure collections] for why it collects in place and not so
//     often.
//   - GC and FinishGC, GoTorch's design (seeds/003): GC marks the tensors
//     made from now on as one step's intermediates; the next GC collects
//     and waits until the previous step's intermediates are freed, so the
//     memory is back before the step starts. A tensor of a step that is
//     still reachable (kept in a slice, say) cannot be freed; GC stops
//     waiting once the finalizers make no progress for gcQuiet, so it
//     never blocks on it. FinishGC ends the marking.
//
// Free releases a tensor at once, for callers that want C++-like control.
//
// Note [Go finalizer cost]
// A finalizer is the largest part of a small op's cost from Go, so:
//   - handle objects are padded to 64 bytes: Go keeps a span's finalizer
//     records in a sorted list, and 24-byte objects put 341 of them in a
//     span; at 64 bytes SetFinalizer plus the finalizer's run cost about
//     170 ns instead of 320 ns (measured on Go 1.19, Zen 4).
//   - a finalizer does not call C: it queues the C handle, and the queue is
//     freed in one cgo call, by the next op from Go (inside that op's own
//     cgo call, Note [The Go fast path]) or by the finalizer goroutine
//     once freeQueueMax handles or freeQueueBytes bytes wait. GC, FinishGC
//     and pressure collections flush it, so their memory is back when they
//     return.

const (
	pressureFloor = 1 << 20
	gcQuiet       = 5 * time.Millisecond
)

var (
	liveBytes  int64 // bytes held by live handles
	nextGC     int64 = pressureFloor
	collecting int32 // a pressure collection is running

	gcMu     sync.Mutex
	marking  bool
	markFlag int32              // marking, readable without the lock
	gen      uint64             // the step generation new tensors join while marking
	pending  = map[uint64]int{} // generation -> its tensors not yet freed
	progress = make(chan struct{}, 1)
)

type handle struct {
	p     *C.FtTensor
	bytes int64
	gen   uint64    // 0: not tracked by GC
	_     [5]uint64 // to 64 bytes (Note [Go finalizer cost])
}

const (
	freeQueueMax   = 256
	freeQueueBytes = 4 << 20
)

var (
	fqMu    sync.Mutex
	fq      []*C.FtTensor // C pointers only: the slice may be passed to C
	fqBytes int64
	fqLen   int32 // len(fq), readable without the lock
)

func finalize(h *handle) {
	if h.p == nil {
		return
	}
	fqMu.Lock()
	fq = append(fq, h.p)
	fqBytes += h.bytes
	full := len(fq) >= freeQueueMax || fqBytes >= freeQueueBytes
	atomic.StoreInt32(&fqLen, int32(len(fq)))
	fqMu.Unlock()
	h.p = nil
	h.forget()
	if full {
		flushFreeQueue()
	}
}

// takeFreeQueue removes the queued handles (nil when none), for a caller
// that frees them in C and then hands the slice back with putFreeQueue.
func takeFreeQueue() []*C.FtTensor {
	if atomic.LoadInt32(&fqLen) == 0 {
		return nil
	}
	fqMu.Lock()
	q := fq
	fq = spareQueue
	spareQueue = nil
	fqBytes = 0
	atomic.StoreInt32(&fqLen, 0)
	fqMu.Unlock()
	return q
}

var spareQueue []*C.FtTensor // guarded by fqMu

func putFreeQueue(q []*C.FtTensor) {
	if q == nil {
		return
	}
	fqMu.Lock()
	if spareQueue == nil {
		spareQueue = q[:0]
	}
	fqMu.Unlock()
}

// flushFreeQueue frees the queued handles now (Note [Go finalizer cost]).
func flushFreeQueue() {
	q := takeFreeQueue()
	if len(q) == 0 {
		return
	}
	C.ft_tensor_free_many(&q[0], C.size_t(len(q)))
	putFreeQueue(q)
}

func (h *handle) release() {
	if h.p == nil {
		return
	}
	C.ft_tensor_free(h.p)
	h.p = nil
	h.forget()
}

// forget removes a freed handle's bytes and step membership from the
// counts of Note [Tensor lifetime in Go].
func (h *handle) forget() {
	atomic.AddInt64(&liveBytes, -h.bytes)
	if h.gen != 0 {
		gcMu.Lock()
		if n, ok := pending[h.gen]; ok {
			if n <= 1 {
				delete(pending, h.gen)
			} else {
				pending[h.gen] = n - 1
			}
		}
		gcMu.Unlock()
		select {
		case progress <- struct{}{}:
		default:
		}
	}
}

// tensorOverhead is what a tensor costs in C beside its data: the handle's
// slot, the tensor and its storage's headers and the data block's rounding
// to 64 bytes (about 300 bytes for a 1-element tensor). Counting it makes
// pressure collect after about 4,000 small tensors instead of 260,000 (1
// MiB of 4-byte tensors); a loop of 1-element `Add`s then reuses memory
// that is still in cache: 1.2 -> 0.95 us a call (Zen 4, Go 1.19).
const tensorOverhead = 256

// wrap makes a Tensor owning handle p, which holds about `bytes` bytes of
// data.
func wrap(p *C.FtTensor, bytes int64) Tensor {
	bytes += tensorOverhead
	h := &handle{p: p, bytes: bytes}
	if atomic.AddInt64(&liveBytes, bytes) > atomic.LoadInt64(&nextGC) {
		pressure()
	}
	if atomic.LoadInt32(&markFlag) != 0 {
		gcMu.Lock()
		if marking {
			h.gen = gen
			pending[gen]++
		}
		gcMu.Unlock()
	}
	runtime.SetFinalizer(h, finalize)
	return Tensor{h}
}

// Note [Pressure collections]
// W8 from Go (bench/go.py, Zen 4, 2 threads) measured three designs:
//   - a collection on a new goroutine each time C memory grew by a
//     quarter: 4.0 ms a step against Rust's 2.8. runtime.GC spins
//     (Gosched) until sweeping ends, and on a machine whose cores all run
//     ferrotorch's intra-op threads that goroutine takes one of them for
//     about 2.5 ms per collection, so every parallel op waits on its
//     slower half (perf: the pool's helper and run_chunks waiting, and
//     8 % of all samples in the pressure goroutine);
//   - the same when memory doubles (a third as many collections): 3.3–3.7
//     ms;
//   - collecting in place, in the goroutine whose tensor crossed the
//     threshold, when memory doubles: 3.2–3.3 ms. While it collects no
//     ferrotorch op runs on its behalf, so the collector has the cores to
//     itself and a collection takes about 0.5 ms.
// The third is what pressure does. Collecting in place pauses that
// goroutine as Go's own runtime.GC would; the threshold is only set again
// after the finalizers of that collection have queued their handles.

// pressure collects now, in the calling goroutine, when C memory grew
// (Note [Pressure collections]).
func pressure() {
	if !atomic.CompareAndSwapInt32(&collecting, 0, 1) {
		return
	}
	runtime.GC()
	go func() {
		// finalizers run after the collection; give them a moment, then
		// set the next threshold from what is still live
		time.Sleep(time.Millisecond)
		flushFreeQueue()
		live := atomic.LoadInt64(&liveBytes)
		window := live
		if window < pressureFloor {
			window = pressureFloor
		}
		atomic.StoreInt64(&nextGC, live+window)
		atomic.StoreInt32(&collecting, 0)
	}()
}

// GC starts a training step (GoTorch's gotorch.GC): it frees the tensors
// made since the previous GC that are no longer reachable, waiting until
// their memory is returned, and marks the tensors made from now on as this
// step's intermediates (Note [Tensor lifetime in Go]).
func GC() {
	gcMu.Lock()
	prev := gen
	wasMarking := marking
	gen++
	marking = true
	atomic.StoreInt32(&markFlag, 1)
	gcMu.Unlock()
	runtime.GC()
	if wasMarking {
		waitFreed(prev)
	}
}

// waitFreed waits until generation g's tensors are freed, or until the
// finalizers stop making progress (the rest are still reachable).
func waitFreed(g uint64) {
	for {
		gcMu.Lock()
		n := pending[g]
		gcMu.Unlock()
		if n == 0 {
			flushFreeQueue()
			return
		}
		select {
		case <-progress:
		case <-time.After(gcQuiet):
			gcMu.Lock()
			delete(pending, g) // survivors are freed whenever Go collects them
			gcMu.Unlock()
			flushFreeQueue()
			return
		}
	}
}

// FinishGC ends the marking GC started (GoTorch's gotorch.FinishGC): it
// frees the last step's unreachable intermediates and stops tracking.
func FinishGC() {
	gcMu.Lock()
	prev := gen
	wasMarking := marking
	marking = false
	atomic.StoreInt32(&markFlag, 0)
	gen++
	gcMu.Unlock()
	runtime.GC()
	if wasMarking {
		waitFreed(prev)
	}
}

// handleLive reports whether p is still a live C tensor handle (for the
// tests of Note [Go finalizer cost]: freed handles stay readable, Note [C
// handles] in crates/ferrotorch-c).
func handleLive(p *C.FtTensor) bool {
	var n C.size_t
	return C.ft_tensor_ndim(p, &n) == 0
}
