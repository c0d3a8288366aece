package inflight_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/inflight"
)

func large() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
	r.ContentLength = -1
	return r
}

// TestTake_ExcessLargeBodiesAreRefusedWithRetryAfter: a process takes as
// many large bodies as it has turns, callers without a credential from a
// share of their own; the next waits its time and is refused as a rate
// limit with Retry-After; a turn given back is taken again; small bodies
// take none.
func TestTake_ExcessLargeBodiesAreRefusedWithRetryAfter(t *testing.T) {
	l, err := inflight.New(inflight.Config{Credentialed: 1, Anonymous: 1, Wait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	first, releaseFirst := l.Track(large())
	if err := inflight.Take(httptest.NewRecorder(), first, false); err != nil {
		t.Fatalf("first body: %v", err)
	}
	anon, releaseAnon := l.Track(large())
	if err := inflight.Take(httptest.NewRecorder(), anon, true); err != nil {
		t.Fatalf("an anonymous body has its own turns: %v", err)
	}
	second, releaseSecond := l.Track(large())
	defer releaseSecond()
	w := httptest.NewRecorder()
	err = inflight.Take(w, second, false)
	if !errors.Is(err, inflight.ErrBusy) || !errors.Is(err, admission.ErrRateLimited) || w.Header().Get("Retry-After") == "" {
		t.Fatalf("second body: %v, Retry-After %q", err, w.Header().Get("Retry-After"))
	}
	third, releaseThird := l.Track(large())
	defer releaseThird()
	if err := inflight.Take(httptest.NewRecorder(), third, true); !errors.Is(err, inflight.ErrBusy) {
		t.Fatalf("second anonymous body: %v", err)
	}
	small, releaseSmall := l.Track(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
	defer releaseSmall()
	if err := inflight.Take(httptest.NewRecorder(), small, false); err != nil {
		t.Fatalf("a small body: %v", err)
	}
	releaseFirst()
	releaseAnon()
	if err := inflight.Take(httptest.NewRecorder(), second, false); err != nil {
		t.Fatalf("after a turn was given back: %v", err)
	}
	if err := inflight.Take(httptest.NewRecorder(), third, true); err != nil {
		t.Fatalf("after an anonymous turn was given back: %v", err)
	}
}

func TestConfig_Validate(t *testing.T) {
	for _, c := range []inflight.Config{{Large: -1}, {Credentialed: -1}, {Anonymous: -1}, {Wait: -time.Second}} {
		if _, err := inflight.New(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
