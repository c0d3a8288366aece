package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
)

// Names inside a conversation directory. They start with a dot so that a
// host listing its working directory sees them as housekeeping.
const (
	runsDirName          = ".a2a-runs"
	outputsDirName       = "outputs"
	attachmentsDirName   = "attachments"
	taskFileName         = "task.json"
	messageFileName      = "message.json"
	instructionsFileName = "instructions.md"
	tmpDirName           = "tmp"
)

// maxEnvValue bounds what is passed through an environment variable. Linux
// refuses to start a process with any single environment string over 128 KiB,
// so larger values travel only in files (A2A_TASK_FILE, A2A_INSTRUCTIONS_FILE).
const maxEnvValue = 64 << 10

// Task is one run-task request prepared for a provider.
type Task struct {
	// Request is the decoded request.
	Request adapterapi.RunTaskRequest
	// taskJSON is the request body as received, so that fields this
	// adapter does not know yet still reach hosts that read the whole
	// request, less its secrets (TaskJSON).
	taskJSON func() []byte
	// Text is input.text, decoded once for providers on the hot path.
	Text string
	// Message is input.message, the A2A message the task came from (nil
	// for a task that did not come through the A2A endpoint).
	Message *adapterapi.Message
	// Instructions are the instruction file's text followed by the request's
	// instructions, separated by a blank line; empty when there are none.
	Instructions string
	// Workdir is the conversation's own directory. It outlives the task run
	// so a host can keep context within a conversation, and it is never
	// shared between conversations (seed 001 §10: the conversation is the
	// context boundary).
	Workdir string
	// RunDir holds the files of this task run only; PrepareDirs empties it
	// and RemoveRunDir deletes it.
	RunDir string
	// OutputDir is where the host writes deliverables; every file in it
	// becomes an artifact write request. It is inside RunDir.
	OutputDir string
}

// NewTask prepares req for a provider. It only names the task's directories
// under root and creates nothing, so providers that need no files pay
// nothing. raw is the request body as received; instructions is the
// adapter's instruction file text.
func NewTask(req adapterapi.RunTaskRequest, raw []byte, root, instructions string) *Task {
	conv := conversationDirName(req.ConversationID, req.TaskRunID)
	workdir := filepath.Join(root, conv)
	runDir := filepath.Join(workdir, runsDirName, safeName(req.TaskRunID, "_"))
	return &Task{
		Request: req,
		taskJSON: sync.OnceValue(func() []byte {
			if req.Environment != nil || req.Tools != nil {
				return withoutSecrets(raw)
			}
			return raw
		}),
		Text:         req.InputText(),
		Message:      req.InputMessage(),
		Instructions: joinInstructions(instructions, req.Instructions),
		Workdir:      workdir,
		RunDir:       runDir,
		OutputDir:    filepath.Join(runDir, outputsDirName),
	}
}

// PrepareDirs creates the conversation directory, if needed, and a fresh run
// directory holding task.json, instructions.md (when there are instructions),
// message.json (when the task came with an A2A message) and an empty output
// directory. Everything is private to the user (0700,
// files 0600): tasks carry other people's requests.
func (t *Task) PrepareDirs() error {
	if err := os.MkdirAll(t.Workdir, 0o700); err != nil {
		return fmt.Errorf("create conversation directory: %w", err)
	}
	// A retried task run reuses its id; stale outputs must not be delivered
	// again.
	if err := os.RemoveAll(t.RunDir); err != nil {
		return fmt.Errorf("clear run directory: %w", err)
	}
	if err := os.MkdirAll(t.OutputDir, 0o700); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if err := os.WriteFile(t.taskFile(), t.TaskJSON(), 0o600); err != nil {
		return fmt.Errorf("write task file: %w", err)
	}
	if t.Instructions != "" {
		if err := os.WriteFile(t.instructionsFile(), []byte(t.Instructions), 0o600); err != nil {
			return fmt.Errorf("write instructions file: %w", err)
		}
	}
	if err := t.writeMessage(); err != nil {
		return err
	}
	return t.writeAttachments()
}

