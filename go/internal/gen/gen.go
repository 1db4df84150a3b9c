package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"sort"
	"strings"

	"ferrotorch"
)

// goNames are torch names whose Go spelling is not the plain CamelCase
// (GoTorch's RandN and MM).
var goNames = map[string]string{
	"randn": "RandN", "randn_like": "RandNLike", "mm": "MM", "bmm": "BMM", "addmm": "AddMM",
	"randint": "RandInt", "randperm": "RandPerm", "logsumexp": "LogSumExp", "matmul": "MatMul",
}

// reserved are the hand-written names of the package and of Tensor.
var reserved = map[string]bool{
	"FromSlice": true, "MustFromSlice": true, "ManualSeed": true, "Call": true, "MustCall": true,
	"Kw": true, "Ops": true, "GC": true, "FinishGC": true, "NoGrad": true, "IsGradEnabled": true,
	"WrapC": true, "SetNumThreads": true, "NumThreads": true, "Shape": true, "Stride": true, "Dim": true, "DType": true, "Numel": true,
	"Item": true, "MustItem": true, "String": true, "Float32s": true, "Float64s": true,
	"Int64s": true, "Free": true, "C": true, "Defined": true, "Grad": true, "SetGrad": true,
	"Backward": true, "MustBackward": true, "BackwardWith": true, "Detach": true,
	"RequiresGrad": true, "SetRequiresGrad": true, "MustSetRequiresGrad": true,
}

var keywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
	"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true,
	"range": true, "return": true, "select": true, "struct": true, "switch": true, "type": true,
	"var": true, "a": true, "r": true, "err": true, "opts": true, "t": true, "v": true,
}

func camel(s string, upper bool) string {
	var b strings.Builder
	up := upper
	for i, c := range s {
		if c == '_' {
			if i == len(s)-1 {
				b.WriteRune('_') // the in-place suffix stays: Add_
			}
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(c)))
			up = false
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

func goName(base string) string {
	trail := strings.HasSuffix(base, "_")
	core := strings.TrimSuffix(base, "_")
	n, ok := goNames[core]
	if !ok {
		n = camel(core, true)
	}
	if trail {
		n += "_"
	}
	return n
}

func paramName(n string) string {
	p := camel(n, false)
	if keywords[p] {
		p += "_"
	}
	return p
}

// goType is the Go type of a required argument, or "" when unsupported.
func goType(t string) string {
	switch strings.TrimSuffix(t, "?") {
	case "Tensor":
		return "Tensor"
	case "Tensor[]":
		return "[]Tensor"
	case "Tensor?[]":
		return "[]Tensor"
	case "Scalar":
		return "Scalar"
	case "int", "SymInt":
		if strings.HasSuffix(t, "?") {
			return "interface{}"
		}
		return "int64"
	case "float":
		if strings.HasSuffix(t, "?") {
			return "interface{}"
		}
		return "float64"
	case "bool":
		return "bool"
	case "str":
		return "string"
	case "ScalarType":
		return "DType"
	}
	base := strings.TrimSuffix(t, "?")
	if i := strings.Index(base, "["); i >= 0 {
		switch base[:i] {
		case "int", "SymInt":
			return "[]int64"
		case "float":
			return "[]float64"
		case "bool":
			return "[]bool"
		}
	}
	return ""
}

// ret is the Go result type and the results method giving it.
func ret(rs []string) (string, string, string) {
	if len(rs) == 0 {
		return "", "", ""
	}
	allTensors := true
	for _, r := range rs {
		if r != "Tensor" {
			allTensors = false
		}
	}
	switch {
	case len(rs) == 1 && rs[0] == "Tensor":
		return "Tensor", "Tensor{}", "r.tensor()"
	case allTensors || (len(rs) == 1 && rs[0] == "Tensor[]"):
		return "[]Tensor", "nil", "r.tensors()"
	case len(rs) == 1 && rs[0] == "int":
		return "int64", "0", "scalarAs[int64](&r)"
	case len(rs) == 1 && rs[0] == "float":
		return "float64", "0", "scalarAs[float64](&r)"
	case len(rs) == 1 && rs[0] == "bool":
		return "bool", "false", "scalarAs[bool](&r)"
	case len(rs) == 1 && (rs[0] == "int[]" || rs[0] == "SymInt[]"):
		return "[]int64", "nil", "scalarAs[[]int64](&r)"
	}
	return "[]interface{}", "nil", "r.all(), nil"
}

// primaryOverload is the overload that gets the plain name: the unnamed
// one, else torch's Tensor overload (Add(a, b Tensor); AddScalar), else
// the first.
func primaryOverload(schemas []string) int {
	for _, want := range []string{"", "Tensor"} {
		for i, text := range schemas {
			if s, err := Parse(text); err == nil && s.Overload == want {
				return i
			}
		}
	}
	return 0
}

type param struct{ name, typ, argName, schemaType string }

// typedOps are the ops with a typed C entry point (fastpath.go's
// go_typed), for their overload taking exactly these tensors.
var typedOps = map[string]string{
	"add.Tensor": "typedAdd", "sub.Tensor": "typedSub", "mul.Tensor": "typedMul",
	"div.Tensor": "typedDiv", "matmul": "typedMatmul", "mm": "typedMM", "neg": "typedNeg",
	"exp": "typedExp", "log": "typedLog", "tanh": "typedTanh", "sigmoid": "typedSigmoid",
	"relu": "typedRelu",
}

// Generate writes ops_gen.go for the given ops.
func Generate(ops []ferrotorch.OpInfo) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./cmd/genops from the C ABI's op schemas; DO NOT EDIT.\n\n")
	b.WriteString("package ferrotorch\n\n")
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	used := map[string]bool{}
	declared := map[string]bool{}
	skipped := 0
	for _, op := range ops {
		primary := primaryOverload(op.Schemas)
		for i, text := range op.Schemas {
			s, err := Parse(text)
			if err != nil {
				return nil, err
			}
			name := goName(op.Name)
			if i != primary {
				name += camel(strings.ToLower(s.Overload[:1])+s.Overload[1:], true)
			}
			if reserved[name] || used[name] || used["Must"+name] {
				name += fmt.Sprint(i)
			}
			var ps []param
			ok := true
			for _, a := range s.Args {
				if a.Default || a.KwOnly {
					continue
				}
				gt := goType(a.Type)
				if gt == "" {
					ok = false
					break
				}
				ps = append(ps, param{paramName(a.Name), gt, a.Name, a.Type})
			}
			rt, zero, conv := ret(s.Returns)
			if !ok || reserved[name] {
				skipped++
				continue
			}
			used[name], used["Must"+name] = true, true
			emit(&b, declared, op, s, name, ps, rt, zero, conv)
		}
	}
	fmt.Fprintf(&b, "\n// %d overloads have a required argument of a type Go cannot pass; call them with Call.\nconst skippedOverloads = %d\n", skipped, skipped)
	return format.Source(b.Bytes())
}

