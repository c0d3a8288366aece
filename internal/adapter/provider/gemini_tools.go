package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// Gemini CLI reads MCP servers from its settings files only (no flag adds
// one). Its system settings file (GEMINI_CLI_SYSTEM_SETTINGS_PATH) is
// skipped unless the file and its folder are owned by root and writable by
// no one else (packages/core/src/utils/security.ts), which a file the
// adapter writes never is. So the run's tool server goes into the
// workspace settings of the folder the host runs in, the conversation's
// own folder: <conversation dir>/.gemini/settings.json, which Gemini CLI
// merges over the user's settings in a trusted folder (the adapter trusts
// it with GEMINI_CLI_TRUST_WORKSPACE). Gemini CLI expands $VAR and ${VAR}
// in settings values from its environment, so the file names the
// capability (capabilityEnv) and the folder (geminiFolderEnv) by variable:
// it holds no secret, and the conversation folder never does. The entry is
// taken out again when the run ends.
const (
	// geminiSettingsFile is Gemini CLI's workspace settings file, relative
	// to the folder it runs in.
	geminiSettingsFile = ".gemini/settings.json"
	// geminiFolderEnv carries the conversation folder, the folder header's
	// value, so that a $ in its path is not read as a variable.
	geminiFolderEnv = "A2A_MESH_TOOLS_FOLDER"
)

// geminiTools writes the run's tool server into the conversation folder's
// Gemini workspace settings, keeping whatever else the file holds, and
// returns the environment the entry's variables come from and a function
// that takes the entry out again. Without tools it does nothing.
// With hook set (the approval hook's command, see gemini_approval.go) it
// also adds the hook that asks the mesh before each of the host's tool
// calls.
func geminiTools(t *Task, hook []string) (env []string, restore func(), err error) {
	tools := t.Request.Tools
	if tools == nil {
		return nil, func() {}, nil
	}
	path := filepath.Join(t.Workdir, geminiSettingsFile)
	before, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read the conversation folder's %s: %w", geminiSettingsFile, err)
	}
	settings, err := decodeGeminiSettings(before)
	if err != nil {
		return nil, nil, err
	}
	headers := map[string]string{"Authorization": "Bearer ${" + capabilityEnv + "}"}
	if tools.FolderHeader != "" {
		headers[tools.FolderHeader] = "${" + geminiFolderEnv + "}"
	}
	servers, _ := settings["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	// trust: Gemini CLI asks before each call of an untrusted server, which
	// a headless run cannot; the platform, not the host, decides what a
	// delegation may do. timeout (ms): its own 10 minutes would end a
	// send_task that waits longer.
	servers[mcpServerName] = map[string]any{"httpUrl": tools.MCPURL, "headers": headers, "trust": true, "timeout": adapterapi.ToolCallTimeout.Milliseconds()}
	settings["mcpServers"] = servers
	if hook != nil {
		addGeminiApprovalHook(settings, hook, tools.MCPURL)
	}
	written, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("create the conversation folder's %s: %w", filepath.Dir(geminiSettingsFile), err)
	}
	if err := os.WriteFile(path, written, 0o600); err != nil {
		return nil, nil, fmt.Errorf("write the conversation folder's %s: %w", geminiSettingsFile, err)
	}
	env = []string{capabilityEnv + "=" + tools.Capability, geminiFolderEnv + "=" + t.Workdir}
	return env, func() { restoreGeminiSettings(path, before, existed, written) }, nil
}

// decodeGeminiSettings reads a settings file's object; none is an empty
// one. Gemini CLI allows comments in its settings files, which this does
// not: such a file is refused rather than rewritten without them.
func decodeGeminiSettings(b []byte) (map[string]any, error) {
	settings := map[string]any{}
	if len(bytes.TrimSpace(b)) == 0 {
		return settings, nil
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		return nil, fmt.Errorf("the conversation folder's %s is not a plain JSON object, so the mesh's tools cannot be added to it: %w", geminiSettingsFile, err)
	}
	return settings, nil
}

// restoreGeminiSettings takes the mesh's server out of the settings file:
// it puts back the file as it was (or removes it) when nothing else changed
// it during the run, and otherwise removes only the mesh's entry.
func restoreGeminiSettings(path string, before []byte, existed bool, written []byte) {
	now, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if bytes.Equal(now, written) {
		if existed {
			_ = os.WriteFile(path, before, 0o600)
			return
		}
		_ = os.Remove(path)
		_ = os.Remove(filepath.Dir(path)) // fails, as it should, when not empty
		return
	}
	settings, err := decodeGeminiSettings(now)
	if err != nil {
		return
	}
	servers, _ := settings["mcpServers"].(map[string]any)
	_, hadServer := servers[mcpServerName]
	if !hadServer && !removeGeminiApprovalHook(settings) {
		return
	}
	delete(servers, mcpServerName)
	if len(servers) == 0 {
		delete(settings, "mcpServers")
	}
	removeGeminiApprovalHook(settings)
	if b, err := json.MarshalIndent(settings, "", "  "); err == nil {
		_ = os.WriteFile(path, b, 0o600)
	}
}
