package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
)

// HostConfig is the part of a CLI agent host provider's configuration that
// every host shares. Each host's own options struct embeds it.
type HostConfig struct {
	// Binary is the host's executable: a name looked up in PATH, or a path.
	// Default: the host's usual command (claude, codex, gemini, cursor-agent,
	// hermes). Tests point it at a fake host.
	Binary string
	// Env is the base environment of the host process; the task's A2A_
	// variables (see Task.Env) are added to it. API keys reach the host this
	// way only, never on its command line, where any local user could read
	// them in a process listing. The adapter passes its own environment.
	Env []string
	// Sessions, when set, remembers the host's session of each conversation
	// and resumes it on the conversation's next task. Nil (the default) runs
	// every task in a new host session (seed 001 §8.1: stateless).
	Sessions *SessionStore
	// KillGrace is the time between SIGINT and SIGKILL when a task is
	// stopped. Default DefaultKillGrace.
	KillGrace time.Duration
	// MaxArtifactBytes caps each file in the output directory. Default
	// DefaultMaxArtifactBytes.
	MaxArtifactBytes int64
}

// hostSpec describes a CLI agent host to the adapter: how it is found,
// installed and authenticated. Doctor reads it too.
type hostSpec struct {
	// name is the provider name, as in --provider.
	name string
	// product is the host's name for people.
	product string
	// binary is the default executable.
	binary string
	// install says how to install the host.
	install string
	// keys are the environment variables that carry a credential; any one
	// of them is enough.
	keys []string
	// login says how to sign in instead of setting a key; empty when the
	// host cannot work without one of keys.
	login string
	// loginFiles are files, relative to the home directory, that a saved
	// sign-in leaves; doctor mentions them when it finds one.
	loginFiles []string
	// ignoredKeys are variables people set for the host that it does not
	// read in headless runs; doctor says so when only they are set.
	ignoredKeys []string
}

// cliHost runs one kind of CLI agent host: the process, its workspace, its
// session and the result, leaving to each provider how the host is invoked
// and how its output reads.
type cliHost struct {
	spec   hostSpec
	path   string
	cfg    HostConfig
	redact redactor
}

// newCLIHost resolves the host's executable to an absolute path, so that a
// host that is not installed is reported when the adapter starts.
func newCLIHost(spec hostSpec, cfg HostConfig) (*cliHost, error) {
	if cfg.Binary == "" {
		cfg.Binary = spec.binary
	}
	path, err := findHost(spec, cfg.Binary)
	if err != nil {
		return nil, err
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	cfg.Env = slices.Clone(cfg.Env)
	return &cliHost{spec: spec, path: path, cfg: cfg, redact: newRedactor(cfg.Env)}, nil
}

// findHost resolves binary like the shell would, to an absolute path: the
// host runs in a conversation's directory, against which a relative path
// would be resolved.
func findHost(spec hostSpec, binary string) (string, error) {
	path, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("%w: %s (%s) is not installed or not on PATH; %s, or pass --host-binary", ErrHostNotFound, binary, spec.product, spec.install)
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", fmt.Errorf("%s: %w", binary, err)
	}
	return path, nil
}

// invocation is one start of a host process.
type invocation struct {
	// args follow the executable.
	args []string
	// stdin is written to the host's standard input, which is then closed.
	stdin string
	// parser reads the host's stdout and judges the run.
	parser hostParser
	// env is added to the host's environment after the adapter's and the
	// task's: settings the adapter needs the host to run with.
	env []string
	// stderrLine, when set, sees each line of the host's stderr (without
	// terminal escapes), for hosts that report retries only there.
	stderrLine func(line string)
}

// hostParser reads one run's stdout and says how the run ended.
type hostParser interface {
	// Write takes the host's stdout as it comes.
	io.Writer
	// outcome is called once the host and every process it started are gone.
	// exit is nil or the *ExitError of a host that failed on its own;
	// stderrTail is the end of its stderr.
	outcome(exit error, stderrTail string) (hostOutcome, error)
}

