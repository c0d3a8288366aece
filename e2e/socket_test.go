package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// loopbackHex is 127.0.0.1 as /proc/net/tcp writes a local address.
const loopbackHex = "0100007F:"

// The runtime only connects outward: while it is online it holds no
// listening TCP socket, over either transport. While it works on a task
// it listens on loopback only, for that task's delegation tools
// (docs/delegation.md), over either transport, and stops once its tasks
// have ended.
func TestRuntime_HasNoListeningSocket(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	dir := t.TempDir()
	host := script(t, `
touch '`+dir+`/started'
`+untilFile(filepath.Join(dir, "go"))+`
echo done
`)
	ad := l.startAdapter("command", host)
	// The check finds a listening socket where there is one.
	if socks := listening(socketsOf(t, ad.pid())); len(socks) != 1 {
		t.Fatalf("the adapter holds %d listening sockets, want 1: %+v", len(socks), socks)
	}
	for _, transport := range transports {
		c := l.connect(p, ad.Endpoint, "--transport", transport)
		check := func(when string, tools bool) {
			t.Helper()
			socks := socketsOf(t, c.rt.pid())
			lst := listening(socks)
			switch {
			case tools && (len(lst) != 1 || !strings.HasPrefix(lst[0].local, loopbackHex)):
				t.Errorf("%s runtime %s: listening sockets %+v, want the tool server's on 127.0.0.1 only", transport, when, lst)
			case !tools && len(lst) != 0:
				t.Errorf("%s runtime %s: listening sockets %+v", transport, when, lst)
			}
			established := 0
			for _, s := range socks {
				if s.state == "01" {
					established++
				}
			}
			if established == 0 {
				t.Errorf("%s runtime %s: no connected socket found (is the check blind?): %+v", transport, when, socks)
			}
		}
		check("while online", false)
		run := c.task("work")
		waitStatus(t, p.Platform, run.ID, mesh.StatusRunning, waitStart)
		waitFile(t, filepath.Join(dir, "started"))
		check("while working on a task", true)
		touch(t, filepath.Join(dir, "go"))
		waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
		meshtest.Eventually(t, waitStart, func() bool { return len(listening(socketsOf(t, c.rt.pid()))) == 0 },
			func() string { return transport + " runtime still listens after its task ended" })
		removeFile(t, filepath.Join(dir, "go"))
		removeFile(t, filepath.Join(dir, "started"))
		c.rt.kill()
	}
}
