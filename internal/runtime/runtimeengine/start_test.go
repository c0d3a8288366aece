package runtimeengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestOptionsValidate_NamesEachBadField: options Start cannot work with
// are refused before anything starts, with an error naming the field.
func TestOptionsValidate_NamesEachBadField(t *testing.T) {
	api, err := restclient.New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	ac, err := adapterclient.New("http://127.0.0.1:1/run-task")
	if err != nil {
		t.Fatal(err)
	}
	good := func() runtimeengine.Options {
		return runtimeengine.Options{
			Profile: profile.Profile{AgentID: "agt_1", RuntimeID: "rt_1"}, API: api, Adapter: ac,
		}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	for _, c := range []struct {
		field  string
		change func(*runtimeengine.Options)
	}{
		{"Profile.AgentID", func(o *runtimeengine.Options) { o.Profile.AgentID = "" }},
		{"Profile.RuntimeID", func(o *runtimeengine.Options) { o.Profile.RuntimeID = "" }},
		{"Mode", func(o *runtimeengine.Options) { o.Mode = "carrier-pigeon" }},
		{"API", func(o *runtimeengine.Options) { o.API = nil }},
		{"Adapter", func(o *runtimeengine.Options) { o.Adapter = nil }},
		{"Supervise.Binary", func(o *runtimeengine.Options) {
			o.Supervise = &runtimeengine.AdapterProcessConfig{Provider: "echo", Listen: "127.0.0.1:8787"}
		}},
		{"Supervise.Provider", func(o *runtimeengine.Options) {
			o.Supervise = &runtimeengine.AdapterProcessConfig{Binary: "a2a-adapter", Listen: "127.0.0.1:8787"}
		}},
		{"Supervise.Listen", func(o *runtimeengine.Options) {
			o.Supervise = &runtimeengine.AdapterProcessConfig{Binary: "a2a-adapter", Provider: "echo"}
		}},
		{"Concurrency", func(o *runtimeengine.Options) { o.Concurrency = -1 }},
		{"TaskTimeout", func(o *runtimeengine.Options) { o.TaskTimeout = -time.Second }},
		{"DrainGrace", func(o *runtimeengine.Options) { o.DrainGrace = -time.Second }},
		{"HeartbeatInterval", func(o *runtimeengine.Options) { o.HeartbeatInterval = -time.Second }},
		{"RenewInterval", func(o *runtimeengine.Options) { o.RenewInterval = -time.Second }},
	} {
		t.Run(c.field, func(t *testing.T) {
			o := good()
			c.change(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), c.field+" ") {
				t.Fatalf("Validate() = %v, want an error naming %s", err, c.field)
			}
			rt, startErr := runtimeengine.Start(context.Background(), o)
			if rt != nil || startErr == nil || startErr.Error() != err.Error() {
				t.Fatalf("Start = %v, %v; want the validation error %v", rt, startErr, err)
			}
			// A program finds the field in Start's error, to name its flag.
			if refused := runtimeengine.OptionErrors(startErr); len(refused) != 1 || refused[0].Field != c.field {
				t.Fatalf("OptionErrors(%v) = %v, want the one field %s", startErr, refused, c.field)
			}
		})
	}
	// Waiting for the adapter for ever is a negative AdapterWait.
	o := good()
	o.AdapterWait = -time.Second
	if err := o.Validate(); err != nil {
		t.Fatalf("AdapterWait -1s refused: %v", err)
	}
}

// delegatingHost is a host that uses the tools of its run: it lists the
// agents it may delegate to, through the run's tool server, and answers
// with their ids.
type delegatingHost struct{}

func (delegatingHost) Name() string { return "delegating-host" }

