package jsonin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// refuseNull returns an *Error naming the first null of data (already
// decoded into a t) whose target cannot say null: anything but an
// interface or a type that reads JSON itself.
func refuseNull(data []byte, t reflect.Type) error {
	if !bytes.Contains(data, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil // Decode read it: cannot happen
	}
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem() // the pointer Decode was given
	}
	return nullIn(doc, t, "")
}

// nullIn walks v, decoded as t, for a null t cannot take.
func nullIn(v any, t reflect.Type, path string) error {
	if t == nil || takesNull(t) {
		return nil
	}
	if v == nil {
		if path == "" {
			return &Error{Message: fmt.Sprintf("the document must be %s, not null", kindWords(t))}
		}
		return &Error{Field: path, Message: "cannot be null: leave it out, or give " + kindWords(t)}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if takesNull(t) {
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, _ := v.(map[string]any)
		for key, val := range obj {
			if ft, ok := fieldType(t, key); ok {
				if err := nullIn(val, ft, join(path, key)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		obj, _ := v.(map[string]any)
		for key, val := range obj {
			if err := nullIn(val, t.Elem(), join(path, key)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		list, _ := v.([]any)
		for i, val := range list {
			if err := nullIn(val, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// takesNull: t reads null itself (an interface, json.RawMessage, a
// json.Unmarshaler).
func takesNull(t reflect.Type) bool {
	return t.Kind() == reflect.Interface || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// fieldType is the type of t's field that the JSON key names, as
// encoding/json matches it (exactly, else without regard to case).
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	var walk func(reflect.Type) reflect.Type
	walk = func(t reflect.Type) reflect.Type {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				if ft := walk(f.Type); ft != nil {
					return ft
				}
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if name == key {
				return f.Type
			}
			if fold == nil && strings.EqualFold(name, key) {
				fold = f.Type
			}
		}
		return nil
	}
	if ft := walk(t); ft != nil {
		return ft, true
	}
	return fold, fold != nil
}
