package experiment

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkNode walks the YAML tree against the Go type it decodes into, before
// the decoder does, so that an unknown field, a duplicate key or a value of
// the wrong type is reported with its path (spec.load.rate) and line, as
// every other mistake is. Aliases are left to the decoder, which bounds
// their expansion.
func checkNode(n *yaml.Node, t reflect.Type, path string) *SpecError {
	if n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	at := func(format string, args ...any) *SpecError {
		return &SpecError{Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(yamlUnmarshaler) || pt.Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			return at("want a single value, not a %s", kindName(n.Kind))
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return at("%s", oneLine(err))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkNode(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return at("want a mapping (field: value, ...), not a %s", kindName(n.Kind))
		}
		fields := yamlFields(t)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return &SpecError{Line: k.Line, Path: path, Msg: "a field name must be a plain word"}
			}
			if k.Value == "<<" {
				continue // a merge key: the decoder merges it
			}
			p := join(path, k.Value)
			if first, ok := seen[k.Value]; ok {
				return &SpecError{Line: k.Line, Path: p, Msg: fmt.Sprintf("given twice (first on line %d)", first)}
			}
			seen[k.Value] = k.Line
			f, ok := fields[k.Value]
			if !ok {
				return &SpecError{Line: k.Line, Path: p, Msg: fmt.Sprintf("unknown field: %s takes %s", where(path), strings.Join(fieldNames(t), ", "))}
			}
			if err := checkNode(v, f, p); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return at("want a list, not a %s", kindName(n.Kind))
		}
		for i, c := range n.Content {
			if err := checkNode(c, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return at("want a single value, not a %s", kindName(n.Kind))
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		v := strconv.Quote(n.Value)
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return at("%s is not a whole number", v)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return at("%s is not a whole number from 0 to %d", v, uint64(1<<64-1))
		case reflect.Float32, reflect.Float64:
			return at("%s is not a number", v)
		case reflect.Bool:
			return at("%s is not true or false", v)
		}
		return at("%s", oneLine(err))
	}
	return nil
}

// yamlFields maps the YAML names of a struct's fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// fieldNames lists a struct's YAML field names in declaration order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && name != "-" && name != "" {
			out = append(out, name)
		}
	}
	return out
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func where(path string) string {
	if path == "" {
		return "an experiment"
	}
	return path
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.DocumentNode:
		return "document"
	}
	return "single value"
}

// oneLine drops yaml.v3's prefixes and newlines from a decoding error.
func oneLine(err error) string {
	se := yamlError("", err)
	return se.Msg
}