// hostOutcome is what a successful run produced.
type hostOutcome struct {
	// text is the answer: output.text.
	text string
	// sessionID is the host's session, remembered when sessions persist.
	sessionID string
	// metadata goes to output.metadata: cost, usage, model and the like.
	metadata map[string]any
	// usage goes to output.usage: what the host reported spending, in
	// the one shape every provider reports (mesh.Usage).
	usage *mesh.Usage
}

// run runs t on the host. start builds the invocation, given the host
// session to resume ("" for a new one) and the function reporting progress.
func (h *cliHost) run(ctx context.Context, t *Task, progress func(Progress), start func(resume string, report func(string)) (invocation, error)) (*Result, error) {
	res, err := h.runOnce(ctx, t, newReporter(progress, h.redact), start)
	return res, h.redact.err(err)
}

func (h *cliHost) runOnce(ctx context.Context, t *Task, report func(string), start func(string, func(string)) (invocation, error)) (*Result, error) {
	if err := t.PrepareDirs(); err != nil {
		return nil, err
	}
	// The outputs travel in the reply; the conversation directory stays.
	defer func() { _ = t.RemoveRunDir() }()

	resume, err := sessionOf(h.cfg.Sessions, t)
	if err != nil {
		return nil, err
	}
	inv, err := start(resume, report)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.spec.name, err)
	}
	tmp, err := t.TempDir()
	if err != nil {
		return nil, err
	}
	stderr := &tailBuffer{max: stderrTailBytes}
	env := append(slices.Clip(h.cfg.Env), t.Env()...)
	env = append(env, tempEnv(tmp)...)
	runErr := RunProcess(ctx, Process{
		Path:   h.path,
		Args:   append([]string{h.path}, inv.args...),
		Dir:    t.Workdir,
		Env:    append(env, inv.env...),
		Stdin:  strings.NewReader(inv.stdin),
		Stdout: inv.parser,
		StderrLine: func(line string) {
			line = stripANSI(line)
			_, _ = stderr.Write([]byte(line + "\n"))
			if inv.stderrLine != nil {
				inv.stderrLine(line)
			}
		},
		KillGrace: h.cfg.KillGrace,
	})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s stopped: %w", h.spec.name, runErr)
	}
	var exit *ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		return nil, fmt.Errorf("%s: %w", h.spec.name, runErr)
	}
	// The tail may start inside a secret, which later redaction of the
	// whole message would no longer recognise.
	out, err := inv.parser.outcome(runErr, h.redact.text(stderr.String()))
	if err != nil {
		// A session that cannot be resumed must not fail every later task
		// of its conversation: the next one starts afresh.
		forgetSession(h.cfg.Sessions, t, resume)
		return nil, err
	}
	if err := rememberSession(h.cfg.Sessions, t, out.sessionID); err != nil {
		return nil, err
	}
	meta := out.metadata
	if meta == nil {
		meta = map[string]any{}
	}
	meta["host"] = h.spec.name
	if out.sessionID != "" {
		meta["session_id"] = out.sessionID
	}
	if resume != "" {
		meta["resumed"] = true
	}
	res, err := buildResult(t, out.text, meta, h.cfg.MaxArtifactBytes, h.redact)
	if err == nil && out.usage != nil {
		res.Output["usage"] = out.usage
	}
	return res, err
}

// buildResult collects the run's output files and returns the success
// reply, every string of it without secrets.
func buildResult(t *Task, text string, meta map[string]any, maxArtifactBytes int64, r redactor) (*Result, error) {
	artifacts, err := CollectArtifacts(t.OutputDir, maxArtifactBytes)
	if err != nil {
		return nil, err
	}
	output := map[string]any{"text": r.text(text)}
	if len(meta) > 0 {
		output["metadata"] = r.value(meta)
	}
	if len(artifacts) > 0 {
		output["artifacts"] = r.value(artifacts)
	}
	return &Result{Output: output}, nil
}

// sessionOf returns the host session to resume for t, or "" when sessions
// do not persist or t has no conversation.
func sessionOf(s *SessionStore, t *Task) (string, error) {
	if s == nil || t.Request.ConversationID == "" {
		return "", nil
	}
	return s.Get(t.Request.ConversationID)
}

func rememberSession(s *SessionStore, t *Task, sessionID string) error {
	if s == nil || t.Request.ConversationID == "" || sessionID == "" {
		return nil
	}
	return s.Put(t.Request.ConversationID, sessionID)
}

