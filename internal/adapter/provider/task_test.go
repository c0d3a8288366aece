package provider

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

func TestConversationDirName_IsASafeOneToOnePathElement(t *testing.T) {
	ids := []string{
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "conv-1", "conv_1", "a.b",
		"", "..", ".", "../etc", "a/b", `a\b`, "a..b", ".hidden", "_c",
		"Conv-1", "CONV-1", "con v", "x\x00y", strings.Repeat("a", 101),
	}
	seen := map[string]string{}
	for _, id := range ids {
		name := conversationDirName(id, "run-1")
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
			t.Errorf("conversation %q: unsafe directory name %q", id, name)
		}
		for _, c := range name {
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789._-", c) {
				t.Errorf("conversation %q: directory name %q has %q", id, name, c)
			}
		}
		if other, dup := seen[name]; dup {
			t.Errorf("conversations %q and %q share directory %q", other, id, name)
		}
		seen[name] = id
	}
	if got := conversationDirName("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "r"); got != "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" {
		t.Errorf("platform ids should be used as they are, got %q", got)
	}
	if conversationDirName("", "run-1") == conversationDirName("", "run-2") {
		t.Error("two task runs without a conversation share a directory")
	}
}

func TestNewTask_LaysOutDirectoriesUnderTheConversation(t *testing.T) {
	req := adapterapi.RunTaskRequest{TaskRunID: "../run", ConversationID: "conv", Input: []byte(`{"text":"hi"}`)}
	task := NewTask(req, nil, "/root", "")
	if task.Workdir != filepath.Join("/root", "conv") {
		t.Errorf("Workdir = %q", task.Workdir)
	}
	if !strings.HasPrefix(task.RunDir, task.Workdir+string(filepath.Separator)) || strings.Contains(task.RunDir, "..") {
		t.Errorf("RunDir %q escapes the conversation directory", task.RunDir)
	}
	if filepath.Dir(task.OutputDir) != task.RunDir {
		t.Errorf("OutputDir %q is not inside RunDir %q", task.OutputDir, task.RunDir)
	}
	if task.Text != "hi" {
		t.Errorf("Text = %q", task.Text)
	}
}

func TestJoinInstructions(t *testing.T) {
	tests := []struct{ file, request, want string }{
		{"", "", ""},
		{"Be a test agent.\n", "", "Be a test agent."},
		{"", " Be brief. ", "Be brief."},
		{"Be a test agent.", "Be brief.", "Be a test agent.\n\nBe brief."},
	}
	for _, tt := range tests {
		if got := joinInstructions(tt.file, tt.request); got != tt.want {
			t.Errorf("joinInstructions(%q, %q) = %q, want %q", tt.file, tt.request, got, tt.want)
		}
	}
}

func TestTaskEnv_LeavesOutWhatCannotBeInTheEnvironment(t *testing.T) {
	big := `{"input":{"text":"` + strings.Repeat("x", maxEnvValue) + `"}}`
	task := NewTask(adapterapi.RunTaskRequest{TaskRunID: "run", Instructions: "a\x00b"}, []byte(big), "/root", "")
	env := strings.Join(task.Env(), "\n")
	for _, name := range []string{"A2A_TASK_JSON=", "A2A_INSTRUCTIONS=", "A2A_CONVERSATION_ID="} {
		if strings.Contains(env, name) {
			t.Errorf("%s set; it cannot be passed", name)
		}
	}
	for _, name := range []string{"A2A_TASK_RUN_ID=run", "A2A_TASK_FILE=", "A2A_INSTRUCTIONS_FILE=", "A2A_OUTPUT_DIR="} {
		if !strings.Contains(env, name) {
			t.Errorf("%s missing", name)
		}
	}
}
