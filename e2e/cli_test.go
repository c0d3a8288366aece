package e2e

import (
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// a2a-runtime answers misuse as a2a-platform does: a mistyped subcommand
// of a group exits non-zero naming the closest one and the help to read,
// and a wrong flag points to the command's help.
func TestRuntimeCLI_UnknownCommandsAndWrongFlagsAreErrorsThatSayWhatToDo(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	m := l.newMachine()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"profiles", "lst"}, []string{`unknown command "lst" for "a2a-runtime profiles"`, "did you mean list", "a2a-runtime profiles --help"}},
		{[]string{"service", "instal"}, []string{`unknown command "instal" for "a2a-runtime service"`, "did you mean install", "a2a-runtime service --help"}},
		{[]string{"status", "--jsn"}, []string{"unknown flag: --jsn", "a2a-runtime status --help"}},
		{[]string{"pair", "ONE", "TWO"}, []string{"one pairing code", "a2a-runtime pair --help"}},
	} {
		r := m.cli(c.args...)
		if r.code == 0 {
			t.Errorf("%v exited 0: %s", c.args, r)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v does not say %q: %s", c.args, want, r)
			}
		}
	}
}

// A duration or a count the platform cannot run with is refused before
// anything starts: the program exits 2 (a wrong command line) with a
// message naming the flag, never with a panic.
func TestPlatformCLI_BadDurationOrCountFlagExits2NamingTheFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flag  string
		value string
		serve bool
	}{
		{flag: "--lease", value: "-1s"},
		{flag: "--heartbeat-timeout", value: "-1s"},
		{flag: "--pairing-code-ttl", value: "-10m"},
		{flag: "--event-retention", value: "-1h"},
		{flag: "--shutdown-grace", value: "-1s"},
		{flag: "--a2a-blocking-wait", value: "-1s"},
		{flag: "--max-artifact-bytes", value: "-1"},
		{flag: "--a2a-rate-limit-per-minute", value: "-5"},
		{flag: "--delegation-max-depth", value: "-1"},
		{flag: "--lease", value: "-1s", serve: true},
		{flag: "--heartbeat-timeout", value: "-1s", serve: true},
		{flag: "--replicas", value: "9", serve: true},
		{flag: "--replicas", value: "-1", serve: true},
	} {
		verb := "up"
		if c.serve {
			verb = "serve"
		}
		t.Run(verb+" "+c.flag+" "+c.value, func(t *testing.T) {
			t.Parallel()
			l := newLab(t)
			args := []string{verb}
			if c.serve {
				// Nothing listens there: a refused setting must stop the
				// process before it tries to connect.
				args = append(args, "taskqueue", "--nats-url", "nats://"+meshtest.FreeAddr(t))
			}
			args = append(args, "--data-dir", t.TempDir(), "--http", "127.0.0.1:0", "--log-level", "error", c.flag, c.value)
			if !c.serve {
				args = append(args, "--nats-listen", "127.0.0.1:0")
			}
			r := l.run("a2a-platform "+verb, nil, bins.Platform, args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2: %s", r.code, r)
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
				t.Errorf("the platform panicked: %s", r)
			}
			if !strings.Contains(r.stderr, c.flag+" "+c.value) {
				t.Errorf("the message does not name %s %s: %s", c.flag, c.value, r)
			}
		})
	}
}
