package provider

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunProcess_ReportsTheSignalThatKilledTheHost(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "segv.sh", "echo dying >&2\nkill -TERM $$\n")
	err := RunProcess(context.Background(), Process{Path: script, Args: []string{script}, Dir: dir, Env: testEnv()})
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Signal != syscall.SIGTERM || exit.Code != -1 {
		t.Fatalf("err = %#v, want an ExitError for SIGTERM", err)
	}
	if !strings.Contains(err.Error(), "killed by signal") || !strings.HasSuffix(err.Error(), "dying") {
		t.Fatalf("message = %q", err.Error())
	}
}

func TestRunProcess_HostThatIgnoresSIGINTIsKilledAfterTheGrace(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "stubborn.sh", "trap '' INT\necho $$ > \"$PIDS/script\"\nwhile :; do sleep 1; done\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunProcess(ctx, Process{Path: script, Args: []string{script}, Dir: dir, Env: testEnv("PIDS=" + dir), KillGrace: 100 * time.Millisecond})
	}()
	pid := readPID(t, dir+"/script")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunProcess did not return")
	}
	assertGone(t, "script", pid)
}

func TestRunProcess_StdoutOfAnEmptyStdinHost(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	script := writeScript(t, dir, "cat.sh", "cat; echo end\n")
	if err := RunProcess(context.Background(), Process{Path: script, Args: []string{script}, Dir: dir, Env: testEnv(), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "end\n" {
		t.Fatalf("stdout = %q", out.String())
	}
}

func TestTailBuffer_KeepsTheEnd(t *testing.T) {
	tail := &tailBuffer{max: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstuvwxyz", "0", "12"} {
		_, _ = tail.Write([]byte(s))
	}
	if got := tail.String(); got != "vwxyz012" {
		t.Fatalf("tail = %q, want the last 8 bytes", got)
	}
	multi := &tailBuffer{max: 4}
	_, _ = multi.Write([]byte("xé€")) // the cut lands inside "é"
	if got := multi.String(); got != "€" {
		t.Fatalf("tail = %q, want it to start at a character boundary", got)
	}
}

func TestLineWriter_SplitsLinesAndCapsLongOnes(t *testing.T) {
	var lines []string
	w := &lineWriter{fn: func(s string) { lines = append(lines, s) }}
	_, _ = w.Write([]byte("one\r\ntw"))
	_, _ = w.Write([]byte("o\n" + strings.Repeat("x", maxProgressLine+10) + "\nlast"))
	w.flush()
	if len(lines) != 4 || lines[0] != "one" || lines[1] != "two" || len(lines[2]) != maxProgressLine || lines[3] != "last" {
		t.Fatalf("lines = %q", lines)
	}
}
