package ferrotorch_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	ft "ferrotorch"
)

func TestMain(m *testing.M) {
	// the panicking test op is registered when the op table is first built
	os.Setenv("FERROTORCH_TEST_OPS", "1")
	os.Exit(m.Run())
}

func f32(t *testing.T, x ft.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func near(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol {
			return false
		}
	}
	return true
}

func TestFromSliceShapeAndData(t *testing.T) {
	x := ft.MustFromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if s := x.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 3 {
		t.Fatalf("shape %v", s)
	}
	if x.DType() != ft.Float32 || x.Numel() != 6 || x.Dim() != 2 {
		t.Fatalf("dtype %v numel %d", x.DType(), x.Numel())
	}
	if got := f32(t, x); !near(got, []float32{1, 2, 3, 4, 5, 6}, 0) {
		t.Fatalf("data %v", got)
	}
	// a transposed view reads row-major through its strides
	xt := x.MustT()
	if s := xt.Stride(); s[0] != 1 || s[1] != 3 {
		t.Fatalf("stride %v", s)
	}
	if got := f32(t, xt); !near(got, []float32{1, 4, 2, 5, 3, 6}, 0) {
		t.Fatalf("transposed %v", got)
	}
	if _, err := ft.FromSlice([]float32{1, 2, 3}, 2, 2); err == nil {
		t.Fatal("3 values for shape [2 2] must fail")
	}
	if !strings.Contains(x.String(), "tensor([[1., 2., 3.],") {
		t.Fatalf("printed %q", x.String())
	}
}

func TestOpsAgainstHandComputedValues(t *testing.T) {
	a := ft.MustFromSlice([]float32{1, 2, 3, 4}, 2, 2)
	b := ft.MustFromSlice([]float32{5, 6, 7, 8}, 2, 2)
	// MM: [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]]
	if got := f32(t, ft.MustMM(a, b)); !near(got, []float32{19, 22, 43, 50}, 0) {
		t.Fatalf("mm %v", got)
	}
	if got := f32(t, a.MustAdd(b, ft.Kw("alpha", 2))); !near(got, []float32{11, 14, 17, 20}, 0) {
		t.Fatalf("add alpha %v", got)
	}
	if got := f32(t, ft.MustAddScalar(a, 0.5)); !near(got, []float32{1.5, 2.5, 3.5, 4.5}, 0) {
		t.Fatalf("add scalar %v", got)
	}
	s := a.MustSumDimIntList([]int64{1}, ft.Kw("keepdim", true))
	if sh := s.Shape(); sh[0] != 2 || sh[1] != 1 {
		t.Fatalf("sum keepdim shape %v", sh)
	}
	if got := f32(t, s); !near(got, []float32{3, 7}, 0) {
		t.Fatalf("sum %v", got)
	}
	parts := ft.MustChunk(ft.MustFromSlice([]float32{1, 2, 3, 4, 5, 6}), 3)
	if len(parts) != 3 || !near(f32(t, parts[2]), []float32{5, 6}, 0) {
		t.Fatalf("chunk %d", len(parts))
	}
	// Where(condition) alone: the indices per dimension, as torch.where
	w := ft.MustWhere(ft.MustFromSlice([]float32{1, 0, 0, 1}, 2, 2))
	r0, _ := w[0].Int64s()
	c0, _ := w[1].Int64s()
	if len(w) != 2 || len(r0) != 2 || r0[0] != 0 || r0[1] != 1 || c0[0] != 0 || c0[1] != 1 {
		t.Fatalf("where %v %v", r0, c0)
	}
	mx := a.MustMaxDim(1)
	idx, _ := mx[1].Int64s()
	if !near(f32(t, mx[0]), []float32{2, 4}, 0) || idx[0] != 1 || idx[1] != 1 {
		t.Fatalf("max %v %v", f32(t, mx[0]), idx)
	}
	if n, err := a.Size(0); err != nil || n != 2 {
		t.Fatalf("size %d %v", n, err)
	}
	// RandN with a seed is reproducible
	ft.ManualSeed(3)
	r1 := f32(t, ft.MustRandN([]int64{4}))
	ft.ManualSeed(3)
	r2 := f32(t, ft.MustRandN([]int64{4}))
	if !near(r1, r2, 0) {
		t.Fatal("seeded RandN differs")
	}
	// generic calls by name
	out := ft.MustCall("mse_loss", a, b)
	if v := out[0].(ft.Tensor).MustItem(); v != 16 {
		t.Fatalf("mse %v", v)
	}
}

