package adapter

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestReadBody_MemoryFollowsTheBytesSentNotTheLengthDeclared: a request
// that declares the largest body and sends two bytes makes the adapter
// hold about what it sent, not what it declared: a caller cannot have
// 32 MiB held per connection by a header alone.
func TestReadBody_MemoryFollowsTheBytesSentNotTheLengthDeclared(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/run-task", strings.NewReader("{}"))
	r.ContentLength = MaxRequestBytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, _ = readBody(httptest.NewRecorder(), r)
	runtime.ReadMemStats(&after)
	if held := after.TotalAlloc - before.TotalAlloc; held > 4<<20 {
		t.Fatalf("reading 2 bytes of a body declared as %d allocated %d bytes", MaxRequestBytes, held)
	}
}
