package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/gomaxprocs"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// schedTrace has Go's scheduler print a line to standard error every 10 ms,
// naming the processors the program runs Go code on ("gomaxprocs=N").
const schedTrace = "GODEBUG=schedtrace=10"

var schedLine = regexp.MustCompile(`SCHED \d+ms: gomaxprocs=(\d+)`)

// waitProcessors waits until p's scheduler has said, three times after
// the program printed ready, how many processors it runs Go code on, and
// returns what it said each time.
func waitProcessors(t *testing.T, p *proc, ready string) []string {
	t.Helper()
	var said []string
	meshtest.Eventually(t, waitStart, func() bool {
		out := p.stderr.String()
		i := strings.Index(out, ready)
		if i < 0 {
			return false
		}
		said = said[:0]
		for _, m := range schedLine.FindAllStringSubmatch(out[i:], -1) {
			said = append(said, m[1])
		}
		return len(said) >= 3
	}, func() string { return fmt.Sprintf("%s's scheduler said %v after %q", p.name, said, ready) })
	return said
}

// The runtime and the adapter relay a run: their own work is a little
// decoding and writing between waits, and Go's scheduler waking the
// machine's other processors between those waits cost them more CPU than
// the work. Both run Go code on one processor, whatever the machine has,
// and they still serve runs; GOMAXPROCS set in their environment wins.
func TestProcessors_TheRuntimeAndTheAdapterRunGoCodeOnOneProcessor(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	a := l.startAdapterEnv([]string{schedTrace}, "echo")
	m := l.newMachine()
	paired := m.pair(p.Platform, p.CreateAgent("one processor").ID, a.Endpoint)
	rt := l.start("a2a-runtime start", append(m.env(), schedTrace), bins.Runtime, "start", "--log-level", "debug")
	rt.waitOutput(t, `"message":"runtime started"`, waitStart)
	waitOnline(t, p.Platform, paired.AgentID, paired.RuntimeID)

	want := fmt.Sprint(gomaxprocs.Relay)
	for _, c := range []struct {
		p     *proc
		ready string
	}{{a.proc, "a2a-adapter listening on http://"}, {rt, `"message":"runtime started"`}} {
		for _, n := range waitProcessors(t, c.p, c.ready) {
			if n != want {
				t.Errorf("%s runs Go code on %s processors, want %s", c.p.name, n, want)
			}
		}
	}
	run := waitEnded(t, p.Platform, p.CreateTask(paired.AgentID, "still served").ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(run.Output), "still served") {
		t.Errorf("run output %s", run.Output)
	}

	set := l.startAdapterEnv([]string{schedTrace, gomaxprocs.EnvVar + "=2"}, "echo")
	for _, n := range waitProcessors(t, set.proc, "a2a-adapter listening on http://") {
		if n != "2" {
			t.Errorf("an adapter started with %s=2 runs Go code on %s processors", gomaxprocs.EnvVar, n)
		}
	}
}
