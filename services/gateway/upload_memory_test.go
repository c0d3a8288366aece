package gateway_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// uploadBody streams an upload of size bytes of base64 content, generated
// as it is read, so the test itself holds none of it.
func uploadBody(size int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, `{"filename":"big.bin","mime_type":"application/octet-stream","content_base64":"`)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		chunk := make([]byte, 32<<10)
		for i := range chunk {
			chunk[i] = byte(i * 7)
		}
		for left := size; left > 0; left -= len(chunk) {
			if _, err := enc.Write(chunk[:min(left, len(chunk))]); err != nil {
				return
			}
		}
		_ = enc.Close()
		_, _ = io.WriteString(pw, `"}`)
		_ = pw.Close()
	}()
	return pr
}

// gatewayAllocated is how many bytes code of the gateway has allocated so
// far (allocations whose stack goes through the gateway's packages), by the
// memory profile. The profile is complete after two garbage collections.
func gatewayAllocated() int64 {
	runtime.GC()
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	records := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(records, true)
	var total int64
	for _, r := range records[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasPrefix(f.Function, "github.com/a2amesh/a2amesh/services/gateway.") {
				total += r.AllocBytes
				break
			}
			if !more {
				break
			}
		}
	}
	return total
}

// TestArtifacts_UploadMemoryIsBounded: a 24 MiB upload (32 MiB of base64
// JSON) is streamed to the object store: the gateway allocates a small
// fraction of its size to receive it, counted over the whole upload, so its
// heap can never grow by more (it allocated over 300 MiB, and held the
// content four to six times over, when it read the body whole). Every allocation is recorded for the
// measurement, so the test does not run in parallel with others.
func TestArtifacts_UploadMemoryIsBounded(t *testing.T) {
	const size = 24 << 20
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.MaxArtifactBytes = 25 << 20
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agent := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, agent.ID, "big output")

	post := func() *http.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.APIBase+"/task-runs/"+run.ID+"/artifacts", uploadBody(size))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Runtime-Token", rt.RuntimeToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()
	before := gatewayAllocated()
	resp := post()
	after := gatewayAllocated()
	runtime.MemProfileRate = rate

	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload: HTTP %d: %s", resp.StatusCode, b)
	}
	allocated := after - before
	t.Logf("a %d MiB upload: the gateway allocated %.1f MiB", size>>20, float64(allocated)/(1<<20))
	if allocated > size/16 {
		t.Fatalf("the gateway allocated %d bytes for a %d-byte upload: more than a sixteenth of it", allocated, size)
	}

	// The content arrived whole.
	var list struct {
		Artifacts []mesh.Artifact `json:"artifacts"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + run.ID + "/artifacts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Artifacts) != 1 || list.Artifacts[0].Size != size {
		t.Fatalf("artifacts: %+v", list.Artifacts)
	}
}

// TestArtifacts_UploadsAreReadAsJSON: the streamed reading of an upload
// takes what encoding/json takes: escapes and surrogate pairs in the
// content, fields in any order, unknown fields of any shape.
func TestArtifacts_UploadsAreReadAsJSON(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, agent.ID, "json")
	for _, tc := range []struct {
		name, body, content string
	}{
		{"escapes", `{"filename":"a.txt","content_text":"q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00 x"}`, "q\"b\\s/n\nt\tu\u00e9\U0001F600 x"},
		{"content first, unknown fields", ` { "content_text" : "first" , "extra": {"a":[1,"}",{"b":"\\\""}]}, "filename" : "b.txt", "n": null } `, "first"},
		{"base64 with newlines", `{"content_base64":"aGVs\nbG8=","filename":"c.bin"}`, "hello"},
		{"empty", `{"filename":"d.txt","content_text":""}`, ""},
	} {
		r := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/artifacts", RuntimeToken: rt.RuntimeToken,
			Body: []byte(tc.body), ContentType: "application/json"}).Expect(t, http.StatusCreated)
		var up struct {
			Artifact mesh.Artifact `json:"artifact"`
		}
		r.Decode(t, &up)
		got := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + up.Artifact.ID + "/content", Owner: true}).Expect(t, http.StatusOK)
		if string(got.Body) != tc.content || up.Artifact.Size != int64(len(tc.content)) {
			t.Errorf("%s: stored %q (size %d), want %q", tc.name, got.Body, up.Artifact.Size, tc.content)
		}
	}
	for _, body := range []string{`{"filename":"a.txt","content_text":"x"`, `{"filename":"a.txt","content_text":"x"} {}`, `{"filename":"a.txt","content_text":"\x"}`, `[1]`, `{"filename":"a.txt","content_text":5}`} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/artifacts", RuntimeToken: rt.RuntimeToken,
			Body: []byte(body), ContentType: "application/json"}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}
	var list struct {
		Artifacts []mesh.Artifact `json:"artifacts"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + run.ID + "/artifacts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Artifacts) != 4 {
		t.Fatalf("%d artifacts after 4 good and 5 bad uploads", len(list.Artifacts))
	}
}
