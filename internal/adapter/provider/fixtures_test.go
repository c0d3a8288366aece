package provider

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// writeScript writes an executable sh script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// newTestTask builds a task the way the adapter does.
func newTestTask(t *testing.T, root, conversationID, taskRunID, text string) *Task {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"text": text})
	req := adapterapi.RunTaskRequest{
		TaskRunID:      taskRunID,
		ConversationID: conversationID,
		TaskType:       "chat",
		Input:          input,
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return NewTask(req, raw, root, "")
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPID waits for a script to write a pid into path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, "pid file "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// processGone reports whether pid no longer runs. A zombie has finished
// running; it only waits for init to collect its status, which some
// container inits do lazily.
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	if runtime.GOOS != "linux" {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func assertGone(t *testing.T, what string, pid int) {
	t.Helper()
	eventually(t, 5*time.Second, what+" (pid "+strconv.Itoa(pid)+") to be gone", func() bool { return processGone(pid) })
}

// testEnv is a base environment for scripts: the test's PATH plus extras.
func testEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH")}, extra...)
}
