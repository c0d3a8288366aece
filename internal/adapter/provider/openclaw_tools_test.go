package provider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// toolServer is an MCP server on loopback with the mesh's send_task, as
// the runtime serves a run's tools: it answers only requests with the
// run's capability and folder.
func toolServer(t *testing.T, capability, folder string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	type sendTask struct {
		AgentID string `json:"agent_id"`
		Text    string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "send_task", Description: "Send another agent a task."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sendTask) (*mcp.CallToolResult, map[string]any, error) {
			return nil, map[string]any{"status": "completed", "text": in.AgentID + " did " + in.Text}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+capability || r.Header.Get("X-A2A-Run-Folder") != folder {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOpenClaw_TheRunsToolsAreClientToolsTheAdapterRuns: a run with the
// mesh's tools offers them to the gateway as client tools
// (mcp__a2a_mesh__<tool>); when the agent calls one (a streamed call, its
// arguments in pieces), the adapter calls the run's tool server with the
// capability and sends the result back with the conversation, and the
// answer is every round's text. The capability never reaches the gateway.
func TestOpenClaw_TheRunsToolsAreClientToolsTheAdapterRuns(t *testing.T) {
	const capability = "a2acap_openclaw_secret_42"
	var mu sync.Mutex
	var bodies []string
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		round := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string, finish string) {
			f := "null"
			if finish != "" {
				f = `"` + finish + `"`
			}
			io.WriteString(w, `data: {"object":"chat.completion.chunk","model":"openclaw","choices":[{"index":0,"delta":`+delta+`,"finish_reason":`+f+`}]}`+"\n\n")
		}
		if round == 1 {
			chunk(`{"role":"assistant","content":"Asking the benchmarker."}`, "")
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"mcp__a2a_mesh__send_task","arguments":"{\"agent_id\":\"bench\","}}]}`, "")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"text\":\"run it\"}"}}]}`, "")
			chunk(`{}`, "tool_calls")
		} else {
			chunk(`{"role":"assistant","content":"The benchmarker is done."}`, "")
			chunk(`{}`, "stop")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(gateway.Close)
	o, err := NewOpenClaw(OpenClawConfig{GatewayURL: gateway.URL, Token: testGatewayToken})
	if err != nil {
		t.Fatal(err)
	}
	task := hostTask(t, t.TempDir(), "conv", "Get the benchmark run.")
	task.Request.Tools = &adapterapi.Tools{MCPURL: toolServer(t, capability, task.Workdir), Capability: capability, FolderHeader: "X-A2A-Run-Folder"}

	res, err, log := runHost(t, o, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "Asking the benchmarker.\n\nThe benchmarker is done." {
		t.Errorf("output.text = %q", got)
	}
	log.wantMessages(t, "using mcp__a2a_mesh__send_task")
	if len(bodies) != 2 {
		t.Fatalf("%d requests to the gateway, want 2", len(bodies))
	}
	var first, second struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal([]byte(bodies[0]), &first)
	_ = json.Unmarshal([]byte(bodies[1]), &second)
	if len(first.Tools) != 1 || first.Tools[0].Function.Name != "mcp__a2a_mesh__send_task" || len(second.Tools) != 1 {
		t.Errorf("tools offered: %s", bodies[0])
	}
	if n := len(second.Messages); n != 4 || second.Messages[2]["role"] != "assistant" || second.Messages[3]["role"] != "tool" ||
		second.Messages[3]["tool_call_id"] != "call_1" || second.Messages[3]["content"] != `{"status":"completed","text":"bench did run it"}` {
		t.Errorf("follow-up messages: %s", meshJSON(second.Messages))
	}
	for i, b := range bodies {
		if strings.Contains(b, capability) {
			t.Errorf("request %d to the gateway carries the capability", i+1)
		}
	}
}

func meshJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