func emit(b *bytes.Buffer, declared map[string]bool, op ferrotorch.OpInfo, s Schema, name string, ps []param, rt, zero, conv string) {
	full := s.Name
	if s.Overload != "" {
		full += "." + s.Overload
	}
	// the call is by base name: the dispatcher picks the overload from the
	// values, keyword options included, as torch's Python binding does
	ref := "op_" + s.Name
	if !declared[ref] {
		declared[ref] = true
		fmt.Fprintf(b, "\nvar %s = &opRef{name: %q}\n", ref, s.Name)
	}
	var decl, callArgs []string
	for _, p := range ps {
		decl = append(decl, p.name+" "+p.typ)
		callArgs = append(callArgs, p.name)
	}
	decl = append(decl, "opts ...Opt")
	sig := strings.Join(decl, ", ")
	results := "error"
	if rt != "" {
		results = "(" + rt + ", error)"
	}
	fmt.Fprintf(b, "\n// %s calls torch's %s:\n//\n//\t%s\n//\n// Arguments with defaults are keyword options: Kw(name, value).\n", name, op.Name, s.Text)
	fmt.Fprintf(b, "func %s(%s) %s {\n", name, sig, results)
	// Note [The Go fast path]: tensor-only calls skip the boxed Go buffers
	onlyTensors := rt == "Tensor" && len(ps) <= 3
	for _, p := range ps {
		if p.typ != "Tensor" {
			onlyTensors = false
		}
	}
	if onlyTensors {
		if k, ok := typedOps[full]; ok && len(ps) <= 2 {
			second := "Tensor{}"
			if len(ps) == 2 {
				second = ps[1].name
			}
			fmt.Fprintf(b, "\tif len(opts) == 0 {\n\t\treturn typed(%s, %s, %s)\n\t}\n", k, ps[0].name, second)
		} else {
			args := []string{"Tensor{}", "Tensor{}", "Tensor{}"}
			for i, p := range ps {
				args[i] = p.name
			}
			fmt.Fprintf(b, "\tif len(opts) == 0 {\n\t\treturn fastTensors(%s, %d, %s)\n\t}\n", "op_"+s.Name, len(ps), strings.Join(args, ", "))
		}
	}
	fmt.Fprintf(b, "\tvar a argBuf\n")
	for _, p := range ps {
		if p.typ == "Tensor" {
			fmt.Fprintf(b, "\ta.tensor(%s)\n", p.name)
		} else {
			fmt.Fprintf(b, "\ta.any(%s)\n", p.name)
		}
	}
	fmt.Fprintf(b, "\tvar r results\n\tif err := a.call(%s, opts, &r); err != nil {\n", ref)
	if rt == "" {
		fmt.Fprintf(b, "\t\treturn err\n\t}\n\tr.all()\n\treturn nil\n}\n")
	} else {
		fmt.Fprintf(b, "\t\treturn %s, err\n\t}\n\treturn %s\n}\n", zero, conv)
	}
	// Must variant
	all := strings.Join(append(callArgs, "opts..."), ", ")
	if rt == "" {
		fmt.Fprintf(b, "\n// Must%s is %s, panicking on error.\nfunc Must%s(%s) {\n\tmust(%s(%s))\n}\n", name, name, name, sig, name, all)
	} else {
		fmt.Fprintf(b, "\n// Must%s is %s, panicking on error.\nfunc Must%s(%s) %s {\n\tv, err := %s(%s)\n\tmust(err)\n\treturn v\n}\n", name, name, name, sig, rt, name, all)
	}
	// methods, when the first argument is self
	if len(ps) == 0 || ps[0].argName != "self" || ps[0].typ != "Tensor" {
		return
	}
	mdecl := strings.Join(decl[1:], ", ")
	margs := strings.Join(append([]string{"t"}, append(callArgs[1:], "opts...")...), ", ")
	fmt.Fprintf(b, "\n// %s is %s(t, ...).\nfunc (t Tensor) %s(%s) %s {\n\treturn %s(%s)\n}\n", name, name, name, mdecl, results, name, margs)
	if rt == "" {
		fmt.Fprintf(b, "\n// Must%s is Must%s(t, ...).\nfunc (t Tensor) Must%s(%s) {\n\tMust%s(%s)\n}\n", name, name, name, mdecl, name, margs)
	} else {
		fmt.Fprintf(b, "\n// Must%s is Must%s(t, ...).\nfunc (t Tensor) Must%s(%s) %s {\n\treturn Must%s(%s)\n}\n", name, name, name, mdecl, rt, name, margs)
	}
}
