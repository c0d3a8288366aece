// Command delegatinghost is an agent host for tests: run by the adapter's
// command provider, it connects to the run's tools as an MCP client (the
// configuration named by A2A_MCP_CONFIG), lists the agents it may delegate
// to and sends one a task, waiting for the answer.
//
// Its task text is "<agent id> <text>". It prints the names of the agents
// list_agents returned, then "answer: <text>" or "refused: <message>".
// When DELEGATINGHOST_KEEP names a directory, it writes the tool server's
// address and authorization there (file <run id>.json), so the test can
// try them after the run ended.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/internal/httpheader"
)

type server struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "delegatinghost:", err)
		os.Exit(1)
	}
}

func run() error {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	agentID, text, _ := strings.Cut(strings.TrimSpace(string(in)), " ")
	srv, err := config(os.Getenv("A2A_MCP_CONFIG"))
	if err != nil {
		return err
	}
	if dir := os.Getenv("DELEGATINGHOST_KEEP"); dir != "" {
		b, _ := json.Marshal(map[string]string{"url": srv.URL, "authorization": srv.Headers["Authorization"]})
		if err := os.WriteFile(filepath.Join(dir, os.Getenv("A2A_TASK_RUN_ID")+".json"), b, 0o600); err != nil {
			return err
		}
	}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "delegatinghost", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: httpheader.Transport{Header: srv.Headers, Next: http.DefaultTransport}}, MaxRetries: -1}
	s, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fmt.Errorf("connect to the tools: %w", err)
	}
	defer s.Close()

	var list struct {
		Agents []struct {
			Name string `json:"name"`
		} `json:"agents"`
	}
	if _, err := callTool(ctx, s, "list_agents", map[string]any{}, &list); err != nil {
		return err
	}
	var names []string
	for _, a := range list.Agents {
		names = append(names, a.Name)
	}
	fmt.Println("agents:", strings.Join(names, ","))
	fmt.Fprintln(os.Stderr, "progress: delegating to", agentID)

	var task struct {
		Status string `json:"status"`
		Text   string `json:"text"`
	}
	refused, err := callTool(ctx, s, "send_task", map[string]any{"agent_id": agentID, "text": text, "wait": true}, &task)
	switch {
	case err != nil:
		return err
	case refused != "":
		fmt.Println("refused:", refused)
	default:
		fmt.Printf("answer (%s): %s\n", task.Status, task.Text)
	}
	return nil
}

func config(path string) (server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return server{}, fmt.Errorf("the tool configuration: %w", err)
	}
	var cfg struct {
		MCPServers map[string]server `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return server{}, err
	}
	for _, s := range cfg.MCPServers {
		return s, nil
	}
	return server{}, fmt.Errorf("no MCP server in %s", path)
}

// callTool calls a tool and decodes its structured answer into out; a tool
// error comes back as its message.
func callTool(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any, out any) (string, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var msg []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg = append(msg, tc.Text)
			}
		}
		return strings.Join(msg, " "), nil
	}
	b, _ := json.Marshal(res.StructuredContent)
	return "", json.Unmarshal(b, out)
}
