package ferrotorch

// DType is an element type, numbered as torch's ScalarType (FtDType).
type DType int32

// The dtypes.
const (
	Uint8   DType = 0
	Int8    DType = 1
	Int16   DType = 2
	Int32   DType = 3
	Int64   DType = 4
	Float16 DType = 5
	Float32 DType = 6
	Float64 DType = 7
	// Complex32 is two float16s per element (re, im): torch.chalf.
	Complex32 DType = 8
	// Complex64 is two float32s per element (re, im).
	Complex64 DType = 9
	// Complex128 is two float64s per element (re, im).
	Complex128 DType = 10
	Bool       DType = 11
	BFloat16   DType = 15
)

var dtypeNames = map[DType]string{
	Uint8: "torch.uint8", Int8: "torch.int8", Int16: "torch.int16", Int32: "torch.int32",
	Int64: "torch.int64", Float16: "torch.float16", Float32: "torch.float32",
	Float64: "torch.float64", Bool: "torch.bool", BFloat16: "torch.bfloat16",
	Complex32: "torch.complex32", Complex64: "torch.complex64", Complex128: "torch.complex128",
}

// String is torch's name (torch.float32).
func (d DType) String() string {
	if n, ok := dtypeNames[d]; ok {
		return n
	}
	return "DType(?)"
}

// Size is the bytes per element.
func (d DType) Size() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Int16, Float16, BFloat16:
		return 2
	case Int32, Float32, Complex32:
		return 4
	case Complex128:
		return 16
	default:
		return 8
	}
}