// writeMessage writes input.message, when the task has one, to
// message.json in the run directory (A2A_MESSAGE_FILE): its data parts
// as JSON, its files by URL as given (nobody on the platform fetched
// them).
func (t *Task) writeMessage() error {
	if t.Message == nil {
		return nil
	}
	b, err := json.MarshalIndent(t.Message, "", "  ")
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	if err := os.WriteFile(t.MessageFile(), b, 0o600); err != nil {
		return fmt.Errorf("write message file: %w", err)
	}
	return nil
}

// MessageFile is where the task's A2A message is (A2A_MESSAGE_FILE), when
// it has one.
func (t *Task) MessageFile() string { return filepath.Join(t.RunDir, messageFileName) }

// writeAttachments writes the files that came inline with the task's input
// (input.attachments with content_base64) into the run directory's
// attachments folder, each under its own (cleaned) name.
func (t *Task) writeAttachments() error {
	var in struct {
		Attachments []adapterapi.Attachment `json:"attachments"`
	}
	if json.Unmarshal(t.Request.Input, &in) != nil || len(in.Attachments) == 0 {
		return nil
	}
	dir := t.AttachmentsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create attachments directory: %w", err)
	}
	used := map[string]bool{}
	for i, a := range in.Attachments {
		if a.ContentBase64 == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(a.ContentBase64)
		if err != nil {
			return fmt.Errorf("attachment %d is not valid base64", i+1)
		}
		name := attachmentName(a.Name, i, used)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return fmt.Errorf("write attachment %s: %w", name, err)
		}
	}
	return nil
}

// attachmentName is a file name inside the attachments folder: the
// attachment's base name when it is a harmless one, made unique.
func attachmentName(name string, i int, used map[string]bool) string {
	base := filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	if base == "." || base == "/" || base == "" || strings.HasPrefix(base, ".") || strings.ContainsAny(base, "/\x00") {
		base = fmt.Sprintf("attachment-%d", i+1)
	}
	out := base
	for n := 2; used[out]; n++ {
		out = fmt.Sprintf("%d-%s", n, base)
	}
	used[out] = true
	return out
}

// TempDir creates the task's own temporary folder inside its run folder
// and returns it. Hosts get it as TMPDIR (see tempEnv), so the files they
// leave in "the system's temporary folder" (Gemini CLI's error reports
// hold the prompt) stay private to the run and go with its run folder.
func (t *Task) TempDir() (string, error) {
	dir := filepath.Join(t.RunDir, tmpDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create temporary directory: %w", err)
	}
	return dir, nil
}

// AttachmentsDir is where the task's input files are (A2A_ATTACHMENTS_DIR).
func (t *Task) AttachmentsDir() string { return filepath.Join(t.RunDir, attachmentsDirName) }

// RemoveRunDir deletes the run directory once the outputs are in the reply,
// and the directory of runs when no other run is left in it. The
// conversation directory stays.
func (t *Task) RemoveRunDir() error {
	if err := os.RemoveAll(t.RunDir); err != nil {
		return fmt.Errorf("remove run directory: %w", err)
	}
	_ = os.Remove(filepath.Dir(t.RunDir)) // fails, as it should, when not empty
	return nil
}

