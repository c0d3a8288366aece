package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
)

// decodeSeeds are bodies clients really send, and the usual mistakes.
var decodeSeeds = []string{
	`{"target_agent_id":"01a1ff64-1ce8-7a34-9b06-cea33d93f569","input":{"text":"hello"}}`,
	`{"target_agent_id":"01a1ff64-1ce8-7a34-9b06-cea33d93f569","input":{"text":"x"},"idempotency_key":"k1","max_attempts":2,"timeout_seconds":30,"metadata":{"a":[1,2,{"b":null}]}}`,
	`{"deadline":"2030-01-02T03:04:05Z","input":{}}`,
	`{"output":{"error":"boom","code":"MY_CODE"},"attempt":1}`,
	`{"message":"halfway","percent":50.5}`,
	`{"name":"agent","skills":[{"id":"s","name":"S"}]}`,
	`  {"input":{"text":"with spaces"}}  ` + "\n",
	`{}`, ``, ` `, `null`, `[]`, `"text"`, `42`,
	`{"input":`, `{"a":1}}`, `{"a":1}]`, `{"a":1} {"b":2}`, `{"a":1},`,
	`{"nmae":"typo"}`, `{"max_attempts":"two"}`, `{"input":{"text":"\ud800"}}`, "{\"input\":{\"text\":\"\x00\"}}",
	`{"percent":1e400}`, `{"deadline":"yesterday"}`, `{"input":{"text":"é"}}`, "\xef\xbb\xbf{}",
}

// FuzzDecodeJSON checks the body decoder of every JSON route: it never
// panics, it fails only with INVALID_REQUEST, what it accepts is exactly one
// valid JSON object, strict mode accepts a subset of lenient mode, and an
// accepted body re-encodes to something it accepts the same way.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var strictV, lenientV meshapi.CreateTaskRunRequest
		strictErr := decodeJSON(body, strict, &strictV)
		lenientErr := decodeJSON(body, lenient, &lenientV)
		var report reportRequest
		reportErr := decodeJSON(body, lenient, &report)
		for _, err := range []error{strictErr, lenientErr, reportErr} {
			checkDecodeError(t, err)
		}
		if strictErr == nil && lenientErr != nil {
			t.Fatalf("strict mode accepted what lenient mode refused (%v): %q", lenientErr, body)
		}
		if strictErr == nil && !reflect.DeepEqual(strictV, lenientV) {
			t.Fatalf("strict and lenient decode %q differently", body)
		}
		trimmed := bytes.TrimSpace(body)
		for _, err := range []error{lenientErr, reportErr} {
			if err == nil && len(trimmed) > 0 && (trimmed[0] != '{' || !json.Valid(trimmed)) {
				t.Fatalf("accepted a body that is not exactly one JSON object: %q", body)
			}
		}
		if lenientErr == nil {
			roundTrip(t, lenient, &lenientV)
		}
		if strictErr == nil {
			roundTrip(t, strict, &strictV)
		}
	})
}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *mesh.Error
	if !errors.As(err, &e) || e.Code != mesh.CodeInvalidRequest || e.Message == "" {
		t.Fatalf("decode error is not INVALID_REQUEST with a message: %#v", err)
	}
}

// roundTrip re-encodes a decoded request and decodes it again: the result
// must be accepted and encode to the same bytes.
func roundTrip(t *testing.T, mode decodeMode, v *meshapi.CreateTaskRunRequest) {
	t.Helper()
	first, err := json.Marshal(v)
	if err != nil {
		// Values such as a time outside year 0-9999 decode but do not encode;
		// nothing to compare then.
		return
	}
	var again meshapi.CreateTaskRunRequest
	if err := decodeJSON(first, mode, &again); err != nil {
		t.Fatalf("re-encoded body %s is refused: %v", first, err)
	}
	second, err := json.Marshal(&again)
	if err != nil || !bytes.Equal(first, second) {
		t.Fatalf("round trip changed the request:\n%s\n%s (%v)", first, second, err)
	}
}

// FuzzDecodeBody drives decodeBody through a real request: the size limit
// wins over everything, then the media type, then the JSON itself.
func FuzzDecodeBody(f *testing.F) {
	const limit = 96
	for _, s := range decodeSeeds {
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "text/plain", "", "application/problem+json", "application/json;;"} {
			f.Add([]byte(s), ct)
		}
	}
	f.Add([]byte(strings.Repeat(" ", limit+1)), "application/json")
	f.Add([]byte(`{"input":{"text":"`+strings.Repeat("x", limit)+`"}}`), "application/json")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		r := httptest.NewRequest(http.MethodPost, "/task-runs", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		var v meshapi.CreateTaskRunRequest
		err := decodeBody(w, r, limit, strict, &v)
		var e *mesh.Error
		if err != nil && (!errors.As(err, &e) || e.Message == "") {
			t.Fatalf("decodeBody error is not a mesh error with a message: %#v", err)
		}
		trimmed := bytes.TrimSpace(body)
		switch {
		case len(body) > limit:
			if e == nil || e.Code != mesh.CodePayloadTooLarge {
				t.Fatalf("%d-byte body over a %d-byte limit: %v, want PAYLOAD_TOO_LARGE", len(body), limit, err)
			}
		case len(trimmed) == 0:
			if err != nil {
				t.Fatalf("empty body refused: %v", err)
			}
		case !httpbody.IsJSON(contentType):
			if e == nil || e.Code != mesh.CodeUnsupportedMedia {
				t.Fatalf("Content-Type %q: %v, want UNSUPPORTED_MEDIA_TYPE", contentType, err)
			}
		default:
			var direct meshapi.CreateTaskRunRequest
			want := decodeJSON(body, strict, &direct)
			if (err == nil) != (want == nil) || (err == nil && !reflect.DeepEqual(v, direct)) {
				t.Fatalf("decodeBody (%v) and decodeJSON (%v) disagree on %q", err, want, body)
			}
		}
	})
}

// TestDecodeJSON_RejectsDataAfterTheObject pins the cases a "More()" check
// misses: a stray closing bracket after the object.
func TestDecodeJSON_RejectsDataAfterTheObject(t *testing.T) {
	for _, body := range []string{`{"a":1}}`, `{"a":1}]`, `{} {}`, `{}x`, `{},`} {
		var v map[string]any
		err := decodeJSON([]byte(body), lenient, &v)
		var e *mesh.Error
		if !errors.As(err, &e) || e.Code != mesh.CodeInvalidRequest {
			t.Errorf("%s: %v, want INVALID_REQUEST", body, err)
		}
	}
	var v map[string]any
	if err := decodeJSON([]byte(" {\"a\":1} \n\t"), lenient, &v); err != nil {
		t.Errorf("surrounding whitespace refused: %v", err)
	}
}
