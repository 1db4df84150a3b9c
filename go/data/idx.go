package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	ft "ferrotorch"
)

// Note [IDX files are validated before they are read]
// MNIST's files are IDX: two zero bytes, an element type, the number of
// dims, each dim as a big-endian uint32, then the elements, big-endian.
// Everything a file claims is checked before memory is taken for it: the
// magic, the type, 1 to 16 dims, their product (no overflow, at most
// MaxIDXBytes) against the file's length — exactly, for a plain file, so
// a truncated or padded file is an error before any allocation; for a
// gzipped one, whose length is known only once read, the elements are
// read as they decompress (memory grows with what is really there, never
// with what the header claims) and must end exactly where the header says.

// MaxIDXBytes is the most element bytes an IDX file may declare (8 GiB).
const MaxIDXBytes = 8 << 30

var idxTypes = map[byte]struct {
	name string
	size int
}{
	0x08: {"uint8", 1}, 0x09: {"int8", 1}, 0x0B: {"int16", 2},
	0x0C: {"int32", 4}, 0x0D: {"float32", 4}, 0x0E: {"float64", 8},
}

func idxErr(path, format string, args ...interface{}) error {
	return &ft.Error{Status: ft.StatusValue, Message: fmt.Sprintf("IDX file %s: ", path) + fmt.Sprintf(format, args...)}
}

// ReadIDX reads an IDX file (gzipped or not) as a tensor of its type and
// dims (uint8 for MNIST's images and labels). See Note [IDX files are
// validated before they are read].
func ReadIDX(path string) (ft.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return ft.Tensor{}, &ft.Error{Status: ft.StatusIO, Message: err.Error()}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ft.Tensor{}, &ft.Error{Status: ft.StatusIO, Message: err.Error()}
	}
	br := bufio.NewReader(f)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return ft.Tensor{}, idxErr(path, "not a valid gzip stream: %v", err)
		}
		defer zr.Close()
		return parseIDX(path, zr, -1)
	}
	return parseIDX(path, br, st.Size())
}

// parseIDX reads one IDX array from r; size is the whole stream's length
// in bytes, or -1 when unknown (gzip).
func parseIDX(path string, r io.Reader, size int64) (ft.Tensor, error) {
	// a stream that ends early says so; one that fails (corrupt gzip) says why
	short := func(err error, what string) error {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return idxErr(path, "%s", what)
		}
		return idxErr(path, "read: %v", err)
	}
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return ft.Tensor{}, short(err, "shorter than its 4-byte magic number")
	}
	if head[0] != 0 || head[1] != 0 {
		return ft.Tensor{}, idxErr(path, "bad magic number %02x%02x%02x%02x (an IDX file starts with two zero bytes)",
			head[0], head[1], head[2], head[3])
	}
	typ, ok := idxTypes[head[2]]
	if !ok {
		return ft.Tensor{}, idxErr(path, "unknown element type 0x%02x", head[2])
	}
	nd := int(head[3])
	if nd < 1 || nd > 16 {
		return ft.Tensor{}, idxErr(path, "%d dims (1 to 16 are read)", nd)
	}
	raw := make([]byte, 4*nd)
	if _, err := io.ReadFull(r, raw); err != nil {
		return ft.Tensor{}, short(err, fmt.Sprintf("ends inside its %d dims", nd))
	}
	dims := make([]int64, nd)
	count := uint64(1)
	for i := range dims {
		d := uint64(binary.BigEndian.Uint32(raw[4*i:]))
		dims[i] = int64(d)
		if d != 0 && count > MaxIDXBytes/d {
			return ft.Tensor{}, idxErr(path, "dims %v declare more than %d bytes", dims[:i+1], int64(MaxIDXBytes))
		}
		count *= d
	}
	want := count * uint64(typ.size)
	if want > MaxIDXBytes {
		return ft.Tensor{}, idxErr(path, "dims %v declare %d bytes, over the %d read", dims, want, int64(MaxIDXBytes))
	}
	headLen := int64(4 + 4*nd)
	var body []byte
	if size >= 0 {
		if got := size - headLen; got != int64(want) {
			return ft.Tensor{}, idxErr(path, "dims %v of %s need %d bytes after the header, the file has %d",
				dims, typ.name, want, got)
		}
		body = make([]byte, want)
		if _, err := io.ReadFull(r, body); err != nil {
			return ft.Tensor{}, idxErr(path, "read: %v", err)
		}
	} else {
		var buf bytes.Buffer
		n, err := io.CopyN(&buf, r, int64(want))
		if err != nil && err != io.EOF {
			return ft.Tensor{}, idxErr(path, "read: %v", err)
		}
		if uint64(n) != want {
			return ft.Tensor{}, idxErr(path, "dims %v of %s need %d bytes after the header, the stream has %d",
				dims, typ.name, want, n)
		}
		var one [1]byte
		m, err := io.ReadFull(r, one[:])
		if m != 0 {
			return ft.Tensor{}, idxErr(path, "more bytes than dims %v of %s need (%d)", dims, typ.name, want)
		}
		if err != io.EOF {
			return ft.Tensor{}, idxErr(path, "read: %v", err) // a gzip trailer's checksum, say
		}
		body = buf.Bytes()
	}
	return idxTensor(body, head[2], dims)
}

