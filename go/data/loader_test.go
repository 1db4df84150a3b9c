package data_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	ft "ferrotorch"
	"ferrotorch/data"
	"ferrotorch/internal/testutil"
	"ferrotorch/nn"
	F "ferrotorch/nn/functional"
	"ferrotorch/optim"
)

func ints(t *testing.T, x ft.Tensor) []int64 {
	t.Helper()
	if x.DType() != ft.Int64 {
		var err error
		if x, err = ft.To(x, ft.Int64); err != nil {
			t.Fatal(err)
		}
	}
	v, err := x.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// epoch collects every minibatch's first field (as ints) until Scan ends.
func epoch(t *testing.T, l *data.Loader) [][]int64 {
	t.Helper()
	var out [][]int64
	for l.Scan() {
		out = append(out, ints(t, l.Minibatch()[0]))
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestATensorDatasetInOrderAndDropLast(t *testing.T) {
	x := ft.MustFromSlice([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	y := ft.MustFromSlice([]float32{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}, 10, 1)
	ds, err := data.NewTensorDataset(x, y)
	if err != nil {
		t.Fatal(err)
	}
	l, err := data.NewLoader(ds, data.BatchSize(4))
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("Len %d, want 3", l.Len())
	}
	got := epoch(t, l)
	want := [][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	// the next Scan starts a new epoch; each field keeps its rows
	if !l.Scan() {
		t.Fatal("no second epoch")
	}
	b := l.Minibatch()
	if s := b[1].Shape(); len(s) != 2 || s[0] != 4 || s[1] != 1 {
		t.Fatalf("second field's shape %v", s)
	}
	for l.Scan() {
	}
	l2, _ := data.NewLoader(ds, data.BatchSize(4), data.DropLast(true))
	if got := epoch(t, l2); len(got) != 2 || l2.Len() != 2 {
		t.Fatalf("drop_last: %v", got)
	}
}

// a user's dataset: sample i is (i, i*i) as two tensors
type squares struct{ n int }

func (s squares) Len() int { return s.n }
func (s squares) Get(i int) ([]ft.Tensor, error) {
	return []ft.Tensor{ft.MustFromSlice([]int64{int64(i)}), ft.MustFromSlice([]float32{float32(i * i)}, 1)}, nil
}

func TestShuffledEpochsArePermutationsAndASeedFixesThem(t *testing.T) {
	ds, _ := data.NewTensorDataset(ft.MustFromSlice([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}))
	order := func(l *data.Loader) []int64 {
		var all []int64
		for _, b := range epoch(t, l) {
			all = append(all, b...)
		}
		return all
	}
	a, _ := data.NewLoader(ds, data.BatchSize(5), data.Shuffle(true), data.Seed(7))
	b, _ := data.NewLoader(ds, data.BatchSize(5), data.Shuffle(true), data.Seed(7))
	first, again := order(a), order(b)
	if fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatalf("same seed, different orders: %v %v", first, again)
	}
	sorted := append([]int64(nil), first...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	if fmt.Sprint(sorted) != fmt.Sprint([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Fatalf("an epoch is not a permutation: %v", first)
	}
	if fmt.Sprint(first) == fmt.Sprint(sorted) {
		t.Fatalf("shuffled epoch in order: %v", first)
	}
	if second := order(a); fmt.Sprint(second) == fmt.Sprint(first) {
		t.Fatalf("the second epoch repeats the first: %v", second)
	}
	// a user's dataset and a Go slice draw the same order for the seed
	u, _ := data.NewLoader(squares{12}, data.BatchSize(5), data.Shuffle(true), data.Seed(7))
	if got := order(u); fmt.Sprint(got) != fmt.Sprint(first) {
		t.Fatalf("user dataset order %v, tensor dataset %v", got, first)
	}
	type sample struct {
		id    int64
		label string
	}
	var samples []sample
	for i := 0; i < 12; i++ {
		samples = append(samples, sample{int64(i), strconv.Itoa(i)})
	}
	sd := data.SliceDataset(samples, func(s sample) ([]ft.Tensor, error) {
		return []ft.Tensor{ft.MustFromSlice([]int64{s.id})}, nil
	})
	s, _ := data.NewLoader(sd, data.BatchSize(5), data.Shuffle(true), data.Seed(7))
	if got := order(s); fmt.Sprint(got) != fmt.Sprint(first) {
		t.Fatalf("slice dataset order %v, tensor dataset %v", got, first)
	}
}

func TestAUserDatasetIsStackedFieldByField(t *testing.T) {
	l, err := data.NewLoader(squares{5}, data.BatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Scan() {
		t.Fatal(l.Err())
	}
	b := l.Minibatch()
	if len(b) != 2 || fmt.Sprint(b[0].Shape()) != "[2 1]" || fmt.Sprint(b[1].Shape()) != "[2 1]" {
		t.Fatalf("batch %v", b)
	}
	sq, _ := b[1].Float32s()
	if fmt.Sprint(sq) != "[0 1]" {
		t.Fatalf("second field %v", sq)
	}
}

type ragged struct{}

func (ragged) Len() int { return 4 }
func (ragged) Get(i int) ([]ft.Tensor, error) {
	if i == 3 {
		return nil, fmt.Errorf("sample %d is unreadable", i)
	}
	fields := []ft.Tensor{ft.MustFromSlice([]int64{int64(i)})}
	if i == 1 {
		fields = append(fields, fields[0])
	}
	return fields, nil
}

func TestBadInputIsAnError(t *testing.T) {
	if _, err := data.NewTensorDataset(ft.MustFromSlice([]int64{1, 2}), ft.MustFromSlice([]int64{1, 2, 3})); err == nil ||
		!strings.Contains(err.Error(), "Size mismatch") {
		t.Fatalf("mismatched tensors: %v", err)
	}
	if _, err := data.NewTensorDataset(); err == nil {
		t.Fatal("no tensors: no error")
	}
	if _, err := data.NewLoader(squares{3}, data.BatchSize(0)); err == nil ||
		!strings.Contains(err.Error(), "batch_size should be a positive integer") {
		t.Fatalf("batch size 0: %v", err)
	}
	l, _ := data.NewLoader(ragged{}, data.BatchSize(2))
	if l.Scan() || l.Err() == nil || !strings.Contains(l.Err().Error(), "sample 1 has 2 fields") {
		t.Fatalf("ragged fields: %v", l.Err())
	}
	// one sample a batch: samples 0 to 2 load, sample 3's error stops Scan
	l, _ = data.NewLoader(ragged{}, data.BatchSize(1))
	n := 0
	for l.Scan() {
		n++
	}
	if n != 3 || l.Err() == nil || !strings.Contains(l.Err().Error(), "sample 3 is unreadable") {
		t.Fatalf("after %d batches: %v", n, l.Err())
	}
	ds, _ := data.NewTensorDataset(ft.MustFromSlice([]int64{1, 2}))
	if _, err := ds.Get(2); err == nil {
		t.Fatal("Get past the end: no error")
	}
}

// 2,000 training steps through Scan, with no GC of the loop's own, hold a
// flat resident set: within 20% of its size after step 100 (Scan
// collects each step's intermediates, GoTorch's contract).
func TestStepsThroughScanHoldAFlatRSS(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	ft.ManualSeed(0)
	x := ft.MustRandN([]int64{256, 784})
	y := ft.MustRandInt(10, []int64{256})
	ds, _ := data.NewTensorDataset(x, y)
	loader, err := data.NewLoader(ds, data.BatchSize(64), data.Shuffle(true))
	if err != nil {
		t.Fatal(err)
	}
	model := nn.Sequential(nn.Linear(784, 128, true), nn.ReLU(), nn.Linear(128, 10, true))
	opt, err := optim.Adam(model.Parameters(), 1e-3, 0)
	if err != nil {
		t.Fatal(err)
	}
	var base, peak int64
	step := 0
	for step < steps {
		for loader.Scan() {
			b := loader.Minibatch()
			loss := F.MustCrossEntropy(model.Forward(b[0]), b[1])
			opt.ZeroGrad()
			loss.MustBackward()
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			step++
			if step == 100 {
				base = testutil.RSS(t)
			} else if step > 100 {
				if r := testutil.RSS(t); r > peak {
					peak = r
				}
			}
		}
		if err := loader.Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("RSS %.1f MiB after step 100, peak %.1f MiB after", float64(base)/(1<<20), float64(peak)/(1<<20))
	if float64(peak) > 1.2*float64(base) {
		t.Fatalf("RSS grew from %d to %d bytes", base, peak)
	}
}
