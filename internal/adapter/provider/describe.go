package provider

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// describeTool turns a host's tool call into a short progress message:
// "running: go test ./...", "editing main.go", "searching: TODO". Hosts name
// their tools differently (Claude Code's Bash and Edit, Gemini CLI's
// run_shell_command and replace, Cursor's shellToolCall), so the message is
// chosen by what the tool's name and arguments look like.
func describeTool(name string, input map[string]any) string {
	lower := strings.ToLower(name)
	if cmd := firstString(input, "command", "cmd"); cmd != "" {
		return "running: " + oneLine(unwrapShell(cmd), 100)
	}
	path := firstString(input, "file_path", "filePath", "absolute_path", "notebook_path", "path", "dir_path", "target_file")
	base := filepath.Base(path)
	switch {
	case path != "" && containsAny(lower, "edit", "replace", "patch", "notebook"):
		return "editing " + base
	case path != "" && containsAny(lower, "write", "create"):
		return "writing " + base
	case path != "" && containsAny(lower, "delete", "remove"):
		return "deleting " + base
	case path != "" && containsAny(lower, "read", "view", "open", "cat"):
		return "reading " + base
	case containsAny(lower, "todo", "plan"):
		return "updating the plan"
	}
	if q := firstString(input, "pattern", "query", "globPattern", "regex"); q != "" {
		if containsAny(lower, "web", "google") {
			return "searching the web: " + oneLine(q, 80)
		}
		return "searching: " + oneLine(q, 80)
	}
	if u := firstString(input, "url"); u != "" {
		return "fetching " + oneLine(u, 100)
	}
	if path != "" && containsAny(lower, "list", "ls", "dir") {
		return "listing " + path
	}
	if d := firstString(input, "description", "prompt"); d != "" && containsAny(lower, "task", "agent", "delegate") {
		return "delegating: " + oneLine(d, 80)
	}
	if path != "" {
		return "using " + name + " on " + base
	}
	return "using " + name
}

// unwrapShell drops the shell wrapper some hosts put around a command
// (Codex reports `bash -lc 'go test ./...'`), leaving the command itself.
func unwrapShell(cmd string) string {
	for _, prefix := range []string{"bash -lc ", "/bin/bash -lc ", "bash -c ", "/bin/bash -c ", "sh -c ", "/bin/sh -c ", "zsh -lc ", "/bin/zsh -lc "} {
		if rest, ok := strings.CutPrefix(cmd, prefix); ok {
			rest = strings.TrimSpace(rest)
			if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
				rest = rest[1 : len(rest)-1]
			}
			return rest
		}
	}
	return cmd
}

// firstString returns the first of keys that input holds as a non-empty
// string, or a list of strings joined by spaces (a command given as argv).
func firstString(input map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := input[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case []any:
			var parts []string
			for _, e := range v {
				if s, ok := e.(string); ok {
					parts = append(parts, s)
				}
			}
			if len(parts) > 0 {
				return strings.Join(parts, " ")
			}
		}
	}
	return ""
}

func containsAny(s string, parts ...string) bool {
	for _, p := range parts {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// objectOf decodes raw JSON as an object, or returns nil.
func objectOf(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &m) == nil {
		return m
	}
	return nil
}