// idxTensor converts big-endian elements to a tensor of their type.
func idxTensor(b []byte, code byte, dims []int64) (ft.Tensor, error) {
	n := len(b)
	switch code {
	case 0x08:
		return ft.FromSlice(b, dims...)
	case 0x09:
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(b[i])
		}
		return ft.FromSlice(v, dims...)
	case 0x0B:
		v := make([]int16, n/2)
		for i := range v {
			v[i] = int16(binary.BigEndian.Uint16(b[2*i:]))
		}
		return ft.FromSlice(v, dims...)
	case 0x0C:
		v := make([]int32, n/4)
		for i := range v {
			v[i] = int32(binary.BigEndian.Uint32(b[4*i:]))
		}
		return ft.FromSlice(v, dims...)
	case 0x0D:
		v := make([]float32, n/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.BigEndian.Uint32(b[4*i:]))
		}
		return ft.FromSlice(v, dims...)
	default: // 0x0E
		v := make([]float64, n/8)
		for i := range v {
			v[i] = math.Float64frombits(binary.BigEndian.Uint64(b[8*i:]))
		}
		return ft.FromSlice(v, dims...)
	}
}

// findIDX is dir/name, or dir/name.gz.
func findIDX(dir, name string) (string, error) {
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".gz")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", &ft.Error{Status: ft.StatusIO, Message: fmt.Sprintf("MNIST: no %s or %s.gz in %s", name, name, dir)}
}

// LoadMNIST reads MNIST's images and labels from dir, as its files are
// named ("train" or "t10k": train-images-idx3-ubyte and
// train-labels-idx1-ubyte, gzipped or not): images as float32 (N, 1, H, W)
// scaled to [0, 1] (torchvision's ToTensor), labels as int64 (N).
func LoadMNIST(dir, split string) (images, labels ft.Tensor, err error) {
	ip, err := findIDX(dir, split+"-images-idx3-ubyte")
	if err != nil {
		return
	}
	lp, err := findIDX(dir, split+"-labels-idx1-ubyte")
	if err != nil {
		return
	}
	img, err := ReadIDX(ip)
	if err != nil {
		return
	}
	lab, err := ReadIDX(lp)
	if err != nil {
		return
	}
	is, ls := img.Shape(), lab.Shape()
	if len(is) != 3 || img.DType() != ft.Uint8 {
		return ft.Tensor{}, ft.Tensor{}, idxErr(ip, "MNIST images are uint8 (N, H, W), this is %v of %v", img.DType(), is)
	}
	if len(ls) != 1 || lab.DType() != ft.Uint8 {
		return ft.Tensor{}, ft.Tensor{}, idxErr(lp, "MNIST labels are uint8 (N), this is %v of %v", lab.DType(), ls)
	}
	if is[0] != ls[0] {
		return ft.Tensor{}, ft.Tensor{}, idxErr(lp, "%d labels for %d images", ls[0], is[0])
	}
	f, err := ft.To(img, ft.Float32)
	if err != nil {
		return
	}
	if f, err = ft.DivScalar(f, 255.0); err != nil {
		return
	}
	if images, err = ft.Reshape(f, []int64{is[0], 1, is[1], is[2]}); err != nil {
		return
	}
	labels, err = ft.To(lab, ft.Int64)
	return
}

// WriteIDX writes t (uint8, int8, int16, int32, float32 or float64, 1 to
// 16 dims) as an IDX file, gzipped when path ends in ".gz".
func WriteIDX(path string, t ft.Tensor) error {
	codes := map[ft.DType]byte{ft.Uint8: 0x08, ft.Int8: 0x09, ft.Int16: 0x0B, ft.Int32: 0x0C,
		ft.Float32: 0x0D, ft.Float64: 0x0E}
	code, ok := codes[t.DType()]
	shape := t.Shape()
	if !ok || len(shape) < 1 || len(shape) > 16 {
		return idxErr(path, "cannot hold a %v tensor of shape %v (uint8, int8, int16, int32, float32, float64; 1 to 16 dims)",
			t.DType(), shape)
	}
	var b bytes.Buffer
	b.Write([]byte{0, 0, code, byte(len(shape))})
	for _, d := range shape {
		if d > math.MaxUint32 {
			return idxErr(path, "dim %d is over an IDX dim's 32 bits", d)
		}
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	var err error
	switch t.DType() {
	case ft.Float32:
		var v []float32
		if v, err = t.Float32s(); err == nil {
			err = binary.Write(&b, binary.BigEndian, v)
		}
	case ft.Float64:
		var v []float64
		if v, err = t.Float64s(); err == nil {
			err = binary.Write(&b, binary.BigEndian, v)
		}
	default:
		var wide ft.Tensor
		var v []int64
		if wide, err = ft.To(t, ft.Int64); err == nil {
			v, err = wide.Int64s()
		}
		for _, x := range v {
			switch code {
			case 0x08, 0x09:
				b.WriteByte(byte(x))
			case 0x0B:
				binary.Write(&b, binary.BigEndian, int16(x))
			default:
				binary.Write(&b, binary.BigEndian, int32(x))
			}
		}
	}
	if err != nil {
		return err
	}
	out := b.Bytes()
	if filepath.Ext(path) == ".gz" {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(out)
		w.Close()
		out = z.Bytes()
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return &ft.Error{Status: ft.StatusIO, Message: err.Error()}
	}
	return nil
}
