package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// A body of a door: made as it is read (prefix, n filler bytes, suffix),
// so the test, which shares the process with the platform, holds none of
// it and the heap measures the platform alone.
type filledBody struct {
	prefix, suffix []byte
	filler         byte
	n, off         int
}

func newFilledBody(prefix string, filler byte, n int, suffix string) *filledBody {
	return &filledBody{prefix: []byte(prefix), suffix: []byte(suffix), filler: filler, n: n}
}

func (b *filledBody) Len() int { return len(b.prefix) + b.n + len(b.suffix) }

func (b *filledBody) Read(p []byte) (int, error) {
	if b.off >= b.Len() {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && b.off < b.Len() {
		switch {
		case b.off < len(b.prefix):
			c := copy(p[k:], b.prefix[b.off:])
			k, b.off = k+c, b.off+c
		case b.off < len(b.prefix)+b.n:
			c := min(len(p)-k, len(b.prefix)+b.n-b.off)
			for i := range c {
				p[k+i] = b.filler
			}
			k, b.off = k+c, b.off+c
		default:
			c := copy(p[k:], b.suffix[b.off-len(b.prefix)-b.n:])
			k, b.off = k+c, b.off+c
		}
	}
	return k, nil
}

// bodyFixture is a fresh platform with a public agent, an API key for it,
// and a runtime holding a run of it (for uploads).
type bodyFixture struct {
	p            *meshtest.Platform
	agent        mesh.Agent
	key          string
	runtimeToken string
	runID        string
}

func startBodyFixture(t testing.TB, opts ...func(*platform.Config)) *bodyFixture {
	t.Helper()
	p := meshtest.StartPlatform(t, append([]func(*platform.Config){func(c *platform.Config) {
		c.MaxArtifactBytes = mesh.MaxBodyBytes
		c.A2ABlockingWait = time.Second
		c.A2AOfflineWait = 100 * time.Millisecond
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	}}, opts...)...)
	agent := p.CreateAgent("public")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"public": true}, nil)
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+agent.ID+"/api-keys", map[string]any{"name": "big"}, &key)
	meshtest.Eventually(t, 10*time.Second, func() bool {
		r := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/" + agent.ID + "/agent-card"})
		return r.Status == http.StatusOK && takesAnonymousCallers(r.Body)
	}, func() string { return "the public agent's card still asks for a credential" })
	writer := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, writer.ID, "big output")
	return &bodyFixture{p: p, agent: agent, key: key.APIKey, runtimeToken: rt.RuntimeToken, runID: run.ID}
}

// takesAnonymousCallers reports whether an agent card's security
// requirements (0.3's security) include the empty one, which lets a caller
// without a credential in.
func takesAnonymousCallers(card []byte) bool {
	var c struct {
		Security []map[string]any `json:"security"`
	}
	if json.Unmarshal(card, &c) != nil {
		return false
	}
	for _, r := range c.Security {
		if len(r) == 0 {
			return true
		}
	}
	return false
}

// door is one way a body enters the platform.
type door struct {
	name string
	// body makes the i-th request's body, of about size bytes.
	body func(f *bodyFixture, i, size int) (path string, b *filledBody)
	// credential is the header of a caller with a credential.
	credential func(f *bodyFixture) http.Header
	// keyedSize and anonymousSize are the largest bodies the door takes.
	keyedSize, anonymousSize int
}

func keyHeader(f *bodyFixture) http.Header { return http.Header{"X-Api-Key": {f.key}} }
func runtimeHeader(f *bodyFixture) http.Header {
	return http.Header{"X-Runtime-Token": {f.runtimeToken}}
}

