// Package nn is torch.nn for Go, with GoTorch's module design (seeds/003):
// a module is a struct that embeds Module and calls Init on itself; its
// exported fields of type ferrotorch.Tensor are parameters, unless tagged
// `ferrotorch:"buffer"`; fields holding modules (or slices of them) are
// submodules. Parameters, StateDict, LoadStateDict, Train, Eval, To and
// ZeroGrad find them by reflection and name them as PyTorch does
// (layer1.0.conv1.weight: field names in snake_case, slice elements by
// index; a `ferrotorch:"name=..."` tag overrides a name, and
// `ferrotorch:"inline"` adds none, as Sequential's children are 0, 1, ...).
package nn

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"

	ft "ferrotorch"
)

// Module is embedded in every module struct.
type Module struct {
	outer    interface{}
	training bool
}

// IModule is what every module struct (embedding Module) implements.
type IModule interface {
	module() *Module
}

func (m *Module) module() *Module { return m }

// Init records the struct that embeds m (a pointer to it) and puts it in
// training mode; constructors call it last: `l.Init(l)`.
func (m *Module) Init(outer interface{}) {
	if reflect.ValueOf(outer).Kind() != reflect.Ptr {
		panic("nn.Module.Init: pass a pointer to the module struct")
	}
	m.outer = outer
	m.training = true
}

func (m *Module) self() reflect.Value {
	if m.outer == nil {
		panic("nn.Module: Init was not called on this module")
	}
	return reflect.ValueOf(m.outer).Elem()
}

var tensorType = reflect.TypeOf(ft.Tensor{})
var moduleIface = reflect.TypeOf((*IModule)(nil)).Elem()

// snake turns a Go field name into PyTorch's: RunningMean -> running_mean,
// Layer1 -> layer1, FC -> fc.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

type tag struct {
	buffer bool
	name   string
	skip   bool
	inline bool
}

func parseTag(f reflect.StructField) tag {
	var t tag
	for _, part := range strings.Split(f.Tag.Get("ferrotorch"), ",") {
		switch {
		case part == "buffer":
			t.buffer = true
		case part == "-":
			t.skip = true
		case part == "inline":
			t.inline = true
		case strings.HasPrefix(part, "name="):
			t.name = strings.TrimPrefix(part, "name=")
		}
	}
	if t.name == "" && !t.inline {
		t.name = snake(f.Name)
	}
	return t
}

// entry is a tensor slot of the tree: where it is and what it is.
type entry struct {
	name   string
	buffer bool
	slot   reflect.Value // the Tensor field (settable)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// walk visits every tensor slot and submodule of the tree under v (a
// module struct value), depth first, in field order.
func walk(v reflect.Value, prefix string, visitT func(entry), visitM func(string, *Module)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tg := parseTag(f)
		if tg.skip {
			continue
		}
		walkValue(v.Field(i), join(prefix, tg.name), tg.buffer, visitT, visitM)
	}
}

func walkValue(fv reflect.Value, name string, buffer bool, visitT func(entry), visitM func(string, *Module)) {
	switch {
	case fv.Type() == tensorType:
		if fv.Interface().(ft.Tensor).Defined() {
			visitT(entry{name, buffer, fv})
		}
	case fv.Type().Implements(moduleIface):
		if fv.Kind() == reflect.Ptr && fv.IsNil() {
			return
		}
		if fv.Kind() == reflect.Interface && fv.IsNil() {
			return
		}
		m := fv.Interface().(IModule).module()
		if visitM != nil {
			visitM(name, m)
		}
		walk(m.self(), name, visitT, visitM)
	case fv.Kind() == reflect.Interface && !fv.IsNil():
		walkValue(fv.Elem(), name, buffer, visitT, visitM)
	case fv.Kind() == reflect.Slice || fv.Kind() == reflect.Array:
		for j := 0; j < fv.Len(); j++ {
			walkValue(fv.Index(j), join(name, fmt.Sprint(j)), buffer, visitT, visitM)
		}
	}
}

func (m *Module) entries() []entry {
	var out []entry
	walk(m.self(), "", func(e entry) { out = append(out, e) }, nil)
	return out
}

// NamedParameters lists the parameters with their dotted names.
func (m *Module) NamedParameters() []ft.Named {
	var out []ft.Named
	for _, e := range m.entries() {
		if !e.buffer {
			out = append(out, ft.Named{Name: e.name, Tensor: e.slot.Interface().(ft.Tensor)})
		}
	}
	return out
}