func (delegatingHost) Run(ctx context.Context, t *provider.Task, _ func(provider.Progress)) (*provider.Result, error) {
	tools := t.Request.Tools
	if tools == nil {
		return nil, errors.New("the run came without tools")
	}
	h := http.Header{"Authorization": {"Bearer " + tools.Capability}, tools.FolderHeader: {t.Workdir}}
	c := mcp.NewClient(&mcp.Implementation{Name: "delegating host", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tools.MCPURL, HTTPClient: &http.Client{Transport: headers{h}}, MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to the run's tools: %w", err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "list_agents", Arguments: map[string]any{}})
	if err != nil {
		return nil, fmt.Errorf("list_agents: %w", err)
	}
	if res.IsError {
		return nil, errors.New("list_agents answered an error")
	}
	var out struct {
		Agents []struct {
			AgentID string `json:"agent_id"`
		} `json:"agents"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	var ids []string
	for _, a := range out.Agents {
		ids = append(ids, a.AgentID)
	}
	return &provider.Result{Output: map[string]any{"text": strings.Join(ids, ",")}}, nil
}

type headers struct{ h http.Header }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestStart_RunsHostGetsItsToolsAndTheLedgerIsWritten: the runtime Start
// assembles, as a2a-runtime start runs it, serves each run's delegation
// tools to the run's host and writes what it did into its ledger, over
// either transport.
func TestStart_RunsHostGetsItsToolsAndTheLedgerIsWritten(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	reviewer := p.CreateAgent("reviewer")
	for _, mode := range []string{runtimeengine.ModeNATS, runtimeengine.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			planner := p.CreateAgent("planner over " + mode)
			p.Do(http.MethodPatch, "/agent-accounts/"+planner.ID, map[string]any{"delegation": map[string]any{"agents": []string{reviewer.ID}}}, nil)
			prof, err := runtimeengine.Pair(ctx, runtimeengine.PairRequest{
				Code: p.PairingCode(planner.ID), APIBase: p.APIBase, DeviceName: "test-device",
				LocalExecutor: profile.LocalExecutor{Type: "custom"},
			})
			if err != nil {
				t.Fatalf("pair: %v", err)
			}
			token := secret.NewToken("a2aadp_")
			srv, err := adapter.New(adapter.Config{Provider: delegatingHost{}, Workdir: t.TempDir(), AuthToken: token, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := srv.Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = srv.Serve(ln) }()
			defer func() { _ = srv.Shutdown(context.Background()) }()
			ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
			if err != nil {
				t.Fatal(err)
			}
			ac.SetAuthToken(token)
			api, err := restclient.New(prof.APIBase, restclient.WithRuntimeToken(prof.RuntimeToken))
			if err != nil {
				t.Fatal(err)
			}
			var recorded []profile.Connection
			stopped := make(chan struct{})
			rt, err := runtimeengine.Start(ctx, runtimeengine.Options{
				Profile: prof, Mode: mode, API: api, Adapter: ac, LedgerDir: t.TempDir(), StatusListen: "127.0.0.1:0",
				HeartbeatInterval: time.Second, RenewInterval: time.Second, DrainGrace: time.Second,
				RecordConnection: func(c profile.Connection) error { recorded = append(recorded, c); return nil },
				Stopped:          func() { close(stopped) },
				Logger:           zerolog.Nop(),
			})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if rt.Tools() == nil || rt.Ledger() == nil {
				t.Fatalf("Start gave tools %v and ledger %v, want both", rt.Tools(), rt.Ledger())
			}
			if len(recorded) != 1 || recorded[0].Transport != mode {
				t.Fatalf("connections recorded at start: %+v, want one over %s", recorded, mode)
			}
			var health struct {
				AgentID      string `json:"agent_id"`
				Transport    string `json:"transport"`
				AdapterReady bool   `json:"adapter_ready"`
			}
			res, err := http.Get("http://" + rt.StatusAddr() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(res.Body).Decode(&health)
			_ = res.Body.Close()
			if health.AgentID != planner.ID || health.Transport != mode || !health.AdapterReady {
				t.Fatalf("/healthz = %+v, want the planner over %s with its adapter ready", health, mode)
			}
			runCtx, stopRun := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- rt.Run(runCtx) }()

			run := p.CreateTask(planner.ID, "who may I delegate to?")
			got := p.WaitTask(run.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
			var out struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(got.Output, &out)
			if got.Status != mesh.StatusCompleted || out.Text != reviewer.ID {
				t.Fatalf("the run ended %s with output %s (error %+v); want completed with the reviewer %s its host listed through its tools", got.Status, got.Output, got.Error, reviewer.ID)
			}

			stopRun()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}
			led := rt.Ledger()
			entries, err := led.Entries()
			if err != nil {
				t.Fatal(err)
			}
			rt.Close()
			select {
			case <-stopped:
			default:
				t.Fatal("Close did not call Stopped")
			}
			var events []ledger.Event
			for _, e := range entries {
				if e.TaskRunID == run.ID {
					events = append(events, e.Event)
				}
			}
			for _, want := range []ledger.Event{ledger.EventTaskPulled, ledger.EventTaskStarted, ledger.EventTaskCompleted} {
				if !containsEvent(events, want) {
					t.Fatalf("the ledger has %v for the run, want %s among them", events, want)
				}
			}
		})
	}
}

func containsEvent(events []ledger.Event, e ledger.Event) bool {
	for _, got := range events {
		if got == e {
			return true
		}
	}
	return false
}
