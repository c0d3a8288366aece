package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// geminiServer reads the mesh's server entry from the conversation
// folder's Gemini workspace settings.
func geminiServer(t *testing.T, task *Task) (map[string]any, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(task.Workdir, geminiSettingsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "a2acap_secret") {
		t.Fatalf("the conversation folder's settings carry the capability: %s", b)
	}
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	servers, _ := settings["mcpServers"].(map[string]any)
	server, _ := servers[mcpServerName].(map[string]any)
	return settings, server
}

func TestGeminiTools_WorkspaceSettingsNameTheCapabilityByVariableAndGoAwayAfterTheRun(t *testing.T) {
	task := toolTask(t)
	env, restore, err := geminiTools(task, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, capabilityEnv+"=a2acap_secret") || !slices.Contains(env, geminiFolderEnv+"="+task.Workdir) {
		t.Fatalf("env = %v, want the capability and the folder", env)
	}
	_, server := geminiServer(t, task)
	headers, _ := server["headers"].(map[string]any)
	// Gemini CLI ends a call of a server after 10 minutes unless told:
	// send_task with wait may wait longer.
	if server["httpUrl"] != "http://127.0.0.1:4321/mcp" || server["trust"] != true || server["timeout"] != float64(1860000) ||
		headers["Authorization"] != "Bearer ${A2A_MESH_TOOLS_CAPABILITY}" || headers["X-A2A-Run-Folder"] != "${A2A_MESH_TOOLS_FOLDER}" {
		t.Fatalf("server entry = %v", server)
	}
	path := filepath.Join(task.Workdir, geminiSettingsFile)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("settings file mode %v", fi.Mode().Perm())
	}
	restore()
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("the .gemini folder the adapter made is still there after the run: %v", err)
	}
}

func TestGeminiTools_TheConversationsOwnSettingsAreKeptAndPutBackAsTheyWere(t *testing.T) {
	task := toolTask(t)
	path := filepath.Join(task.Workdir, geminiSettingsFile)
	own := "{\n\"general\": {\"maxAttempts\": 3},\n\"mcpServers\": {\"notes\": {\"command\": \"notes-mcp\"}}\n}\n"
	writeTestFile(t, path, own)
	_, restore, err := geminiTools(task, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings, server := geminiServer(t, task)
	servers := settings["mcpServers"].(map[string]any)
	if server == nil || servers["notes"] == nil || settings["general"] == nil {
		t.Fatalf("settings during the run = %v, want the folder's own beside the mesh's server", settings)
	}
	restore()
	if b, _ := os.ReadFile(path); string(b) != own {
		t.Fatalf("settings after the run = %q, want them as they were", b)
	}
}

func TestGeminiTools_SettingsTheHostChangedKeepItsChangeAndLoseTheMeshsServer(t *testing.T) {
	task := toolTask(t)
	_, restore, err := geminiTools(task, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := geminiServer(t, task)
	settings["ui"] = map[string]any{"theme": "Dracula"}
	b, _ := json.Marshal(settings)
	path := filepath.Join(task.Workdir, geminiSettingsFile)
	writeTestFile(t, path, string(b))
	restore()
	b, _ = os.ReadFile(path)
	if strings.Contains(string(b), mcpServerName) || !strings.Contains(string(b), "Dracula") {
		t.Fatalf("settings after the run = %s, want the host's change without the mesh's server", b)
	}
}

func TestGeminiTools_SettingsWithCommentsAreRefusedNotRewritten(t *testing.T) {
	task := toolTask(t)
	path := filepath.Join(task.Workdir, geminiSettingsFile)
	own := "{\n  // the user's note\n  \"general\": {}\n}\n"
	writeTestFile(t, path, own)
	if _, _, err := geminiTools(task, nil); err == nil || !strings.Contains(err.Error(), geminiSettingsFile) {
		t.Fatalf("err = %v, want one naming %s", err, geminiSettingsFile)
	}
	if b, _ := os.ReadFile(path); string(b) != own {
		t.Fatalf("settings = %q, want them untouched", b)
	}
}

func TestGeminiTools_NoToolsWriteNothing(t *testing.T) {
	task := toolTask(t)
	task.Request.Tools = nil
	env, restore, err := geminiTools(task, nil)
	if err != nil || env != nil {
		t.Fatalf("env %v, err %v", env, err)
	}
	restore()
	if _, err := os.Stat(filepath.Join(task.Workdir, geminiSettingsFile)); !os.IsNotExist(err) {
		t.Fatalf("settings written without tools: %v", err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