// Parameters lists the parameters (what an optimizer updates).
func (m *Module) Parameters() []ft.Tensor {
	var out []ft.Tensor
	for _, n := range m.NamedParameters() {
		out = append(out, n.Tensor)
	}
	return out
}

// NamedBuffers lists the buffers with their dotted names.
func (m *Module) NamedBuffers() []ft.Named {
	var out []ft.Named
	for _, e := range m.entries() {
		if e.buffer {
			out = append(out, ft.Named{Name: e.name, Tensor: e.slot.Interface().(ft.Tensor)})
		}
	}
	return out
}

// StateDict lists parameters and buffers by dotted name, in PyTorch's
// order (each module's own parameters, then its buffers, then its
// submodules') as far as field order gives it: fields in declaration order.
func (m *Module) StateDict() []ft.Named {
	var out []ft.Named
	for _, e := range m.entries() {
		out = append(out, ft.Named{Name: e.name, Tensor: e.slot.Interface().(ft.Tensor)})
	}
	return out
}

// LoadStateDict copies values into the parameters and buffers by name
// (in place, without recording; load_state_dict). With strict, a missing
// or unexpected key is an error, as in torch.
func (m *Module) LoadStateDict(sd []ft.Named, strict bool) error {
	byName := map[string]ft.Tensor{}
	for _, n := range sd {
		byName[n.Name] = n.Tensor
	}
	var missing []string
	seen := map[string]bool{}
	var err error
	ft.NoGrad(func() {
		for _, e := range m.entries() {
			src, ok := byName[e.name]
			if !ok {
				missing = append(missing, e.name)
				continue
			}
			seen[e.name] = true
			dst := e.slot.Interface().(ft.Tensor)
			if _, cerr := dst.Copy_(src); cerr != nil && err == nil {
				err = fmt.Errorf("load_state_dict: while copying %s: %w", e.name, cerr)
			}
		}
	})
	if err != nil {
		return err
	}
	var unexpected []string
	for _, n := range sd {
		if !seen[n.Name] {
			unexpected = append(unexpected, n.Name)
		}
	}
	if strict && (len(missing) > 0 || len(unexpected) > 0) {
		return &ft.Error{Status: ft.StatusRuntime, Message: fmt.Sprintf(
			"Error(s) in loading state_dict: Missing key(s): %q. Unexpected key(s): %q.", missing, unexpected)}
	}
	return nil
}

// Save writes the state dict to a safetensors file.
func (m *Module) Save(path string) error { return ft.SaveSafetensors(m.StateDict(), path) }

// Load reads a safetensors file into the module (strict).
func (m *Module) Load(path string) error {
	sd, err := ft.LoadSafetensors(path)
	if err != nil {
		return err
	}
	return m.LoadStateDict(sd, true)
}

// Train sets training mode on the tree (module.train(mode)).
func (m *Module) Train(mode bool) {
	m.training = mode
	walk(m.self(), "", func(entry) {}, func(_ string, sub *Module) { sub.training = mode })
}

// Eval is Train(false).
func (m *Module) Eval() { m.Train(false) }

// IsTraining reports the module's mode (module.training).
func (m *Module) IsTraining() bool { return m.training }

// ZeroGrad clears every parameter's gradient (module.zero_grad()).
func (m *Module) ZeroGrad() {
	for _, p := range m.Parameters() {
		_ = p.SetGrad(ft.Tensor{})
	}
}

// To converts every floating parameter and buffer to dtype (module.to):
// the fields are replaced by converted leaves, requires_grad kept.
func (m *Module) To(dtype ft.DType) error {
	for _, e := range m.entries() {
		t := e.slot.Interface().(ft.Tensor)
		if d := t.DType(); d != ft.Float32 && d != ft.Float64 && d != ft.Float16 && d != ft.BFloat16 {
			continue
		}
		rg := t.RequiresGrad()
		var c ft.Tensor
		var err error
		ft.NoGrad(func() { c, err = t.To(dtype) })
		if err != nil {
			return err
		}
		c = c.Detach()
		if rg {
			if _, err := c.SetRequiresGrad(true); err != nil {
				return err
			}
		}
		e.slot.Set(reflect.ValueOf(c))
	}
	return nil
}