var doors = []door{
	{
		name: "A2A text part",
		body: func(f *bodyFixture, i, size int) (string, *filledBody) {
			prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"message/send","params":{"message":{"kind":"message","messageId":"%s","role":"user","parts":[{"kind":"text","text":"`, i, mesh.NewID())
			suffix := `"}]},"configuration":{"blocking":false}}}`
			return "/a2a/" + f.agent.ID, newFilledBody(prefix, 'x', size-len(prefix)-len(suffix), suffix)
		},
		credential: keyHeader, keyedSize: mesh.MaxBodyBytes - 1024, anonymousSize: mesh.MaxAnonymousBodyBytes - 1024,
	},
	{
		name: "A2A inline file part",
		body: func(f *bodyFixture, i, size int) (string, *filledBody) {
			prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"message/send","params":{"message":{"kind":"message","messageId":"%s","role":"user","parts":[{"kind":"file","file":{"name":"f.bin","mimeType":"application/octet-stream","bytes":"`, i, mesh.NewID())
			suffix := `"}}]},"configuration":{"blocking":false}}}`
			n := (size - len(prefix) - len(suffix)) / 4 * 4
			return "/a2a/" + f.agent.ID, newFilledBody(prefix, 'A', n, suffix)
		},
		credential: keyHeader, keyedSize: mesh.MaxFileBytes / 3 * 4, anonymousSize: mesh.MaxAnonymousBodyBytes - 1024,
	},
	{
		name: "envelope POST /a2a",
		body: func(f *bodyFixture, i, size int) (string, *filledBody) {
			prefix := fmt.Sprintf(`{"a2a":{"protocol":"a2a","version":"1.0","id":"%s","timestamp":"2025-11-18T10:00:00.000Z","type":"request"},"context":{"from":"source","to":"%s"},"payload":{"method":"execute-agent","params":{"agentId":"%s","input":"`, mesh.NewID(), f.agent.ID, f.agent.ID)
			suffix := `"}}}`
			return "/a2a", newFilledBody(prefix, 'x', size-len(prefix)-len(suffix), suffix)
		},
		credential: keyHeader, keyedSize: mesh.MaxInputBytes - 1024, anonymousSize: mesh.MaxAnonymousBodyBytes - 1024,
	},
	{
		name: "artifact upload",
		body: func(f *bodyFixture, i, size int) (string, *filledBody) {
			prefix := `{"filename":"big.bin","mime_type":"application/octet-stream","content_base64":"`
			suffix := `"}`
			n := (size - len(prefix) - len(suffix)) / 4 * 4
			return "/task-runs/" + f.runID + "/artifacts", newFilledBody(prefix, 'A', n, suffix)
		},
		credential: runtimeHeader, keyedSize: mesh.MaxBodyBytes, anonymousSize: mesh.MaxAnonymousBodyBytes - 1024,
	},
}

// answer is what a request got.
type answer struct {
	status     int
	retryAfter string
	body       []byte
}

// post sends one body; the answer's body is kept up to 4 KiB.
func post(t testing.TB, url string, header http.Header, body io.Reader, length int) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(length)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	var kept bytes.Buffer
	_, _ = io.Copy(&kept, io.LimitReader(resp.Body, 4<<10))
	_, _ = io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: kept.Bytes()}
}

// heapBytes is the heap's size: live objects and those not yet freed.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapGrowth runs f and returns how far the heap grew above its size
// before, at the highest of the samples taken while f ran.
func heapGrowth(f func()) uint64 {
	runtime.GC()
	runtime.GC()
	base := heapBytes()
	stop, peak := make(chan struct{}), make(chan uint64)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		high := base
		for {
			select {
			case <-stop:
				peak <- high
				return
			case <-tick.C:
				high = max(high, heapBytes())
			}
		}
	}()
	f()
	close(stop)
	return <-peak - base
}

// TestBodies_MemoryIsBoundedByDesign: at every door, after one body, a
// burst of maximum-size bodies, four times as many as a process takes at once, from callers
// with a credential and without one, grows the heap of the whole platform
// (gateway, services and NATS server in one process, as `up` runs them)
// by at most a small multiple of the bodies in flight by design; the bodies
// beyond them wait their turn or are refused with 429 and Retry-After,
// never with an internal error.
func TestBodies_MemoryIsBoundedByDesign(t *testing.T) {
	// Heap multiple of the bytes in flight: a body is read once, decoded
	// once, and its content stored once, with the encoders' buffers.
	const multiple = 12
	// The platform's own work meanwhile: bodies that become tasks are
	// stored, watched and announced by the services after the gateway has
	// answered and given its turn back (the task queue, the delegation
	// service, the watchers of run records, JetStream's caches), which the
	// gateway's turns do not bound.
	const slack = 64 << 20
	for _, d := range doors {
		for _, anonymous := range []bool{false, true} {
			who, size, slots := "with a credential", d.keyedSize, mesh.MaxLargeBodies
			if anonymous {
				who, size, slots = "anonymous", d.anonymousSize, mesh.MaxAnonymousLargeBodies
			}
			t.Run(d.name+" "+who, func(t *testing.T) {
				f := startBodyFixture(t)
				var header http.Header
				if !anonymous {
					header = d.credential(f)
				}
				// One body first: JetStream's block caches and the
				// buffer pools of the platform are sized once, whatever
				// the bodies that follow.
				path, b := d.body(f, -1, size)
				post(t, f.p.APIBase+path, header, b, b.Len())
				n := 4 * slots
				answers := make([]answer, n)
				growth := heapGrowth(func() {
					var wg sync.WaitGroup
					for i := range n {
						wg.Add(1)
						go func() {
							defer wg.Done()
							path, b := d.body(f, i, size)
							answers[i] = post(t, f.p.APIBase+path, header, b, b.Len())
						}()
					}
					wg.Wait()
				})
				inFlight := uint64(slots * size)
				t.Logf("%d bodies of %d KiB: the heap grew %.1f MiB, %.1f times the %d KiB in flight by design",
					n, size>>10, float64(growth)/(1<<20), float64(growth)/float64(inFlight), inFlight>>10)
				for i, a := range answers {
					switch {
					case a.status == http.StatusTooManyRequests:
						if a.retryAfter == "" {
							t.Errorf("body %d: %d without Retry-After", i, a.status)
						}
					case bytes.Contains(a.body, []byte("busy or restarting; retry")):
						// The bus timed out under load (the race detector
						// on 2 cores): a refusal to retry, not a failure.
					case a.status == http.StatusInternalServerError || bytes.Contains(a.body, []byte("-32603")):
						t.Errorf("body %d: an internal error: %d %s; the platform's errors:\n%s", i, a.status, a.body, errorLines(f.p.Logs.String()))
					}
				}
				if growth > multiple*inFlight+slack {
					t.Errorf("the heap grew %d bytes, more than %d times the %d bytes in flight by design (and %d more)", growth, multiple, inFlight, slack)
				}
			})
		}
	}
}

// errorLines are the lines of a platform's log at level error.
func errorLines(logs string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"level":"error"`) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
