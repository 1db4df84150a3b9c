package nn_test

import (
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	ft "ferrotorch"
	"ferrotorch/nn"
	F "ferrotorch/nn/functional"
	"ferrotorch/optim"
)

// A user's modules, the way a GoTorch user writes them: struct embedding,
// submodules in fields and slices, a buffer by tag.
type Block struct {
	nn.Module
	Conv1 *nn.Conv2dModule
	BN1   *nn.BatchNorm2dModule
}

func NewBlock(c int64) *Block {
	b := &Block{Conv1: nn.Conv2d(c, c, 3, 1, 1, false), BN1: nn.BatchNorm2d(c, 1e-5, 0.1)}
	b.Init(b)
	return b
}

func (b *Block) Forward(x ft.Tensor) ft.Tensor {
	return ft.MustRelu(b.BN1.Forward(b.Conv1.Forward(x)).MustAdd(x))
}

type Net struct {
	nn.Module
	Stem   *nn.Conv2dModule
	Layer1 []*Block
	FC     *nn.LinearModule
	Scale  ft.Tensor `ferrotorch:"buffer"`
	Hidden int64
}

func NewNet() *Net {
	n := &Net{
		Stem:   nn.Conv2d(1, 4, 3, 1, 1, true),
		Layer1: []*Block{NewBlock(4), NewBlock(4)},
		FC:     nn.Linear(4, 3, true),
		Scale:  ft.MustOnes([]int64{1}),
	}
	n.Init(n)
	return n
}

func (n *Net) Forward(x ft.Tensor) ft.Tensor {
	h := n.Stem.Forward(x)
	for _, b := range n.Layer1 {
		h = b.Forward(h)
	}
	h = h.MustMeanDim([]int64{2, 3})
	return n.FC.Forward(h).MustMul(n.Scale)
}

func names(ns []ft.Named) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

func TestModuleNamesFollowPyTorch(t *testing.T) {
	net := NewNet()
	got := names(net.NamedParameters())
	want := []string{"stem.weight", "stem.bias",
		"layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias",
		"layer1.1.conv1.weight", "layer1.1.bn1.weight", "layer1.1.bn1.bias",
		"fc.weight", "fc.bias"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("parameters\n got %v\nwant %v", got, want)
	}
	buffers := names(net.NamedBuffers())
	sort.Strings(buffers)
	wantB := []string{"layer1.0.bn1.num_batches_tracked", "layer1.0.bn1.running_mean",
		"layer1.0.bn1.running_var", "layer1.1.bn1.num_batches_tracked",
		"layer1.1.bn1.running_mean", "layer1.1.bn1.running_var", "scale"}
	if strings.Join(buffers, " ") != strings.Join(wantB, " ") {
		t.Fatalf("buffers %v", buffers)
	}
	if len(net.StateDict()) != len(want)+len(wantB) {
		t.Fatalf("state dict has %d entries", len(net.StateDict()))
	}
	// train and eval reach every submodule
	net.Eval()
	if net.Layer1[1].BN1.IsTraining() || net.IsTraining() {
		t.Fatal("Eval did not reach the submodules")
	}
	net.Train(true)
	if !net.Layer1[0].BN1.IsTraining() {
		t.Fatal("Train did not reach the submodules")
	}
}

func TestStateDictRoundTripThroughSafetensors(t *testing.T) {
	ft.ManualSeed(1)
	a, b := NewNet(), NewNet()
	x := ft.MustRandN([]int64{2, 1, 5, 5})
	a.Eval()
	b.Eval()
	ya, _ := a.Forward(x).Float32s()
	yb, _ := b.Forward(x).Float32s()
	if ya[0] == yb[0] {
		t.Fatal("two fresh nets agree; the test cannot tell a load happened")
	}
	path := filepath.Join(t.TempDir(), "net.safetensors")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(path); err != nil {
		t.Fatal(err)
	}
	yb, _ = b.Forward(x).Float32s()
	for i := range ya {
		if ya[i] != yb[i] {
			t.Fatalf("output %d: %v after loading, %v saved", i, yb[i], ya[i])
		}
	}
	// strict loading names what is missing
	err := b.LoadStateDict(a.StateDict()[1:], true)
	if err == nil || !strings.Contains(err.Error(), "stem.weight") {
		t.Fatalf("strict load: %v", err)
	}
}

func TestToConvertsParametersAndKeepsGrad(t *testing.T) {
	l := nn.Linear(3, 2, true)
	if err := l.To(ft.Float64); err != nil {
		t.Fatal(err)
	}
	if l.Weight.DType() != ft.Float64 || !l.Weight.RequiresGrad() || l.Parameters()[1].DType() != ft.Float64 {
		t.Fatal("To(Float64) did not convert the parameters")
	}
	y := l.Forward(ft.MustOnes([]int64{1, 3}, ft.Kw("dtype", ft.Float64)))
	y.MustSum().MustBackward()
	if !l.Bias.Grad().Defined() {
		t.Fatal("no gradient after To")
	}
}

// A small classifier trained with AdamW and cross-entropy: the loss falls
// and the training set is learned.
func TestTrainAClassifierWithAdamW(t *testing.T) {
	ft.ManualSeed(0)
	// two interleaved half-moons, as points and labels
	n := 128
	xs := make([]float32, 2*n)
	ys := make([]int64, n)
	for i := 0; i < n; i++ {
		a := math.Pi * float64(i%64) / 63
		if i < 64 {
			xs[2*i], xs[2*i+1] = float32(math.Cos(a)), float32(math.Sin(a))
		} else {
			xs[2*i], xs[2*i+1] = float32(1-math.Cos(a)), float32(0.5-math.Sin(a))
			ys[i] = 1
		}
	}
	x := ft.MustFromSlice(xs, int64(n), 2)
	y := ft.MustFromSlice(ys)
	model := nn.Sequential(nn.Linear(2, 32, true), nn.Tanh(), nn.Linear(32, 32, true), nn.ReLU(), nn.Linear(32, 2, true))
	opt, err := optim.AdamW(model.Parameters(), 0.02, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	var first, last float64
	for step := 0; step < 300; step++ {
		ft.GC()
		loss := F.MustCrossEntropy(model.Forward(x), y)
		opt.ZeroGrad()
		loss.MustBackward()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss.MustItem()
		}
		last = loss.MustItem()
	}
	ft.FinishGC()
	if !(last < first/10) {
		t.Fatalf("loss %v -> %v", first, last)
	}
	pred := model.Forward(x).MustArgmax(ft.Kw("dim", 1))
	p, _ := pred.Int64s()
	right := 0
	for i := range p {
		if p[i] == ys[i] {
			right++
		}
	}
	if right < n*95/100 {
		t.Fatalf("%d of %d right", right, n)
	}
	if names := names(model.NamedParameters()); names[0] != "0.weight" || names[5] != "4.bias" {
		t.Fatalf("sequential names %v", names)
	}
}
