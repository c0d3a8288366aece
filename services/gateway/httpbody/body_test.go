package httpbody_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
)

func TestRead_ReadsWithinTheLimitAndRefusesMore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		limit   int64
		tooBig  bool
	}{
		{"under the limit", `{"a":1}`, 64, false},
		{"at the limit", strings.Repeat("x", 8), 8, false},
		{"over the limit", strings.Repeat("x", 9), 8, true},
		{"empty", "", 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.content))
			got, err := httpbody.Read(httptest.NewRecorder(), r, tc.limit)
			if tc.tooBig {
				if !errors.Is(err, httpbody.ErrTooLarge) {
					t.Fatalf("read %d bytes with limit %d: error %v, want ErrTooLarge", len(tc.content), tc.limit, err)
				}
				return
			}
			if err != nil || string(got) != tc.content {
				t.Fatalf("read %q, %v; want %q", got, err, tc.content)
			}
		})
	}
}

func TestIsJSON_AcceptsJSONMediaTypesOnly(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                true,
		"application/json; charset=utf-8": true,
		"application/a2a+json":            true,
		"text/plain":                      false,
		"":                                false,
		"application/json;;":              false,
	} {
		if got := httpbody.IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
