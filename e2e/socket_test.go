package e2e

import (
	"path/filepath"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// The runtime only connects outward: while it is online and while it works
// on a task, it holds no listening TCP socket, over either transport.
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
		check := func(when string) {
			t.Helper()
			socks := socketsOf(t, c.rt.pid())
			if lst := listening(socks); len(lst) != 0 {
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
		check("while online")
		run := c.task("work")
		waitStatus(t, p.Platform, run.ID, mesh.StatusRunning, waitStart)
		waitFile(t, filepath.Join(dir, "started"))
		check("while working on a task")
		touch(t, filepath.Join(dir, "go"))
		waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
		removeFile(t, filepath.Join(dir, "go"))
		removeFile(t, filepath.Join(dir, "started"))
		c.rt.kill()
	}
}
