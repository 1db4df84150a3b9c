// Command mnist trains a small CNN on MNIST read from its IDX files, as
// GoTorch's example does, with a data.Loader whose Scan frees each step's
// tensors, and prints the test accuracy.
//
//	go run ./examples/mnist -data ~/mnist              # the four files (gzipped or not)
//	go run ./examples/mnist -data /tmp/m -synthetic    # writes an MNIST-shaped set first
//
// -synthetic writes 28x28 images whose class is the row of a bright bar,
// with noise, in MNIST's four files: the program then runs as on MNIST
// itself, without a download.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	ft "ferrotorch"
	"ferrotorch/data"
	"ferrotorch/nn"
	F "ferrotorch/nn/functional"
	"ferrotorch/optim"
)

// Net is LeNet-like: two conv-ReLU-pool stages and a linear classifier.
type Net struct {
	nn.Module
	Features   *nn.SequentialModule
	Classifier *nn.LinearModule
}

func newNet() *Net {
	n := &Net{
		Features: nn.Sequential(
			nn.Conv2d(1, 8, 3, 1, 1, true), nn.ReLU(), nn.MaxPool2d(2, 2, 0),
			nn.Conv2d(8, 16, 3, 1, 1, true), nn.ReLU(), nn.MaxPool2d(2, 2, 0),
			nn.Flatten()),
		Classifier: nn.Linear(16*7*7, 10, true),
	}
	n.Init(n)
	return n
}

func (n *Net) Forward(x ft.Tensor) ft.Tensor { return n.Classifier.Forward(n.Features.Forward(x)) }

// writeSynthetic writes n images of split into dir (gzipped, as MNIST
// is distributed).
func writeSynthetic(dir, split string, n int, seed uint32) error {
	img := make([]uint8, n*28*28)
	lab := make([]uint8, n)
	for i := 0; i < n; i++ {
		c := int(seed>>8) % 10
		lab[i] = uint8(c)
		for p := 0; p < 28*28; p++ {
			seed = seed*1664525 + 1013904223
			v := uint8(seed >> 26) // noise 0..63
			if r := p / 28; r == 2*c+4 || r == 2*c+5 {
				v += 160
			}
			img[i*28*28+p] = v
		}
	}
	images, err := ft.FromSlice(img, int64(n), 28, 28)
	if err != nil {
		return err
	}
	if err := data.WriteIDX(filepath.Join(dir, split+"-images-idx3-ubyte.gz"), images); err != nil {
		return err
	}
	return data.WriteIDX(filepath.Join(dir, split+"-labels-idx1-ubyte.gz"), ft.MustFromSlice(lab))
}

// accuracy of net on (x, y), in batches.
func accuracy(net *Net, x, y ft.Tensor) (float64, error) {
	ds, err := data.NewTensorDataset(x, y)
	if err != nil {
		return 0, err
	}
	loader, err := data.NewLoader(ds, data.BatchSize(500))
	if err != nil {
		return 0, err
	}
	net.Eval()
	defer net.Train(true)
	correct := 0.0
	for loader.Scan() {
		b := loader.Minibatch()
		ft.NoGrad(func() {
			pred := ft.MustArgmax(net.Forward(b[0]), ft.Kw("dim", int64(1)))
			correct += ft.MustSum(ft.MustEq(pred, b[1])).MustItem()
		})
	}
	if err := loader.Err(); err != nil {
		return 0, err
	}
	return correct / float64(x.Shape()[0]), nil
}

// run trains for epochs over dir's training files and returns the test
// accuracy, printing the loss as it goes.
func run(dir string, epochs, batch int) (float64, error) {
	x, y, err := data.LoadMNIST(dir, "train")
	if err != nil {
		return 0, err
	}
	tx, ty, err := data.LoadMNIST(dir, "t10k")
	if err != nil {
		return 0, err
	}
	ds, err := data.NewTensorDataset(x, y)
	if err != nil {
		return 0, err
	}
	loader, err := data.NewLoader(ds, data.BatchSize(batch), data.Shuffle(true), data.Seed(0))
	if err != nil {
		return 0, err
	}
	ft.ManualSeed(0)
	net := newNet()
	opt, err := optim.Adam(net.Parameters(), 1e-3, 0)
	if err != nil {
		return 0, err
	}
	for e := 0; e < epochs; e++ {
		start, steps, total := time.Now(), 0, 0.0
		for loader.Scan() { // collects the last step's tensors first
			b := loader.Minibatch()
			loss := F.MustCrossEntropy(net.Forward(b[0]), b[1])
			opt.ZeroGrad()
			loss.MustBackward()
			if err := opt.Step(); err != nil {
				return 0, err
			}
			total += loss.MustItem()
			steps++
		}
		if err := loader.Err(); err != nil {
			return 0, err
		}
		fmt.Printf("epoch %d: mean loss %.4f, %d steps, %.2f ms a step\n", e, total/float64(steps), steps,
			float64(time.Since(start).Microseconds())/1e3/float64(steps))
	}
	return accuracy(net, tx, ty)
}

func main() {
	dir := flag.String("data", "mnist", "folder with MNIST's IDX files (train-images-idx3-ubyte[.gz], ...)")
	epochs := flag.Int("epochs", 1, "training epochs")
	batch := flag.Int("batch", 64, "minibatch size")
	synthetic := flag.Bool("synthetic", false, "write an MNIST-shaped synthetic set into -data first")
	flag.Parse()
	if *synthetic {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			panic(err)
		}
		if err := writeSynthetic(*dir, "train", 2000, 1); err != nil {
			panic(err)
		}
		if err := writeSynthetic(*dir, "t10k", 500, 2); err != nil {
			panic(err)
		}
	}
	acc, err := run(*dir, *epochs, *batch)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("test accuracy %.2f%%\n", acc*100)
}
