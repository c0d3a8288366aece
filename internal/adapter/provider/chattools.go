package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/internal/httpheader"
)

// chatTools are tools a chat completions host is offered in its request
// and the adapter runs when the answer calls them (the server's "client
// tools").
type chatTools interface {
	// functions are the request's "tools": {"type": "function", "function":
	// {"name", "description", "parameters"}}.
	functions() []map[string]any
	// call runs the named tool with its arguments (a JSON object) and
	// returns what the host gets back; a failure is told to the host too,
	// so that its model can go on.
	call(ctx context.Context, name, arguments string) string
}

// chatToolPrefix starts the names under which an HTTP host is offered the
// mesh's tools (mcp__a2a_mesh__send_task), Claude Code's names for them,
// which no host's own tool takes.
const chatToolPrefix = "mcp__" + mcpServerName + "__"

// meshChatTools gives an HTTP host the run's tools (the runtime's MCP
// server of the run) as client tools: the adapter is the MCP client, with
// the capability in its own headers, so the capability never reaches the
// host, its configuration or its other sessions.
type meshChatTools struct {
	session *mcp.ClientSession
	tools   []*mcp.Tool
}

// openMeshChatTools connects to the run's tool server and lists its tools;
// nil, nil when the run has none. close ends the session.
func openMeshChatTools(ctx context.Context, t *Task) (*meshChatTools, error) {
	if t.Request.Tools == nil {
		return nil, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "a2a-adapter", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   t.Request.Tools.MCPURL,
		HTTPClient: &http.Client{Transport: httpheader.Transport{Header: toolHeaders(t), Next: http.DefaultTransport}},
		MaxRetries: -1,
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to the mesh's tools: %w", err)
	}
	m := &meshChatTools{session: session}
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			_ = session.Close()
			return nil, fmt.Errorf("list the mesh's tools: %w", err)
		}
		m.tools = append(m.tools, tool)
	}
	return m, nil
}

func (m *meshChatTools) close() { _ = m.session.Close() }

func (m *meshChatTools) functions() []map[string]any {
	out := make([]map[string]any, 0, len(m.tools))
	for _, tool := range m.tools {
		fn := map[string]any{"name": chatToolPrefix + tool.Name, "description": tool.Description}
		if tool.InputSchema != nil {
			fn["parameters"] = tool.InputSchema
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	return out
}

func (m *meshChatTools) call(ctx context.Context, name, arguments string) string {
	tool, ok := strings.CutPrefix(name, chatToolPrefix)
	if !ok {
		return "error: no tool " + name + " is offered by the adapter"
	}
	var args map[string]any
	if strings.TrimSpace(arguments) != "" {
		if err := json.Unmarshal([]byte(arguments), &args); err != nil {
			return "error: the arguments of " + name + " are not a JSON object: " + err.Error()
		}
	}
	res, err := m.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "error: " + err.Error()
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if res.IsError {
		return "error: " + strings.Join(texts, "\n")
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(texts, "\n")
}
