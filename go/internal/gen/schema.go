// Package gen writes ops_gen.go, the typed Go functions of every op, from
// the schemas the C ABI lists (Note [One binding layer]): bindings get
// their ops from the schemas, not by hand.
package gen

import (
	"fmt"
	"strings"
)

// Arg is one argument of a schema.
type Arg struct {
	Type     string // without alias annotations: "Tensor", "int[]", "Scalar?"
	Name     string
	Default  bool
	KwOnly   bool
	Optional bool // "T?"
}

// Schema is one overload: add.Tensor(Tensor self, ...) -> Tensor.
type Schema struct {
	Text     string
	Name     string
	Overload string
	Args     []Arg
	Returns  []string
}

// splitTop splits s on commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// stripAlias removes alias annotations: Tensor(a!) -> Tensor.
func stripAlias(t string) string {
	for {
		i := strings.Index(t, "(")
		if i < 0 {
			return t
		}
		j := strings.Index(t[i:], ")")
		if j < 0 {
			return t
		}
		t = t[:i] + t[i+j+1:]
	}
}

// Parse reads a schema in torch's syntax.
func Parse(text string) (Schema, error) {
	s := Schema{Text: text}
	open := strings.Index(text, "(")
	arrow := strings.LastIndex(text, "->")
	if open < 0 || arrow < 0 {
		return s, fmt.Errorf("bad schema %q", text)
	}
	closeParen := strings.LastIndex(text[:arrow], ")")
	full := text[:open]
	if dot := strings.Index(full, "."); dot >= 0 {
		s.Name, s.Overload = full[:dot], full[dot+1:]
	} else {
		s.Name = full
	}
	kw := false
	for _, a := range splitTop(text[open+1 : closeParen]) {
		if a == "*" {
			kw = true
			continue
		}
		arg := Arg{KwOnly: kw}
		decl := a
		if eq := strings.Index(a, "="); eq >= 0 {
			arg.Default = true
			decl = a[:eq]
		}
		sp := strings.LastIndex(strings.TrimSpace(decl), " ")
		if sp < 0 {
			return s, fmt.Errorf("bad argument %q in %q", a, text)
		}
		decl = strings.TrimSpace(decl)
		arg.Type = stripAlias(strings.TrimSpace(decl[:sp]))
		arg.Name = strings.TrimSpace(decl[sp+1:])
		if strings.HasSuffix(arg.Type, "?") {
			arg.Optional = true
		}
		s.Args = append(s.Args, arg)
	}
	ret := strings.TrimSpace(text[arrow+2:])
	if strings.HasPrefix(ret, "(") && strings.HasSuffix(ret, ")") {
		ret = ret[1 : len(ret)-1]
	}
	for _, r := range splitTop(ret) {
		r = strings.TrimSpace(r)
		if sp := strings.Index(r, " "); sp >= 0 {
			r = r[:sp] // a named return: "Tensor values"
		}
		s.Returns = append(s.Returns, stripAlias(r))
	}
	return s, nil
}
