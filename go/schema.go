package ferrotorch

/*
#include "ferrotorch.h"
*/
import "C"

// OpInfo describes one op as the C ABI lists it (Note [One binding
// layer]): its base name, its overloads' schemas in torch's syntax, and
// the binding facts. The generator of ops_gen.go reads these.
type OpInfo struct {
	Name       string
	Schemas    []string
	IsMethod   bool
	WritesSelf bool
	Creation   bool
}

// Ops lists every public op, sorted by name.
func Ops() []OpInfo {
	n := uint32(C.ft_op_count())
	out := make([]OpInfo, 0, n)
	for id := uint32(0); id < n; id++ {
		var name *C.char
		var count C.size_t
		var flags C.uint32_t
		if C.ft_op_name(C.uint32_t(id), &name) != 0 ||
			C.ft_op_num_overloads(C.uint32_t(id), &count) != 0 ||
			C.ft_op_flags(C.uint32_t(id), &flags) != 0 {
			continue
		}
		info := OpInfo{
			Name:       C.GoString(name),
			IsMethod:   flags&1 != 0,
			WritesSelf: flags&2 != 0,
			Creation:   flags&4 != 0,
		}
		for i := C.size_t(0); i < count; i++ {
			var s *C.char
			if C.ft_op_schema(C.uint32_t(id), i, &s) == 0 {
				info.Schemas = append(info.Schemas, C.GoString(s))
			}
		}
		out = append(out, info)
	}
	return out
}
