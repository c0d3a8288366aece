package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// The mesh's tools (the runtime's MCP server of the run, see
// adapterapi.Tools) reach each host in the host's own way of adding MCP
// servers. The capability is a secret: it goes into a file of the run
// directory (0600, deleted with it) or the host's environment, never into
// an argument, a log or the task JSON.
const (
	// mcpServerName is the server's name in the hosts' configurations.
	mcpServerName = "a2a_mesh"
	// capabilityEnv carries the capability to hosts that read a bearer
	// token from their environment (Codex, Gemini CLI).
	capabilityEnv = "A2A_MESH_TOOLS_CAPABILITY"
	mcpConfigName = "mcp.json"
	// claudeMeshTools is Claude Code's permission rule for every tool of
	// the mesh's server (its tools are named mcp__<server>__<tool>).
	claudeMeshTools = "mcp__" + mcpServerName
	// claudeApproveTool is the tool server's permission prompt tool
	// (toolserver.ApproveTool) as Claude Code names it.
	claudeApproveTool = claudeMeshTools + "__approve"
)

// toolHeaders are the headers the host sends the tool server.
func toolHeaders(t *Task) map[string]string {
	tools := t.Request.Tools
	h := map[string]string{"Authorization": "Bearer " + tools.Capability}
	if tools.FolderHeader != "" {
		h[tools.FolderHeader] = t.Workdir
	}
	return h
}

// writeMCPConfig writes {"mcpServers": {...}} with the run's tool server
// into the run directory and returns its path; server is the host's shape
// of one server entry.
func writeMCPConfig(t *Task, server map[string]any) (string, error) {
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{mcpServerName: server}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(t.RunDir, mcpConfigName)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("write the tool configuration: %w", err)
	}
	return path, nil
}

// claudeMCPArgs gives Claude Code the tools: --mcp-config with an http
// server and its headers.
func claudeMCPArgs(t *Task) ([]string, error) {
	if t.Request.Tools == nil {
		return nil, nil
	}
	path, err := writeMCPConfig(t, map[string]any{"type": "http", "url": t.Request.Tools.MCPURL, "headers": toolHeaders(t)})
	if err != nil {
		return nil, err
	}
	return []string{"--mcp-config", path}, nil
}

// commandMCPEnv gives a command the tools: A2A_MCP_CONFIG names a file of
// the run directory in Claude Code's --mcp-config shape ({"mcpServers":
// {"a2a_mesh": {"type": "http", "url", "headers"}}}), which the command
// reads or hands to an MCP client of its own.
func commandMCPEnv(t *Task) ([]string, error) {
	if t.Request.Tools == nil {
		return nil, nil
	}
	path, err := writeMCPConfig(t, map[string]any{"type": "http", "url": t.Request.Tools.MCPURL, "headers": toolHeaders(t)})
	if err != nil {
		return nil, err
	}
	return []string{"A2A_MCP_CONFIG=" + path}, nil
}

// codexMCPArgs gives Codex the tools: -c overrides of mcp_servers.<name>
// (url, the folder header, the capability read from the environment, its
// tools approved, and how long Codex waits for the server's handshake and
// for a call: its own 10 s and 60 s are too short).
func codexMCPArgs(t *Task) (args, env []string) {
	tools := t.Request.Tools
	if tools == nil {
		return nil, nil
	}
	prefix := "mcp_servers." + mcpServerName + "."
	args = []string{
		"-c", prefix + "url=" + tomlString(tools.MCPURL),
		"-c", prefix + "bearer_token_env_var=" + tomlString(capabilityEnv),
		// codex exec cannot ask, and the platform, not the host, decides
		// what a delegation may do.
		"-c", prefix + "default_tools_approval_mode=" + tomlString("approve"),
		"-c", prefix + "startup_timeout_sec=" + strconv.Itoa(int(adapterapi.ToolStartupTimeout.Seconds())),
		"-c", prefix + "tool_timeout_sec=" + strconv.Itoa(int(adapterapi.ToolCallTimeout.Seconds())),
	}
	if tools.FolderHeader != "" {
		args = append(args, "-c", prefix+"http_headers={"+tomlString(tools.FolderHeader)+"="+tomlString(t.Workdir)+"}")
	}
	return args, []string{capabilityEnv + "=" + tools.Capability}
}

// tomlString quotes s as a TOML basic string (JSON's escapes are valid TOML).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
