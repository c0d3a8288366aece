package toolserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// host connects to the tool server as an agent host would.
func host(t *testing.T, url, capability, folder string) (*mcp.ClientSession, error) {
	t.Helper()
	return meshtest.ToolHost(t, url, capability, toolserver.FolderHeader, folder)
}

func call(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) (map[string]any, string) {
	t.Helper()
	return meshtest.CallTool(t, s, tool, args)
}

func runtimeClient(t *testing.T, p *meshtest.Platform, att meshtest.Attached) *meshapi.RuntimeClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: p.NATSURL(), Token: att.RuntimeToken, InboxPrefix: att.NATS.InboxPrefix, Name: "test runtime"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.NC.Close)
	return meshapi.NewClient(conn.NC).Runtime(att.AgentID, att.RuntimeID)
}

func TestTools_HostDelegatesWaitsForTheAnswerAndLosesTheCapabilityWithTheRun(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	a, b, c := p.CreateAgent("planner"), p.CreateAgent("reviewer"), p.CreateAgent("stranger")
	p.Do(http.MethodPatch, "/agent-accounts/"+a.ID, map[string]any{"delegation": map[string]any{"agents": []string{b.ID}}}, nil)
	attA, attB := p.OnlineRuntime(t, a.ID), p.OnlineRuntime(t, b.ID)
	srv, err := toolserver.Start(toolserver.Config{Platform: runtimeClient(t, p, attA), IdleClose: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	parent := p.CreateTask(a.ID, "plan")
	p.PullRun(t, a.ID, attA.RuntimeToken)
	capability, closeRun, err := srv.Open(parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	folder := t.TempDir()
	if err := os.WriteFile(filepath.Join(folder, "notes.md"), []byte("# notes"), 0o600); err != nil {
		t.Fatal(err)
	}

	if _, err := host(t, srv.URL(), "a2acap_wrong", folder); err == nil {
		t.Fatal("a wrong capability was admitted")
	}
	s, err := host(t, srv.URL(), capability, folder)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	out, msg := call(t, s, "list_agents", map[string]any{})
	agents, _ := out["agents"].([]any)
	if msg != "" || len(agents) != 1 || agents[0].(map[string]any)["name"] != "reviewer" {
		t.Fatalf("list_agents = %v %s, want the reviewer only", out, msg)
	}
	if _, msg := call(t, s, "send_task", map[string]any{"agent_id": c.ID, "text": "hi"}); !strings.Contains(msg, "DELEGATION_NOT_ALLOWED") || !strings.Contains(msg, "stranger") {
		t.Fatalf("send_task to an agent not allowed: %q", msg)
	}
	if _, msg := call(t, s, "send_task", map[string]any{"agent_id": b.ID, "text": "hi", "files": []string{"../secret"}}); !strings.Contains(msg, "outside the working folder") {
		t.Fatalf("send_task with a file outside the folder: %q", msg)
	}

	// The host waits for the answer while the reviewer works.
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "send_task", Arguments: map[string]any{"agent_id": b.ID, "text": "review the notes", "files": []string{"notes.md"}, "wait": true}})
		answered <- answer{res, err}
	}()
	var child mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		r := p.Pull(t, b.ID, attB.RuntimeToken, "")
		if r.Status != http.StatusOK {
			return false
		}
		child = r.Run(t)
		return true
	}, func() string { return "the delegated task never reached the reviewer" })
	p.Report(t, child.ID, "complete", attB.RuntimeToken, map[string]any{"output": map[string]any{"text": "approved"}}).Expect(t, http.StatusOK)
	got := <-answered
	if got.err != nil || got.res.IsError {
		t.Fatalf("send_task with wait: %v %v", got.err, got.res)
	}
	b2, _ := json.Marshal(got.res.StructuredContent)
	out = nil
	_ = json.Unmarshal(b2, &out)
	if out["status"] != "completed" || out["text"] != "approved" {
		t.Fatalf("send_task with wait = %v", out)
	}
	if child.ParentTaskRunID != parent.ID || !strings.Contains(string(child.Input), "notes.md") {
		t.Fatalf("delegated run: parent %s input %s", child.ParentTaskRunID, child.Input)
	}
	out, msg = call(t, s, "get_task", map[string]any{"task_id": child.ID})
	if msg != "" || out["status"] != "completed" {
		t.Fatalf("get_task = %v %q", out, msg)
	}

	// A session is bound to the capability that opened it: another run's
	// capability does not work with its id.
	other, closeOther, err := srv.Open("another-run")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+other)
	req.Header.Set("Mcp-Session-Id", s.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a session used with another run's capability: %d, want 403", resp.StatusCode)
	}

	closeRun()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "list_agents", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the capability still worked after the run ended")
	}
	if _, err := host(t, srv.URL(), capability, folder); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("a new session with the ended run's capability: %v, want 401", err)
	}

	// With no run left for IdleClose, nothing listens.
	url := srv.URL()
	closeOther()
	meshtest.Eventually(t, 10*time.Second, func() bool { return srv.URL() == "" },
		func() string { return "the tool server still has an address with no run open: " + srv.URL() })
	if resp, err := http.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("the tool server answered %d with no run open", resp.StatusCode)
	}
}
