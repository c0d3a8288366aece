package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// The profile file is shared with other versions of the runtime, so fields
// this version does not know are carried through a rewrite instead of being
// dropped. Known keys are matched case-insensitively because encoding/json
// decodes them that way; an unknown key differing only in case from a known
// one would otherwise be written back and clobber the known field.

var (
	profileKeys = jsonKeys(reflect.TypeFor[Profile]())
	fileKeys    = jsonKeys(reflect.TypeFor[File]())
)

// UnmarshalJSON decodes a profile and keeps its unknown fields.
func (p *Profile) UnmarshalJSON(b []byte) error {
	type plain Profile
	return decodeKeepingUnknown(b, profileKeys, func(v plain, extra map[string]json.RawMessage) {
		*p = Profile(v)
		p.extra = extra
	})
}

// MarshalJSON encodes a profile, token included: this is the storage format.
func (p Profile) MarshalJSON() ([]byte, error) {
	type plain Profile
	return encodeWithUnknown(plain(p), p.extra)
}

// UnmarshalJSON decodes the file and keeps its unknown top-level fields.
func (f *File) UnmarshalJSON(b []byte) error {
	type plain File
	return decodeKeepingUnknown(b, fileKeys, func(v plain, extra map[string]json.RawMessage) {
		*f = File(v)
		f.extra = extra
	})
}

// MarshalJSON encodes the file with its unknown top-level fields.
func (f File) MarshalJSON() ([]byte, error) {
	type plain File
	return encodeWithUnknown(plain(f), f.extra)
}

// decodeKeepingUnknown decodes b into a T, a type without methods of its
// own, and hands it to set with the fields of b that keys does not name;
// set is not called when b does not decode.
func decodeKeepingUnknown[T any](b []byte, keys map[string]bool, set func(T, map[string]json.RawMessage)) error {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	extra, err := unknownFields(b, keys)
	if err != nil {
		return err
	}
	set(v, extra)
	return nil
}

// encodeWithUnknown encodes v, a type without methods of its own, and
// appends the unknown fields extra carried from the file.
func encodeWithUnknown(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return appendFields(b, extra)
}

// jsonKeys returns the lower-cased JSON names of t's exported fields.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		field := t.Field(i)
		if !field.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name == "" {
			name = field.Name
		}
		keys[strings.ToLower(name)] = true
	}
	return keys
}

// unknownFields returns the members of the JSON object b whose keys are not
// in known.
func unknownFields(b []byte, known map[string]bool) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	var extra map[string]json.RawMessage
	for k, v := range all {
		if known[strings.ToLower(k)] {
			continue
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[k] = v
	}
	return extra, nil
}

// appendFields adds extra members, in key order, to the encoded object b.
func appendFields(b []byte, extra map[string]json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("append unknown fields: not a JSON object")
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	empty := len(bytes.TrimSpace(b[1:len(b)-1])) == 0
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !empty {
			buf.WriteByte(',')
		}
		empty = false
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
