//go:build linux

package provider

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A host's tool that started a process in a session of its own (setsid)
// is out of the host's process group; stopping the task still ends it, on
// cancel and when the host exits by itself, and whether its parent is
// still there or already gone.
func TestRunProcess_StopsDescendantsThatLeftTheGroup(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		cancel       bool
	}{
		{"cancel, parent waiting", "setsid sleep 301 &\necho $! > \"$PIDS/child\"\nwait\n", true},
		{"cancel, parent gone", "sh -c 'setsid sleep 302 & echo $! > \"$PIDS/child\"' \nwhile :; do sleep 1; done\n", true},
		{"host exits, child left", "setsid sleep 303 &\necho $! > \"$PIDS/child\"\nwhile [ ! -f \"$PIDS/go\" ]; do sleep 0.05; done\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script := writeScript(t, dir, "host.sh", tc.script)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- RunProcess(ctx, Process{Path: script, Args: []string{script}, Dir: dir, Env: testEnv("PIDS=" + dir), KillGrace: 300 * time.Millisecond})
			}()
			child := readPID(t, dir+"/child")
			if tc.cancel {
				cancel()
			} else {
				writeScript(t, dir, "go", "")
			}
			select {
			case err := <-done:
				if tc.cancel && !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RunProcess did not return")
			}
			if !processGone(child) {
				t.Fatalf("the host's setsid child %d outlived its task", child)
			}
		})
	}
}
