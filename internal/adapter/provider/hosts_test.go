package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliHostCase is a CLI host provider run against its fake host.
type cliHostCase struct {
	name   string
	binary string // the fake host
	key    string // the credential variable the fake host may leak
	build  func(HostConfig) (Provider, error)
}

// make builds the provider against its fake host, with cfg.
func (h cliHostCase) make(t *testing.T, cfg HostConfig) Provider {
	t.Helper()
	cfg.Binary = fakeHost(t, h.binary)
	p, err := h.build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var cliHosts = []cliHostCase{
	{"claude", "claude", "ANTHROPIC_API_KEY", func(cfg HostConfig) (Provider, error) { return NewClaude(ClaudeConfig{HostConfig: cfg}) }},
	{"codex", "codex", "CODEX_API_KEY", func(cfg HostConfig) (Provider, error) { return NewCodex(CodexConfig{HostConfig: cfg}) }},
	{"gemini", "gemini", "GEMINI_API_KEY", func(cfg HostConfig) (Provider, error) { return NewGemini(GeminiConfig{HostConfig: cfg}) }},
	{"cursor", "cursor-agent", "CURSOR_API_KEY", func(cfg HostConfig) (Provider, error) { return NewCursor(CursorConfig{HostConfig: cfg}) }},
	{"hermes", "hermes", "OPENROUTER_API_KEY", func(cfg HostConfig) (Provider, error) { return NewHermes(HermesConfig{HostConfig: cfg}) }},
}

func TestHosts_CancelStopsTheHostAndItsChildrenWithSIGINTFirst(t *testing.T) {
	for _, h := range cliHosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			root, record := t.TempDir(), t.TempDir()
			p := h.make(t, HostConfig{Env: fakeEnv(record, "FAKE_MODE=hang"), KillGrace: 300 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := p.Run(ctx, hostTask(t, root, "conv", "hang"), nil)
				done <- err
			}()
			child := readPID(t, filepath.Join(record, "child."+waitCall(t, record)))
			host := waitCall(t, record)

			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
				wantError(t, err, "stopped")
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			if _, err := os.Stat(filepath.Join(record, "sigint."+host)); err != nil {
				t.Errorf("the host got no SIGINT before being killed: %v", err)
			}
			assertGone(t, "the host's child", child)
		})
	}
}

func TestHosts_TimeoutKillsAHostThatIgnoresSIGINT(t *testing.T) {
	for _, h := range cliHosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			root, record := t.TempDir(), t.TempDir()
			p := h.make(t, HostConfig{Env: fakeEnv(record, "FAKE_MODE=hang", "FAKE_IGNORE_INT=1"), KillGrace: 200 * time.Millisecond})
			ctx := deadlineAfterStart(record, 700*time.Millisecond)
			_, err := p.Run(ctx, hostTask(t, root, "conv", "hang"), nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			if elapsed := time.Since(ctx.ended); elapsed > 8*time.Second {
				t.Fatalf("Run took %s after its deadline to give up", elapsed)
			}
			pid := waitCall(t, record)
			assertGone(t, "the host", atoi(t, pid))
			assertGone(t, "the host's child", readPID(t, filepath.Join(record, "child."+pid)))
		})
	}
}

func TestHosts_SecretsStayOffTheCommandLineAndOutOfTheReply(t *testing.T) {
	const secret = "sk-test-4f3e2d1c0b9a8877"
	for _, h := range cliHosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			root, record := t.TempDir(), t.TempDir()
			p := h.make(t, HostConfig{Env: fakeEnv(record, "FAKE_MODE=leak", h.key+"="+secret)})
			res, err, log := runHost(t, p, hostTask(t, root, "conv", "print your key"))
			if err != nil {
				t.Fatal(err)
			}
			call := onlyCall(t, record)
			if call.env[h.key] != secret {
				t.Fatalf("the host did not get %s in its environment", h.key)
			}
			if strings.Contains(strings.Join(call.argv, "\x00"), secret) {
				t.Fatal("the secret is on the host's command line")
			}
			reply := strings.Join(log.messages(), "\n") + "\n" + toJSON(t, res.Output)
			if strings.Contains(reply, secret) {
				t.Fatalf("the secret is in the reply: %s", reply)
			}
			if !strings.Contains(reply, redacted) {
				t.Fatalf("the reply does not show where the secret was removed: %s", reply)
			}
		})
	}
}

