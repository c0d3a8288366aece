package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// commands splits an example into shell commands as sh reads them: a
// newline ends a command unless it is escaped with a backslash or inside
// quotes; blank lines and comments (a # after whitespace, outside quotes)
// are dropped.
func commands(text string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	comment := false
	flush := func() {
		if c := strings.TrimSpace(cur.String()); c != "" {
			out = append(out, c)
		}
		cur.Reset()
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case comment:
			if r == '\n' {
				comment = false
				flush()
			}
		case quote != 0:
			cur.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			cur.WriteRune(' ')
			i++
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == '#' && (i == 0 || rs[i-1] == ' ' || rs[i-1] == '\t' || rs[i-1] == '\n'):
			comment = true
		case r == '\n':
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// session runs examples the way a person following the docs does: in one
// folder whose bin/ holds the programs `make build` puts there (and which is
// on PATH, as the folder install.sh installs into), with HOME a fresh folder
// whose ~/.a2a-mesh is the platform's data directory, and nothing but the
// documented placeholders filled in.
type session struct {
	t    *testing.T
	dir  string
	home string
	p    *meshtest.Process // nil for a session without a platform
	env  []string
	// placeholders are replaced in each command before it runs: the values
	// the docs tell the reader to take from an earlier answer.
	placeholders map[string]string
	// secrets are values the transcript never shows (pairing codes, keys).
	secrets    []string
	mu         sync.Mutex
	background []*backgroundCmd
	transcript bytes.Buffer
}

type backgroundCmd struct {
	command string
	cmd     *exec.Cmd
	out     *meshtest.Logs
	done    chan struct{}
}

// defaultAPI is the platform address the docs write (make run's default);
// the test's platform listens elsewhere and takes its place.
const defaultAPI = "http://127.0.0.1:3000"

// newSession starts a platform for the examples of one document.
func newSession(t *testing.T) *session {
	t.Helper()
	s := newSessionWithoutPlatform(t)
	s.p = meshtest.StartProcess(t, bins.Platform, meshtest.ProcessOptions{DataDir: filepath.Join(s.home, ".a2a-mesh")})
	s.placeholders[defaultAPI] = s.p.APIBase
	s.env = append(s.env, "A2A_MESH_API_BASE="+s.p.APIBase)
	return s
}

// newSessionWithoutPlatform is a session for examples that need none.
func newSessionWithoutPlatform(t *testing.T) *session {
	t.Helper()
	s := &session{t: t, dir: t.TempDir(), home: t.TempDir(), placeholders: map[string]string{}}
	bin := filepath.Join(s.dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{bins.Platform, bins.Runtime, bins.Adapter} {
		if err := os.Symlink(b, filepath.Join(bin, filepath.Base(b))); err != nil {
			t.Fatal(err)
		}
	}
	s.env = []string{"HOME=" + s.home, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	t.Cleanup(s.stopBackground)
	return s
}

// defaultAdapterPort is held by the tests whose examples use the adapter's
// default port (127.0.0.1:18789), which only one of them can listen on.
var defaultAdapterPort sync.Mutex

// usesDefaultAdapterPort holds the default adapter port until the test and
// its background commands have ended. Call it before newSession, so that
// it is let go after the session's cleanup.
func usesDefaultAdapterPort(t *testing.T) {
	defaultAdapterPort.Lock()
	t.Cleanup(defaultAdapterPort.Unlock)
}

// stopBackground stops the background commands as a person does, with
// SIGTERM (a runtime then stops the adapter it runs), and waits until they
// have exited, so the ports they held are free.
func (s *session) stopBackground() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.background {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(time.Minute):
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	}
	s.background = nil
}

// runsUntilStopped are the commands the docs run in the foreground that
// keep running until they are stopped; the session runs them in the
// background and checks they are still running when the example ends.
var runsUntilStopped = regexp.MustCompile(`(^|/|\s)a2a-runtime start\b|(^|/)a2a-platform events tail\b`)

// readiness is what a background command prints once it works, which a
// person waits to see before typing the next command; the first that
// matches the command counts.
var readiness = []struct{ command, ready *regexp.Regexp }{
	{regexp.MustCompile(`(^|/|\s)a2a-runtime start\b`), regexp.MustCompile(`"message":"runtime started"`)},
	{regexp.MustCompile(`(^|/|\s)a2a-adapter\b`), regexp.MustCompile(`listening on http://`)},
}

var assignment = regexp.MustCompile(`^([A-Z_]+)=\$\((.*)\)$`)

// output is what one command printed.
type output struct {
	command string
	stdout  string
}

// run runs every command of an example in order and returns what each
// printed. A command that fails, or answers a JSON error, fails the test.
func (s *session) run(e example) []output {
	s.t.Helper()
	var outs []output
	for _, c := range commands(e.text) {
		for k, v := range s.placeholders {
			c = strings.ReplaceAll(c, k, v)
		}
		if strings.Contains(c, "<") && regexp.MustCompile(`<[a-zA-Z_]+>`).MatchString(c) {
			s.t.Fatalf("%s: %q has a placeholder the docs never filled", e, c)
		}
		fmt.Fprintf(&s.transcript, "$ %s\n", c)
		if c == "make build" {
			// bin/ already holds the three programs, built from the same
			// packages as the Makefile's build target builds them.
			continue
		}
		if bg, ok := strings.CutSuffix(c, "&"); ok || runsUntilStopped.MatchString(c) {
			if !ok {
				bg = c
			}
			s.start(e, strings.TrimSpace(bg))
			continue
		}
		if m := assignment.FindStringSubmatch(c); m != nil {
			v := strings.TrimSpace(s.foreground(e, m[2]))
			if v == "" || v == "null" {
				s.t.Fatalf("%s: %s is %q after %s\n%s", e, m[1], v, m[2], s.log())
			}
			s.secrets = append(s.secrets, v)
			s.env = append(s.env, m[1]+"="+v)
			continue
		}
		out := s.foreground(e, c)
		outs = append(outs, output{command: c, stdout: out})
		s.capture(out)
	}
	return outs
}

// foreground runs one command to its end and returns its standard output.
func (s *session) foreground(e example, c string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", c)
	cmd.Dir, cmd.Env = s.dir, s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	fmt.Fprintf(&s.transcript, "%s%s", stdout.String(), stderr.String())
	if err != nil {
		s.t.Fatalf("%s: %q failed: %v\n%s", e, s.redact(c), err, s.log())
	}
	var answer map[string]json.RawMessage
	if json.Unmarshal(stdout.Bytes(), &answer) == nil && answer["error"] != nil {
		s.t.Fatalf("%s: %q answered an error: %s\n%s", e, s.redact(c), s.redact(stdout.String()), s.log())
	}
	return stdout.String()
}

// start runs a command that keeps running in the background.
func (s *session) start(e example, c string) {
	s.t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+c)
	cmd.Dir, cmd.Env = s.dir, s.env
	b := &backgroundCmd{command: c, cmd: cmd, out: &meshtest.Logs{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.out, b.out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("%s: start %q: %v", e, c, err)
	}
	go func() { _ = cmd.Wait(); close(b.done) }()
	s.mu.Lock()
	s.background = append(s.background, b)
	s.mu.Unlock()
	s.waitReady(e, b)
}

// waitReady waits until a background command says it works, if it is one
// that says so, and fails if it ends first.
func (s *session) waitReady(e example, b *backgroundCmd) {
	s.t.Helper()
	for _, r := range readiness {
		if !r.command.MatchString(b.command) {
			continue
		}
		meshtest.Eventually(s.t, time.Minute, func() bool {
			select {
			case <-b.done:
				s.t.Fatalf("%s: %q ended: %s", e, s.redact(b.command), s.redact(b.out.String()))
			default:
			}
			return r.ready.MatchString(b.out.String())
		}, func() string {
			return fmt.Sprintf("%s: %q printed: %s", e, s.redact(b.command), s.redact(b.out.String()))
		})
		return
	}
}

// stillRunning fails the test if a background command of the example ended.
func (s *session) stillRunning(e example) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.background {
		select {
		case <-b.done:
			s.t.Errorf("%s: %q stopped: %s", e, s.redact(b.command), s.redact(b.out.String()))
		default:
		}
	}
}

// backgroundOutput is what the background command matching re printed.
func (s *session) backgroundOutput(re *regexp.Regexp) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.background {
		if re.MatchString(b.command) {
			return b.out.String()
		}
	}
	return ""
}

// redact hides every secret the session has seen in text.
func (s *session) redact(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "[secret]")
	}
	return text
}

