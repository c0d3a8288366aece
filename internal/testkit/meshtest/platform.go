// Package meshtest holds test fixtures shared by A2A Mesh's test suites: a
// real platform on an embedded NATS server in a temporary data dir, with
// captured logs, and helpers that drive its HTTP API.
package meshtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

// LoopbackListen is a listen address on a free loopback port.
const LoopbackListen = "127.0.0.1:0"

// NewLogger is the logger of a test platform: debug level, to w.
func NewLogger(w io.Writer) zerolog.Logger {
	return zerolog.New(w).Level(zerolog.DebugLevel).With().Timestamp().Logger()
}

// Platform is a running test platform.
type Platform struct {
	*platform.Platform
	DataDir    string
	APIBase    string
	OwnerToken string
	Logs       *Logs
	t          testing.TB
	stopOnce   sync.Once
}

// StartPlatform starts a platform with every service, as `a2a-platform up`
// runs one, stopped when the test ends. Its configuration has short test
// timings (lease 2s, heartbeat timeout 3s, shutdown grace 2s), free
// loopback ports, a fresh data dir, a rate limit only tests of the limit
// meet, and logs in Platform.Logs (unless an option sets the Logger); each
// option then changes it as a flag of `up` would (nil options are skipped).
func StartPlatform(t testing.TB, opts ...func(*platform.Config)) *Platform {
	t.Helper()
	logs := &Logs{}
	cfg := platform.Config{
		DataDir:               t.TempDir(),
		HTTPAddr:              LoopbackListen,
		NATSListen:            LoopbackListen,
		HeartbeatTimeout:      3 * time.Second,
		Lease:                 2 * time.Second,
		ShutdownGrace:         2 * time.Second,
		A2ARateLimitPerMinute: 6000,
		Logger:                NewLogger(logs),
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := platform.Up(ctx, cfg)
	if err != nil {
		t.Fatalf("start platform: %v", err)
	}
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(cfg.DataDir))
	if err != nil {
		p.Stop()
		t.Fatalf("owner token: %v", err)
	}
	tp := &Platform{Platform: p, DataDir: cfg.DataDir, APIBase: "http://" + p.HTTPAddr(), OwnerToken: token, Logs: logs, t: t}
	t.Cleanup(tp.Stop)
	return tp
}

// Stop stops the platform (idempotent), after checking every event it stored
// against the published schemas. A Remote fixture has nothing to stop.
func (p *Platform) Stop() {
	p.stopOnce.Do(func() {
		if p.Platform != nil {
			p.ValidateStoredEvents(p.t)
			p.Platform.Stop()
		}
	})
}

