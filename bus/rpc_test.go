package bus

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// strictRequest has the field kinds service requests use.
type strictRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt,omitempty"`
	Wait      time.Duration   `json:"wait,omitempty"`
	Percent   *float64        `json:"percent,omitempty"`
	IDs       []string        `json:"task_run_ids,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Meta      map[string]any  `json:"metadata,omitempty"`
	Deadline  *time.Time      `json:"deadline,omitempty"`
}

var strictFields = []string{"task_run_id", "attempt", "wait", "percent", "task_run_ids", "output", "metadata", "deadline"}

func TestDecodeStrict(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{`{"task_run_id":"r","attempt":2,"output":{"text":"x"}}`, true},
		{` {"wait":1000000000} ` + "\n", true},
		{`{}`, true},
		{`{"task_run_id":"r","extra":1}`, false},
		{`{"attempt":"two"}`, false},
		{`{"task_run_id":"r"}}`, false},
		{`{"task_run_id":"r"}]`, false},
		{`{"task_run_id":"r"} {}`, false},
		{`{"task_run_id":`, false},
		{``, false},
		{`null`, true},
	}
	for _, c := range cases {
		var v strictRequest
		if err := DecodeStrict([]byte(c.in), &v); (err == nil) != c.ok {
			t.Errorf("DecodeStrict(%q) error %v, want ok=%v", c.in, err, c.ok)
		}
	}
}

// FuzzDecodeStrict checks the decoder of every bus request: it never panics,
// it accepts only input that is one valid JSON value naming known fields, and
// what it accepts decodes exactly as encoding/json would, and round-trips.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"task_run_id":"01a1ff64-1cf7-7e41-aa61-5eec963b7f34","attempt":1,"output":{"text":"done","artifact_refs":[]}}`,
		`{"task_run_ids":["a","b"],"wait":30000000000}`,
		`{"percent":12.5,"metadata":{"k":[1,"2",null,true]}}`,
		`{"deadline":"2030-01-02T03:04:05.123Z"}`,
		`{"TASK_RUN_ID":"case"}`, `{"unknown":1}`, `{"a":1}}`, `[1]`, `"s"`, `null`, ``, `{`, "{\"output\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v strictRequest
		if err := DecodeStrict(data, &v); err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var plain strictRequest
		if err := json.Unmarshal(data, &plain); err != nil || !reflect.DeepEqual(v, plain) {
			t.Fatalf("DecodeStrict and json.Unmarshal disagree on %q (%v)", data, err)
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			for k := range keys {
				known := false
				for _, f := range strictFields {
					known = known || strings.EqualFold(k, f)
				}
				if !known {
					t.Fatalf("accepted unknown field %q in %q", k, data)
				}
			}
		}
		first, err := json.Marshal(&v)
		if err != nil {
			return // e.g. a time beyond year 9999 decodes but does not encode
		}
		var again strictRequest
		if err := DecodeStrict(first, &again); err != nil {
			t.Fatalf("re-encoded %s is refused: %v", first, err)
		}
		second, _ := json.Marshal(&again)
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the request:\n%s\n%s", first, second)
		}
	})
}
