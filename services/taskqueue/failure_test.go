package taskqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

func TestFailure(t *testing.T) {
	cases := []struct {
		output  string
		code    string
		message string
	}{
		{`{"error":"boom","code":"MY_CODE"}`, "MY_CODE", "boom"},
		{`{"error":"boom"}`, mesh.ReasonTaskFailed, "boom"},
		{`{"error":"boom","error_code":"E1"}`, "E1", "boom"},
		{`{"error":"boom","code":"A","error_code":"B"}`, "B", "boom"},
		{`{"error":{"message":"deep","code":"INNER"}}`, "INNER", "deep"},
		{`{"error":{"message":"deep","code":"INNER"},"code":"OUTER"}`, "INNER", "deep"},
		{`{"error":{"message":"deep"},"exit_code":3}`, mesh.ReasonTaskFailed, "deep"},
		{`{}`, "", ""},
		{`{"error":""}`, "", ""},
		{`{"error":null}`, "", ""},
		{`{"error":{"code":"X"}}`, "", ""},
		{`{"error":"x","code":"lower"}`, "", ""},
		{`{"error":"x","code":5}`, "", ""},
		{`["error"]`, "", ""},
		{`"boom"`, "", ""},
		{``, "", ""},
	}
	for _, c := range cases {
		re, err := failure(json.RawMessage(c.output))
		if c.code == "" {
			if !errors.Is(err, mesh.ErrInvalidRequest) {
				t.Errorf("failure(%s) = %+v, %v; want INVALID_REQUEST", c.output, re, err)
			}
			continue
		}
		if err != nil || re.Code != c.code || re.Message != c.message {
			t.Errorf("failure(%s) = %+v, %v; want %s / %q", c.output, re, err, c.code, c.message)
		}
	}
}

// FuzzFailure: the parser of a runtime's fail report never panics, refuses
// with INVALID_REQUEST, and what it accepts is a JSON object whose error text
// and code it reports faithfully, with a code the platform's pattern allows.
func FuzzFailure(f *testing.F) {
	for _, s := range []string{
		`{"error":"boom","code":"MY_CODE"}`, `{"error":{"message":"m","code":"C"}}`, `{"error":"x","error_code":"E_1"}`,
		`{"error":"adapter exited with 137","stderr":"killed","exit_code":137}`, `{}`, `{"error":1}`, `[]`, `null`, `{"error":"x","code":""}`,
		`{"error":"\u0000"}`, `{"error":{"message":"m","code":"lower"}}`, `{"error":"x"} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, output []byte) {
		re, err := failure(output)
		if err != nil {
			var e *mesh.Error
			if !errors.As(err, &e) || e.Code != mesh.CodeInvalidRequest || e.Message == "" {
				t.Fatalf("error is not INVALID_REQUEST with a message: %#v", err)
			}
			return
		}
		if !isJSONObject(output) {
			t.Fatalf("accepted output that is not a JSON object: %q", output)
		}
		if re.Message == "" || !errorCodePattern.MatchString(re.Code) {
			t.Fatalf("accepted %q as %+v", output, re)
		}
		errField := field(output, "error")
		var text string
		var innerCode string
		switch {
		case json.Unmarshal(errField, &text) == nil && text != "":
			if re.Message != text {
				t.Fatalf("message %q, want the error text %q", re.Message, text)
			}
		default:
			var msg string
			if json.Unmarshal(field(errField, "message"), &msg) != nil || msg == "" {
				t.Fatalf("accepted %q without an error text", output)
			}
			if re.Message != msg {
				t.Fatalf("message %q, want error.message %q", re.Message, msg)
			}
			_ = json.Unmarshal(field(errField, "code"), &innerCode)
		}
		codes := map[string]bool{mesh.ReasonTaskFailed: true, innerCode: true}
		for _, k := range []string{"code", "error_code"} {
			var c string
			_ = json.Unmarshal(field(output, k), &c)
			codes[c] = true
		}
		if !codes[re.Code] {
			t.Fatalf("code %q of %q comes from nowhere in the output", re.Code, output)
		}
	})
}

// field returns the value encoding/json would decode into a struct field
// named name: the last member whose key matches it, ignoring case.
func field(obj json.RawMessage, name string) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var found json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key, _ := tok.(string); strings.EqualFold(key, name) {
			found = v
		}
	}
	return found
}
