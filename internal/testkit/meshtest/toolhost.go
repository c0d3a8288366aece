package meshtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/internal/httpheader"
)

// ToolHost connects to a run's tool server at url as an agent host does,
// with the run's capability and the header naming its folder
// (folderHeader: toolserver.FolderHeader).
func ToolHost(t testing.TB, url, capability, folderHeader, folder string) (*mcp.ClientSession, error) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + capability, folderHeader: folder}
	c := mcp.NewClient(&mcp.Implementation{Name: "test host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: httpheader.Transport{Header: h, Next: http.DefaultTransport}}, MaxRetries: -1}, nil)
}

// CallTool calls a tool as an agent host does and returns its structured
// answer, or the text of its error.
func CallTool(t testing.TB, s *mcp.ClientSession, tool string, args map[string]any) (map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var msg []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg = append(msg, tc.Text)
			}
		}
		return nil, strings.Join(msg, " ")
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return out, ""
}
