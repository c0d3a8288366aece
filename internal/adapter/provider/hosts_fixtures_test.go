package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// fakeHost returns the absolute path of a fake agent host in
// testdata/fakehosts: a sh script printing its host's documented output.
func fakeHost(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "fakehosts", name))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeEnv is a fake host's environment: PATH, where it records its starts,
// and extras such as FAKE_MODE or an API key.
func fakeEnv(record string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "FAKE_RECORD=" + record}, extra...)
}

// hostCall is one recorded start of a fake host.
type hostCall struct {
	pid   string
	argv  []string
	env   map[string]string
	cwd   string
	stdin string
}

// arg returns the argument after name, or "".
func (c hostCall) arg(name string) string {
	i := slices.Index(c.argv, name)
	if i < 0 || i+1 >= len(c.argv) {
		return ""
	}
	return c.argv[i+1]
}

func (c hostCall) has(arg string) bool { return slices.Contains(c.argv, arg) }

// hostCalls reads every start a fake host recorded in dir, in order.
func hostCalls(t *testing.T, dir string) []hostCall {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls []hostCall
	for _, pid := range strings.Fields(string(b)) {
		c := hostCall{pid: pid, env: map[string]string{}}
		argv, _ := os.ReadFile(filepath.Join(dir, "argv."+pid))
		c.argv = strings.Split(strings.TrimSuffix(string(argv), "\x00"), "\x00")
		env, _ := os.ReadFile(filepath.Join(dir, "env."+pid))
		sc := bufio.NewScanner(strings.NewReader(string(env)))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				c.env[k] = v
			}
		}
		cwd, _ := os.ReadFile(filepath.Join(dir, "cwd."+pid))
		c.cwd = strings.TrimSpace(string(cwd))
		stdin, _ := os.ReadFile(filepath.Join(dir, "stdin."+pid))
		c.stdin = string(stdin)
		calls = append(calls, c)
	}
	return calls
}

// onlyCall returns the one start recorded in dir.
func onlyCall(t *testing.T, dir string) hostCall {
	t.Helper()
	calls := hostCalls(t, dir)
	if len(calls) != 1 {
		t.Fatalf("the host was started %d times, want once", len(calls))
	}
	return calls[0]
}

// progressLog records progress reports.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) report(pr Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, pr.Message)
}

func (p *progressLog) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

// wantMessages fails the test unless every one of want was reported, in
// that order (other reports may come in between).
func (p *progressLog) wantMessages(t *testing.T, want ...string) {
	t.Helper()
	got := p.messages()
	i := 0
	for _, m := range got {
		if i < len(want) && m == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("progress reports %q lack %q (in this order)", got, want[i:])
	}
}

// hostTask builds a task the way the adapter does, with file and agent
// instructions.
func hostTask(t *testing.T, root, conversationID, text string) *Task {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"text": text})
	req := adapterapi.RunTaskRequest{
		TaskRunID:      "run-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000000"),
		ConversationID: conversationID,
		TaskType:       "chat",
		Input:          input,
		Instructions:   "Answer in English.",
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	return NewTask(req, raw, real, "You are the release agent.")
}

// runHost runs one task and returns the result, the error and the progress.
func runHost(t *testing.T, p Provider, task *Task) (*Result, error, *progressLog) {
	t.Helper()
	log := &progressLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.Run(ctx, task, log.report)
	return res, err, log
}

// metadata returns output.metadata.
func metadata(t *testing.T, res *Result) map[string]any {
	t.Helper()
	m, ok := res.Output["metadata"].(map[string]any)
	if !ok {
		t.Fatalf("output.metadata missing: %+v", res.Output)
	}
	return m
}

// wantError fails the test unless err's message has every part.
func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}

// toJSON marshals v for searching the whole reply.
func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
