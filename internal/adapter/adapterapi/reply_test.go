package adapterapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// classify is what ParseReply answers of a body, said the plain way: text
// that is not JSON, JSON that is not an object, or a reply.
func classify(body []byte) error {
	trimmed := bytes.TrimSpace(body)
	switch {
	case !json.Valid(trimmed):
		return ErrNotJSON
	case trimmed[0] != '{':
		return ErrNotObject
	}
	return nil
}

// TestParseReply_TellsTextThatIsNotJSONFromJSONThatIsNotAnObject: an
// adapter's answer is sorted into the run failure reason it earns.
func TestParseReply_TellsTextThatIsNotJSONFromJSONThatIsNotAnObject(t *testing.T) {
	for body, want := range map[string]error{
		``:                            ErrNotJSON,
		`   `:                         ErrNotJSON,
		`not json`:                    ErrNotJSON,
		`{"text":`:                    ErrNotJSON,
		`{"text":"hi"} trailing`:      ErrNotJSON,
		`{"a":1}{"b":2}`:              ErrNotJSON,
		`[1,2]`:                       ErrNotObject,
		`"text"`:                      ErrNotObject,
		`null`:                        ErrNotObject,
		` {"success":true} `:          nil,
		`{"text":"legacy"}`:           nil,
		`{"success":false,"error":1}`: nil,
	} {
		if _, err := ParseReply([]byte(body)); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("ParseReply(%q) = %v, want %v", body, err, want)
		}
	}
}

// FuzzParseReply: whatever an adapter answers, ParseReply sorts it as the
// plain rule does, and a reply it accepts has a kind.
func FuzzParseReply(f *testing.F) {
	for _, seed := range []string{`{"success":true,"output":{"text":"hi"}}`, `{"success":false,"error":"no","code":"BUDGET_EXCEEDED"}`, `[1]`, `{"a":`, `"s"`, ``, `{"success":"yes"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reply, err := ParseReply(body)
		want := classify(body)
		switch {
		case want != nil && !errors.Is(err, want):
			t.Fatalf("ParseReply(%q) = %v, want %v", body, err, want)
		case want == nil && errors.Is(err, ErrNotJSON), want == nil && errors.Is(err, ErrNotObject):
			t.Fatalf("ParseReply(%q) = %v for a JSON object", body, err)
		case err == nil && reply.Kind == 0:
			t.Fatalf("ParseReply(%q) accepted it without a kind", body)
		}
	})
}
