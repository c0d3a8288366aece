package provider

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// decodeEvent decodes one event of a host's stream into v, a pointer to a
// struct, leniently: a field whose value has a type other than the one
// expected (a fraction where an integer was documented, a number in a
// string, an object where a string was) is left at its zero value, or
// converted when the conversion is plain, and every other field is still
// decoded. Hosts change their event formats between releases; one field
// of an unexpected type must never cost the whole event. It fails only
// when raw is not a JSON object.
func decodeEvent(raw []byte, v any) error {
	if json.Unmarshal(raw, v) == nil {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	rv := reflect.ValueOf(v).Elem()
	rv.SetZero()
	lenient(raw, rv)
	return nil
}

// lenient decodes raw into v as far as it can.
func lenient(raw json.RawMessage, v reflect.Value) {
	if json.Unmarshal(raw, v.Addr().Interface()) == nil {
		return
	}
	v.SetZero()
	switch v.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" || !f.IsExported() {
				continue
			}
			if r, ok := fieldRaw(fields, name); ok {
				lenient(r, v.Field(i))
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return
		}
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, it := range items {
			lenient(it, s.Index(i))
		}
		v.Set(s)
	case reflect.Pointer:
		if string(raw) == "null" {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		lenient(raw, v.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if f, ok := number(raw); ok && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) < math.MaxInt64 {
			v.SetInt(int64(f))
		}
	case reflect.Float32, reflect.Float64:
		if f, ok := number(raw); ok {
			v.SetFloat(f)
		}
	case reflect.Bool:
		if b, err := strconv.ParseBool(unquote(raw)); err == nil {
			v.SetBool(b)
		}
	case reflect.String:
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			v.SetString(n.String())
			return
		}
		// An object where a string was expected: keep its message, the
		// part worth showing.
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &m) == nil {
			v.SetString(m.Message)
		}
	}
}

// number reads a JSON number, or a number in a JSON string.
func number(raw json.RawMessage) (float64, bool) {
	f, err := strconv.ParseFloat(unquote(raw), 64)
	return f, err == nil
}

func unquote(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	return string(raw)
}

// jsonName is the name a struct field has in JSON, "" for none.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name
	}
	return name
}

// fieldRaw finds a field the way encoding/json does: the exact name first,
// then any case.
func fieldRaw(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if r, ok := fields[name]; ok {
		return r, true
	}
	for k, r := range fields {
		if strings.EqualFold(k, name) {
			return r, true
		}
	}
	return nil, false
}
