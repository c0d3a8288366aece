package provider

import "testing"

func TestDescribeTool_ReadsTheToolsOfEveryHost(t *testing.T) {
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"Bash", map[string]any{"command": "go test ./...\n"}, "running: go test ./..."},
		{"run_shell_command", map[string]any{"command": "ls -la"}, "running: ls -la"},
		{"shell", map[string]any{"command": []any{"bash", "-lc", "make"}}, "running: make"},
		{"exec", map[string]any{"command": "bash -lc 'npm test'"}, "running: npm test"},
		{"Edit", map[string]any{"file_path": "/w/main.go"}, "editing main.go"},
		{"replace", map[string]any{"file_path": "/w/a.py"}, "editing a.py"},
		{"Write", map[string]any{"file_path": "/w/out/report.md"}, "writing report.md"},
		{"write", map[string]any{"path": "notes.md"}, "writing notes.md"},
		{"Read", map[string]any{"file_path": "/w/README.md"}, "reading README.md"},
		{"read_file", map[string]any{"absolute_path": "/w/go.mod"}, "reading go.mod"},
		{"Grep", map[string]any{"pattern": "TODO"}, "searching: TODO"},
		{"google_web_search", map[string]any{"query": "go 1.26 release"}, "searching the web: go 1.26 release"},
		{"WebFetch", map[string]any{"url": "https://go.dev"}, "fetching https://go.dev"},
		{"TodoWrite", map[string]any{"todos": []any{}}, "updating the plan"},
		{"Task", map[string]any{"description": "review the diff"}, "delegating: review the diff"},
		{"list_directory", map[string]any{"dir_path": "/w/src"}, "listing /w/src"},
		{"mystery", nil, "using mystery"},
	}
	for _, tt := range tests {
		if got := describeTool(tt.name, tt.input); got != tt.want {
			t.Errorf("describeTool(%s, %v) = %q, want %q", tt.name, tt.input, got, tt.want)
		}
	}
}