// Owner returns an API client with the owner credential.
func (p *Platform) Owner() *restclient.Client {
	c, err := restclient.New(p.APIBase, restclient.WithOwnerToken(p.OwnerToken))
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// Runtime returns an API client with a runtime credential.
func (p *Platform) Runtime(token string) *restclient.Client {
	c, err := restclient.New(p.APIBase, restclient.WithRuntimeToken(token))
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// Do sends an owner request and decodes the answer, failing the test on error.
func (p *Platform) Do(method, path string, in, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Owner().Do(ctx, method, path, nil, in, out); err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// CreateAgent creates an agent and returns it.
func (p *Platform) CreateAgent(name string) mesh.Agent {
	p.t.Helper()
	var a mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": name}, &a)
	return a
}

// PairingCode issues a pairing code for an agent.
func (p *Platform) PairingCode(agentID string) string {
	p.t.Helper()
	var code struct {
		PairingToken string `json:"pairing_token"`
	}
	p.Do(http.MethodPost, "/agent-accounts/"+agentID+"/pairing-codes", nil, &code)
	return code.PairingToken
}

// Attached is the answer of attach-via-pairing.
type Attached struct {
	AgentID            string `json:"agent_id"`
	RuntimeID          string `json:"runtime_id"`
	RuntimeToken       string `json:"runtime_token"`
	HeartbeatTimeoutMS int64  `json:"heartbeat_timeout_ms"`
	NATS               struct {
		URL         string `json:"url"`
		WSURL       string `json:"ws_url"`
		InboxPrefix string `json:"inbox_prefix"`
	} `json:"nats"`
}

// Attach redeems a fresh pairing code for agentID over HTTP.
func (p *Platform) Attach(agentID string) Attached {
	p.t.Helper()
	var a Attached
	body := map[string]any{"pairing_token": p.PairingCode(agentID), "device_name": "test-device", "local_executor": map[string]any{"type": "custom"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := restclient.New(p.APIBase)
	if _, err := c.Do(ctx, http.MethodPost, "/agent-runtimes/runtime/attach-via-pairing", nil, body, &a); err != nil {
		p.t.Fatalf("attach: %v", err)
	}
	return a
}

// CreateTask creates a task run with input text for agentID.
func (p *Platform) CreateTask(agentID, text string) mesh.TaskRun {
	p.t.Helper()
	var run mesh.TaskRun
	p.Do(http.MethodPost, "/task-runs", map[string]any{"target_agent_id": agentID, "input": map[string]any{"text": text}}, &run)
	return run
}

// GetTask reads a task run.
func (p *Platform) GetTask(id string) mesh.TaskRun {
	p.t.Helper()
	var run mesh.TaskRun
	p.Do(http.MethodGet, "/task-runs/"+id, nil, &run)
	return run
}

// WaitTask polls a task run until cond holds or the deadline passes.
func (p *Platform) WaitTask(id string, timeout time.Duration, cond func(mesh.TaskRun) bool) mesh.TaskRun {
	p.t.Helper()
	var run mesh.TaskRun
	Eventually(p.t, timeout, func() bool {
		run = p.GetTask(id)
		return cond(run)
	}, func() string {
		return fmt.Sprintf("task run %s never matched; last status %s, error %+v", id, run.Status, run.Error)
	})
	return run
}

// WaitOffersWaiting waits until the platform counts n requests for work of
// runtimes waiting for a pending run (a2amesh_offers_waiting on /metrics).
func (p *Platform) WaitOffersWaiting(n int) {
	p.t.Helper()
	want := fmt.Sprintf("a2amesh_offers_waiting{waiter=\"runtime\"} %d\n", n)
	Eventually(p.t, 10*time.Second, func() bool {
		return strings.Contains(string(p.Send(p.t, Request{Method: http.MethodGet, Path: "/metrics"}).Expect(p.t, http.StatusOK).Body), want)
	}, func() string { return "metrics never said " + strings.TrimSpace(want) })
}

// StatusIs matches a run in one of the given statuses.
func StatusIs(statuses ...mesh.Status) func(mesh.TaskRun) bool {
	return func(r mesh.TaskRun) bool {
		for _, s := range statuses {
			if r.Status == s {
				return true
			}
		}
		return false
	}
}

// Eventually polls cond every 10ms until it holds, failing the test with
// describe() after timeout. It is the suite's only way to wait for a state.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s: %s", timeout, describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Logs is a concurrency-safe log sink that tests search for leaked secrets.
type Logs = syncbuf.Buffer

// AssertNoSecrets fails the test if any secret appears in any of the texts.
func AssertNoSecrets(t testing.TB, secrets []string, texts map[string]string) {
	t.Helper()
	// Secrets are named by their place in the list: even a part of one
	// does not belong in the test's output.
	for i, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("secret %d of %d is too short to search for (%d bytes)", i+1, len(secrets), len(s))
		}
		for name, text := range texts {
			if strings.Contains(text, s) {
				t.Errorf("secret %d of %d appears in %s", i+1, len(secrets), name)
			}
		}
	}
}

// ReadFile returns a file's content or "" (for scanning files that may not exist).
func ReadFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// JSON marshals v for assertions and messages.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// NoFileHolds fails t when a file under dir holds secret, and fails it at
// once when no file holds witness (something the scan must see, such as a
// run's working directory): a scan that finds neither reads nothing useful.
// when says at which point of the test the scan ran.
func NoFileHolds(t testing.TB, dir, secret, witness, when string) {
	t.Helper()
	seen := false
	for path, content := range Files(t, dir) {
		if strings.Contains(content, secret) {
			t.Errorf("%s: the secret is stored in %s", when, path)
		}
		seen = seen || strings.Contains(content, witness)
	}
	if !seen {
		t.Fatalf("%s: no file under %s holds %q: the scan reads nothing useful", when, dir, witness)
	}
}

// Files returns the content of every regular file under dir, keyed by path,
// for scans of what the platform wrote to disk. Paths in skip are left out.
func Files(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || slices.Contains(skip, path) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("read files under %s: %v", dir, err)
	}
	return out
}
