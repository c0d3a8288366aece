package adapter

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// BenchmarkEchoRunTask measures one whole run-task round trip over loopback
// HTTP: the adapter's own overhead per task.
func BenchmarkEchoRunTask(b *testing.B) {
	s, err := New(Config{Provider: provider.Echo{}, Workdir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	client := ts.Client()
	body := []byte(seedRequest)
	want := []byte(`"text":"user request"`)

	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/run-task", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		reply, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(reply, want) {
			b.Fatalf("reply %d %s: %v", resp.StatusCode, reply, err)
		}
	}
}