func TestErrorsAreValues(t *testing.T) {
	a := ft.MustOnes([]int64{2, 3})
	b := ft.MustOnes([]int64{4, 5})
	_, err := ft.MM(a, b)
	var e *ft.Error
	if !errors.As(err, &e) || e.Status != ft.StatusRuntime {
		t.Fatalf("mm error %v", err)
	}
	if !strings.Contains(e.Message, "[2, 3]") || !strings.Contains(e.Message, "[4, 5]") {
		t.Fatalf("the message names the shapes: %s", e.Message)
	}
	_, err = a.SumDimIntList([]int64{7})
	if !errors.As(err, &e) || e.Status != ft.StatusIndex {
		t.Fatalf("sum over dim 7: %v", err)
	}
	_, err = ft.Call("sum", a, ft.Kw("dim", "one"))
	if !errors.As(err, &e) || e.Status != ft.StatusType {
		t.Fatalf("dim='one': %v", err)
	}
	_, err = ft.Call("no_such_op", a)
	if !errors.As(err, &e) || e.Status != ft.StatusKey {
		t.Fatalf("unknown op: %v", err)
	}
	// a panic inside ferrotorch is an error, not a crash
	_, err = ft.Call("_test_panic", a, "boom from Go")
	if !errors.As(err, &e) || e.Status != ft.StatusInternal || !strings.Contains(e.Message, "boom from Go") {
		t.Fatalf("panic: %v", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("MustMM did not panic")
		}
	}()
	ft.MustMM(a, b)
}

func TestAutogradAgainstAnalyticGradients(t *testing.T) {
	x := ft.MustFromSlice([]float64{0.5, -1, 2}).MustSetRequiresGrad(true)
	// y = sum(x^3 + sin x): dy/dx = 3x^2 + cos x
	y := x.MustPowTensorScalar(3).MustAdd(x.MustSin()).MustSum()
	y.MustBackward()
	g, _ := x.Grad().Float64s()
	for i, v := range []float64{0.5, -1, 2} {
		want := 3*v*v + math.Cos(v)
		if math.Abs(g[i]-want) > 1e-12 {
			t.Fatalf("grad[%d] = %v, want %v", i, g[i], want)
		}
	}
	// numerical check by central differences of the same function
	f := func(v float64) float64 { return v*v*v + math.Sin(v) }
	for i, v := range []float64{0.5, -1, 2} {
		num := (f(v+1e-6) - f(v-1e-6)) / 2e-6
		if math.Abs(g[i]-num) > 1e-6 {
			t.Fatalf("grad[%d] = %v, numerically %v", i, g[i], num)
		}
	}
	var z ft.Tensor
	ft.NoGrad(func() { z = x.MustMul(x) })
	if z.RequiresGrad() || !ft.IsGradEnabled() {
		t.Fatal("NoGrad recorded, or did not restore")
	}
}

func TestComplex32IsScalarType8(t *testing.T) {
	// torch's c10::ScalarType numbers ComplexHalf 8: two float16s
	if ft.Complex32 != 8 || ft.Complex32.Size() != 4 || ft.Complex32.String() != "torch.complex32" {
		t.Fatalf("complex32: %d %d %s", ft.Complex32, ft.Complex32.Size(), ft.Complex32)
	}
	z, err := ft.Ones([]int64{2}, ft.Kw("dtype", ft.Complex32))
	if err != nil {
		t.Fatal(err)
	}
	if z.DType() != ft.Complex32 {
		t.Fatalf("dtype %v", z.DType())
	}
	if s := z.String(); s != "tensor([1.+0.j, 1.+0.j], dtype=torch.complex32)" {
		t.Fatalf("printed %q", s)
	}
}