func forgetSession(s *SessionStore, t *Task, resumed string) {
	if s != nil && resumed != "" {
		_ = s.Forget(t.Request.ConversationID)
	}
}

// newReporter returns the function providers report progress through: one
// line, at most maxProgressMessage characters, without secrets, and never
// the same message twice in a row.
func newReporter(progress func(Progress), r redactor) func(string) {
	if progress == nil {
		return func(string) {}
	}
	var mu sync.Mutex
	last := ""
	return func(msg string) {
		msg = oneLine(r.text(msg), maxProgressMessage)
		mu.Lock()
		defer mu.Unlock()
		if msg == "" || msg == last {
			return
		}
		last = msg
		progress(Progress{Message: msg})
	}
}

// maxProgressMessage bounds a progress report: it is a status line, not a
// transcript.
const maxProgressMessage = 200

// outputsNote tells a host where deliverables go. Hosts learn of the output
// directory only through their prompt: the model does not see A2A_OUTPUT_DIR.
func outputsNote(t *Task) string {
	return "Files you want to deliver go in " + t.OutputDir + "."
}

// systemText is what a host with a system prompt flag gets there: the
// instructions (instruction file, then the agent's), then the outputs note.
func systemText(t *Task) string {
	return joinParagraphs(t.Instructions, outputsNote(t))
}

// promptWithContext is the prompt of a host without a system prompt flag:
// the instructions and the outputs note, then the task's prompt.
func promptWithContext(t *Task) string {
	return joinParagraphs(systemText(t), "---", taskPrompt(t))
}

// taskPrompt is what a model host is asked: the task text, then what else
// the A2A message holds that the text does not say: each data part as
// JSON, each file given by URL (the platform never fetches it: the host
// does, if it needs it), and where the whole message is.
func taskPrompt(t *Task) string {
	if t.Message == nil {
		return t.Text
	}
	var notes []string
	for _, p := range t.Message.Parts {
		switch {
		case p.Kind == adapterapi.PartData:
			b, err := json.MarshalIndent(p.Data, "", "  ")
			if err == nil {
				notes = append(notes, "Structured data given with the message (JSON):\n"+string(b))
			}
		case p.Kind == adapterapi.PartFile && p.URI != "":
			notes = append(notes, fmt.Sprintf("File given by URL (not downloaded): %s (%s) %s", p.Name, p.MimeType, p.URI))
		}
	}
	if len(notes) == 0 {
		return t.Text
	}
	notes = append(notes, "The whole message is in "+t.MessageFile()+".")
	return joinParagraphs(append([]string{t.Text}, notes...)...)
}

func joinParagraphs(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n\n")
}

// maxArgBytes is the longest single command-line argument Linux accepts
// (MAX_ARG_STRLEN, 32 pages, including the terminating NUL).
const maxArgBytes = 32*4096 - 1

// argPrompt prepares a prompt that must travel as a command-line argument:
// it fails when the prompt does not fit, and keeps a prompt starting with a
// dash from being taken for an option.
func argPrompt(prompt string) (string, error) {
	if strings.HasPrefix(prompt, "-") {
		prompt = "\n" + prompt
	}
	if len(prompt) > maxArgBytes {
		return "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrPromptTooLong, len(prompt), maxArgBytes)
	}
	return prompt, nil
}

// exitFailure describes a host that exited unsuccessfully: its status, then
// the host's own message (from its event stream) or the end of its stderr.
func exitFailure(host string, exit error, message, stderrTail string) error {
	var ee *ExitError
	if !errors.As(exit, &ee) {
		if message == "" {
			message = stderrTail
		}
		return fmt.Errorf("%s: %s", host, message)
	}
	status := fmt.Sprintf("exited with status %d", ee.Code)
	if ee.Code < 0 && ee.Signal != 0 {
		status = "killed by signal " + ee.Signal.String()
	}
	switch {
	case message != "":
		return fmt.Errorf("%s %s: %s", host, status, message)
	case stderrTail != "":
		return fmt.Errorf("%s %s: %s", host, status, stderrTail)
	}
	return fmt.Errorf("%s %s", host, status)
}