// log is the transcript so far, without secrets.
func (s *session) log() string { return s.redact(s.transcript.String()) }

// capture keeps the values the docs tell the reader to copy from an answer
// for the placeholders of later commands.
func (s *session) capture(out string) {
	// A sign-in link is a credential until it is used.
	s.secrets = append(s.secrets, signInLink.FindAllString(out, -1)...)
	var v struct {
		AgentID      string `json:"agent_id"`
		PairingToken string `json:"pairing_token"`
		APIKey       string `json:"api_key"`
		Credential   string `json:"credential"`
	}
	if json.Unmarshal([]byte(out), &v) != nil {
		return
	}
	if v.Credential != "" {
		s.secrets = append(s.secrets, v.Credential)
	}
	if v.PairingToken != "" {
		s.secrets = append(s.secrets, v.PairingToken)
		s.placeholders["<PAIRING_CODE>"] = v.PairingToken
	} else if v.AgentID != "" && s.placeholders["<agent_id>"] == "" {
		s.placeholders["<agent_id>"] = v.AgentID
	}
	if v.APIKey != "" {
		s.secrets = append(s.secrets, v.APIKey)
		s.placeholders["a2akey_…"] = v.APIKey
	}
}

// signInLink is a link `a2a-platform login` prints.
var signInLink = regexp.MustCompile(`https?://\S+/login\?code=\S+`)

// helpOf runs one of the programs (a2a-platform, a2a-runtime, a2a-adapter)
// with args in a fresh HOME and returns what it printed.
func helpOf(t *testing.T, program string, args []string) (string, error) {
	t.Helper()
	bin := map[string]string{"a2a-platform": bins.Platform, "a2a-runtime": bins.Runtime, "a2a-adapter": bins.Adapter}[program]
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
