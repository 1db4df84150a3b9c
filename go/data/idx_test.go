package data_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ft "ferrotorch"
	"ferrotorch/data"
)

// idx is an IDX file's bytes: type code, dims, then the big-endian body.
func idx(code byte, dims []uint32, body []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, code, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(body)
	return b.Bytes()
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIDXFilesOfEveryTypePlainAndGzipped(t *testing.T) {
	dir := t.TempDir()
	u8 := []byte{0, 1, 2, 250, 251, 252}
	var f32 bytes.Buffer
	var i16 bytes.Buffer
	for _, v := range []float32{1.5, -2, float32(math.Inf(1)), 0.25} {
		binary.Write(&f32, binary.BigEndian, math.Float32bits(v))
	}
	for _, v := range []int16{-300, 7} {
		binary.Write(&i16, binary.BigEndian, v)
	}
	var i32, f64 bytes.Buffer
	for _, v := range []int32{-70000, 3} {
		binary.Write(&i32, binary.BigEndian, v)
	}
	for _, v := range []float64{0.1, -1e300} {
		binary.Write(&f64, binary.BigEndian, math.Float64bits(v))
	}
	cases := []struct {
		name string
		file []byte
		want string
		dt   ft.DType
	}{
		{"u8", idx(0x08, []uint32{2, 3}, u8), "[0 1 2 250 251 252]", ft.Uint8},
		{"f32", idx(0x0D, []uint32{4}, f32.Bytes()), "[1.5 -2 +Inf 0.25]", ft.Float32},
		{"i16", idx(0x0B, []uint32{2}, i16.Bytes()), "[-300 7]", ft.Int16},
		{"i8", idx(0x09, []uint32{3}, []byte{0xFF, 0x80, 5}), "[-1 -128 5]", ft.Int8},
		{"i32", idx(0x0C, []uint32{2}, i32.Bytes()), "[-70000 3]", ft.Int32},
		{"f64", idx(0x0E, []uint32{2, 1}, f64.Bytes()), "[0.1 -1e+300]", ft.Float64},
	}
	for _, c := range cases {
		for _, zipped := range []bool{false, true} {
			b := c.file
			if zipped {
				b = gz(b)
			}
			x, err := data.ReadIDX(write(t, dir, c.name, b))
			if err != nil {
				t.Fatalf("%s (gzip %v): %v", c.name, zipped, err)
			}
			if x.DType() != c.dt {
				t.Fatalf("%s: dtype %v", c.name, x.DType())
			}
			var got string
			switch c.dt {
			case ft.Float32:
				v, _ := x.Float32s()
				got = fmt.Sprint(v)
			case ft.Float64:
				v, _ := x.Float64s()
				got = fmt.Sprint(v)
			default:
				got = fmt.Sprint(ints(t, x))
			}
			if got != c.want {
				t.Fatalf("%s (gzip %v): %s, want %s", c.name, zipped, got, c.want)
			}
		}
		// WriteIDX writes the same bytes back, for every type
		x, _ := data.ReadIDX(filepath.Join(dir, c.name))
		if err := data.WriteIDX(filepath.Join(dir, c.name+".out"), x); err != nil {
			t.Fatal(err)
		}
		if raw, _ := os.ReadFile(filepath.Join(dir, c.name+".out")); !bytes.Equal(raw, c.file) {
			t.Fatalf("%s: WriteIDX wrote %v, want %v", c.name, raw, c.file)
		}
	}
	x, _ := data.ReadIDX(write(t, dir, "shape", idx(0x08, []uint32{2, 3}, u8)))
	if fmt.Sprint(x.Shape()) != "[2 3]" {
		t.Fatalf("shape %v", x.Shape())
	}
	// WriteIDX writes what ReadIDX reads back: the same bytes as by hand
	for _, name := range []string{"again", "again.gz"} {
		p := filepath.Join(dir, name)
		if err := data.WriteIDX(p, x); err != nil {
			t.Fatal(err)
		}
		y, err := data.ReadIDX(p)
		if err != nil || fmt.Sprint(ints(t, y)) != "[0 1 2 250 251 252]" || fmt.Sprint(y.Shape()) != "[2 3]" {
			t.Fatalf("%s: %v %v", name, y, err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "again"))
	if !bytes.Equal(raw, idx(0x08, []uint32{2, 3}, u8)) {
		t.Fatalf("WriteIDX wrote %v", raw)
	}
	f := ft.MustFromSlice([]float32{1.5, -2}, 2)
	if err := data.WriteIDX(filepath.Join(dir, "f"), f); err != nil {
		t.Fatal(err)
	}
	if g, _ := data.ReadIDX(filepath.Join(dir, "f")); fmt.Sprint(g) != fmt.Sprint(f) {
		t.Fatalf("float32 round trip: %v", g)
	}
	if err := data.WriteIDX(filepath.Join(dir, "b"), ft.MustFromSlice([]bool{true})); err == nil {
		t.Fatal("a bool tensor: no error")
	}
}

// badChecksum is a gzip stream whose CRC-32 trailer is wrong.
func badChecksum(z []byte) []byte {
	z = append([]byte(nil), z...)
	z[len(z)-8] ^= 0xFF
	return z
}

// Hostile files are errors that say what is wrong, before any memory is
// taken for what they claim (Note [IDX files are validated before they
// are read]).
func TestHostileIDXFilesAreNamedErrors(t *testing.T) {
	dir := t.TempDir()
	good := idx(0x08, []uint32{2, 2}, []byte{1, 2, 3, 4})
	cases := []struct {
		name, want string
		file       []byte
	}{
		{"empty", "shorter than its 4-byte magic", nil},
		{"magic", "bad magic number", append([]byte{1, 2}, good[2:]...)},
		{"type", "unknown element type 0x07", idx(0x07, []uint32{1}, []byte{0})},
		{"nodims", "0 dims", []byte{0, 0, 8, 0}},
		{"17dims", "17 dims", []byte{0, 0, 8, 17}},
		{"cutdims", "ends inside its 2 dims", good[:7]},
		{"short", "need 4 bytes after the header, the file has 3", good[:len(good)-1]},
		{"long", "need 4 bytes after the header, the file has 5", append(append([]byte(nil), good...), 9)},
		{"huge", "declare", idx(0x0E, []uint32{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, nil)},
		{"big", "over the", idx(0x0E, []uint32{1 << 31, 4}, nil)},
		{"gzshort", "the stream has 3", gz(good[:len(good)-1])},
		{"gzlong", "more bytes than dims", gz(append(append([]byte(nil), good...), 9))},
		// a deflate block of the reserved type 3, right after the gzip header
		{"gzcorrupt", "read: flate: corrupt input", append(gz(good)[:10], 0x07, 0, 0, 0)},
		{"gzchecksum", "read: gzip: invalid checksum", badChecksum(gz(good))},
	}
	for _, c := range cases {
		_, err := data.ReadIDX(write(t, dir, c.name, c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v (want %q)", c.name, err, c.want)
		}
		if !strings.Contains(err.Error(), c.name) {
			t.Fatalf("%s: the error does not name the file: %v", c.name, err)
		}
	}
	if _, err := data.ReadIDX(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file: no error")
	}
}

// writeMNIST writes n random 28x28 images and labels 0..9 in turn, as
// MNIST's two files of split.
func writeMNIST(t *testing.T, dir, split string, n int, zipped bool) {
	t.Helper()
	suffix := ""
	if zipped {
		suffix = ".gz"
	}
	img := ft.MustRandIntLow(0, 256, []int64{int64(n), 28, 28}, ft.Kw("dtype", ft.Uint8))
	lab := make([]uint8, n)
	for i := range lab {
		lab[i] = uint8(i % 10)
	}
	for name, x := range map[string]ft.Tensor{"images-idx3": img, "labels-idx1": ft.MustFromSlice(lab)} {
		if err := data.WriteIDX(filepath.Join(dir, split+"-"+name+"-ubyte"+suffix), x); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadMNISTScalesImagesAndChecksTheirLabels(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir, "t10k", 20, true)
	x, y, err := data.LoadMNIST(dir, "t10k")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(x.Shape()) != "[20 1 28 28]" || x.DType() != ft.Float32 || fmt.Sprint(y.Shape()) != "[20]" {
		t.Fatalf("images %v %v, labels %v", x.Shape(), x.DType(), y.Shape())
	}
	if got := ints(t, y)[:3]; fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("labels %v", got)
	}
	if m := ft.MustMax(x).MustItem(); m > 1 || m < 0.9 {
		t.Fatalf("images not scaled to [0, 1]: max %v", m)
	}
	// labels for another number of images
	write(t, dir, "t10k-labels-idx1-ubyte.gz", gz(idx(0x08, []uint32{19}, make([]byte, 19))))
	if _, _, err := data.LoadMNIST(dir, "t10k"); err == nil || !strings.Contains(err.Error(), "19 labels for 20 images") {
		t.Fatalf("mismatched labels: %v", err)
	}
	if _, _, err := data.LoadMNIST(dir, "train"); err == nil || !strings.Contains(err.Error(), "no train-images-idx3-ubyte") {
		t.Fatalf("missing files: %v", err)
	}
}