// Env returns the A2A_ environment variables describing t to a host process:
// A2A_TASK_RUN_ID, A2A_CONVERSATION_ID, A2A_OUTPUT_DIR, A2A_TASK_FILE (the
// request JSON), A2A_TASK_JSON (the same, when it fits in the environment),
// A2A_ATTACHMENTS_DIR when the input came with files, A2A_MESSAGE_FILE
// when it came with an A2A message, and, when there are
// instructions, A2A_INSTRUCTIONS_FILE and A2A_INSTRUCTIONS (when it fits). It
// assumes PrepareDirs has run.
func (t *Task) Env() []string {
	env := make([]string, 0, 7)
	env = appendEnv(env, "A2A_TASK_RUN_ID", t.Request.TaskRunID)
	env = appendEnv(env, "A2A_CONVERSATION_ID", t.Request.ConversationID)
	env = appendEnv(env, "A2A_OUTPUT_DIR", t.OutputDir)
	if _, err := os.Stat(t.AttachmentsDir()); err == nil {
		env = appendEnv(env, "A2A_ATTACHMENTS_DIR", t.AttachmentsDir())
	}
	env = appendEnv(env, "A2A_TASK_FILE", t.taskFile())
	if t.Message != nil {
		env = appendEnv(env, "A2A_MESSAGE_FILE", t.MessageFile())
	}
	env = appendEnv(env, "A2A_TASK_JSON", string(t.TaskJSON()))
	if t.Instructions != "" {
		env = appendEnv(env, "A2A_INSTRUCTIONS_FILE", t.instructionsFile())
		env = appendEnv(env, "A2A_INSTRUCTIONS", t.Instructions)
	}
	return env
}

// CallerEnv returns the environment the task's caller asked for: its
// variables, except those the platform reserves (A2A_*, PATH, HOME), and
// A2A_WORKING_DIRECTORY when it named a working directory. Append it after
// the adapter's own environment and before Env, so the task's A2A_
// variables always win.
func (t *Task) CallerEnv() []string {
	e := t.Request.Environment
	if e == nil {
		return nil
	}
	names := make([]string, 0, len(e.Variables))
	for name := range e.Variables {
		if !mesh.ReservedEnvName(name) && !strings.ContainsAny(name, "=\x00") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	env := make([]string, 0, len(names)+1)
	for _, name := range names {
		env = appendEnv(env, name, e.Variables[name])
	}
	return appendEnv(env, "A2A_WORKING_DIRECTORY", e.WorkingDirectory)
}

// TaskJSON is the request as the host may read it (the task file,
// A2A_TASK_JSON): the body as received, less what the host gets otherwise.
// The caller's variables reach it in its environment and the tools'
// capability in its tool configuration, so the request must not carry them
// as well. It is made on first use: a provider that starts no process
// (echo) never pays for it.
func (t *Task) TaskJSON() []byte { return t.taskJSON() }

// withoutSecrets removes the environment and the tools from a request body.
func withoutSecrets(raw []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "environment")
	delete(m, "tools")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

func (t *Task) taskFile() string         { return filepath.Join(t.RunDir, taskFileName) }
func (t *Task) instructionsFile() string { return filepath.Join(t.RunDir, instructionsFileName) }

// appendEnv leaves out values a process cannot be started with: empty ones,
// ones with a NUL byte, and ones over maxEnvValue (those are in files).
func appendEnv(env []string, name, value string) []string {
	if value == "" || len(value) > maxEnvValue || strings.IndexByte(value, 0) >= 0 {
		return env
	}
	return append(env, name+"="+value)
}

func joinInstructions(file, request string) string {
	file, request = strings.TrimSpace(file), strings.TrimSpace(request)
	switch {
	case file == "":
		return request
	case request == "":
		return file
	}
	return file + "\n\n" + request
}

// conversationDirName names the directory of a conversation. A request
// without a conversation gets a directory of its own task run, so it shares
// context with nothing.
func conversationDirName(conversationID, taskRunID string) string {
	if conversationID == "" {
		return "_r" + hashName(taskRunID)
	}
	return safeName(conversationID, "_c")
}

// safeName returns id itself when it is a harmless single path element, and
// otherwise hashedPrefix followed by a hash of id. Direct names use only
// [a-z0-9._-], start with a letter or digit and never contain "..": no path
// separators, no "." or "..", no hidden files, and no two ids that differ only
// in case, which would share a directory on case-insensitive file systems
// (macOS). Hashed names start with "_", which direct names cannot, so the
// mapping stays one to one and two conversations never share a directory.
func safeName(id, hashedPrefix string) string {
	if isSafeName(id) {
		return id
	}
	return hashedPrefix + hashName(id)
}

func isSafeName(id string) bool {
	if id == "" || len(id) > 100 || strings.Contains(id, "..") {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

func hashName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}