func TestHosts_SecretsStayOutOfFailures(t *testing.T) {
	const secret = "sk-test-99aa88bb77cc66dd"
	root, record := t.TempDir(), t.TempDir()
	script := writeScript(t, t.TempDir(), "claude", `echo "401: bad key $ANTHROPIC_API_KEY" >&2; exit 1`)
	c, err := NewClaude(ClaudeConfig{HostConfig: HostConfig{Binary: script, Env: fakeEnv(record, "ANTHROPIC_API_KEY="+secret)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err, _ = runHost(t, c, hostTask(t, root, "conv", "hi"))
	wantError(t, err, "401: bad key", redacted)
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the secret is in the failure: %v", err)
	}
}

func TestHosts_EachConversationHasItsOwnDirectory(t *testing.T) {
	for _, h := range cliHosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			root, record := t.TempDir(), t.TempDir()
			p := h.make(t, HostConfig{Env: fakeEnv(record)})
			for _, conv := range []string{"conv-a", "conv-b", "conv-a"} {
				if _, err, _ := runHost(t, p, hostTask(t, root, conv, "hi")); err != nil {
					t.Fatal(err)
				}
			}
			calls := hostCalls(t, record)
			if len(calls) != 3 {
				t.Fatalf("%d starts, want 3", len(calls))
			}
			if calls[0].cwd != calls[2].cwd || calls[0].cwd == calls[1].cwd {
				t.Fatalf("working directories %q, %q, %q: want one per conversation", calls[0].cwd, calls[1].cwd, calls[2].cwd)
			}
			if filepath.Dir(calls[0].cwd) != filepath.Dir(calls[1].cwd) {
				t.Fatalf("conversation directories %q and %q are not both under the work root", calls[0].cwd, calls[1].cwd)
			}
		})
	}
}

func TestHosts_PromptsStartingWithADashAreNotTakenForOptions(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	p := cliHosts[3].make(t, HostConfig{Env: fakeEnv(record)}) // cursor: prompt as argument
	task := hostTask(t, root, "conv", "hi")
	task.Instructions = "- be terse"
	if _, err, _ := runHost(t, p, task); err != nil {
		t.Fatal(err)
	}
	argv := onlyCall(t, record).argv
	last := argv[len(argv)-1]
	if strings.HasPrefix(last, "-") || !strings.Contains(last, "- be terse") {
		t.Fatalf("prompt argument %q", last)
	}
}

func TestHosts_PromptOverTheArgumentLimitFailsClearly(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	p := cliHosts[4].make(t, HostConfig{Env: fakeEnv(record)}) // hermes -z: prompt as argument
	_, err, _ := runHost(t, p, hostTask(t, root, "conv", strings.Repeat("x", maxArgBytes+1)))
	if !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("err = %v, want ErrPromptTooLong", err)
	}
	if calls := hostCalls(t, record); len(calls) != 0 {
		t.Fatal("the host was started anyway")
	}
}

// waitCall waits until a fake host recorded its start and returns its pid.
func waitCall(t *testing.T, record string) string {
	t.Helper()
	var pid string
	eventually(t, 10*time.Second, "the host to start", func() bool {
		b, _ := os.ReadFile(filepath.Join(record, "calls"))
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			return false
		}
		pid = fields[len(fields)-1]
		return true
	})
	return pid
}

// hostDeadline is a context that ends as a deadline does
// (context.DeadlineExceeded), a while after the fake host has started.
// A deadline counted from the call would, on a loaded machine, stop a
// host before it started, and so test nothing of how one that ignores
// SIGINT is stopped.
type hostDeadline struct {
	context.Context
	done  chan struct{}
	ended time.Time
}

// deadlineAfterStart ends d after the fake host writes its call into
// record, or after 30 s if it never does (waitCall then says so).
func deadlineAfterStart(record string, d time.Duration) *hostDeadline {
	c := &hostDeadline{Context: context.Background(), done: make(chan struct{})}
	go func() {
		for give := time.Now().Add(30 * time.Second); time.Now().Before(give); time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(record, "calls")); len(b) > 0 {
				break
			}
		}
		time.AfterFunc(d, func() {
			c.ended = time.Now()
			close(c.done)
		})
	}()
	return c
}

func (c *hostDeadline) Done() <-chan struct{} { return c.done }

func (c *hostDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
