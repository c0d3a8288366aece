package provider

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

func newTestCommand(t *testing.T, cfg CommandConfig) *Command {
	t.Helper()
	if cfg.Env == nil {
		cfg.Env = testEnv()
	}
	c, err := NewCommand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runCommand(t *testing.T, c *Command, task *Task) (*Result, error) {
	t.Helper()
	return c.Run(context.Background(), task, nil)
}

func TestCommand_StdinIsTaskTextAndStdoutIsOutputText(t *testing.T) {
	dir := t.TempDir()
	c := newTestCommand(t, CommandConfig{Argv: []string{writeScript(t, dir, "upper.sh", `tr a-z A-Z; echo`)}})

	res, err := runCommand(t, c, newTestTask(t, dir, "conv-1", "run-1", "hello, agent"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "HELLO, AGENT" {
		t.Fatalf("output.text = %q, want the upper-cased input without the trailing newline", got)
	}
	if _, ok := res.Output["artifacts"]; ok {
		t.Fatal("output.artifacts present without output files")
	}
}

func TestCommand_EnvironmentDescribesTheTask(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "env.sh", `
printf 'run=%s\n' "$A2A_TASK_RUN_ID"
printf 'conv=%s\n' "$A2A_CONVERSATION_ID"
printf 'instr=%s\n' "$(printf %s "$A2A_INSTRUCTIONS" | tr '\n' '|')"
printf 'instrfile=%s\n' "$(tr '\n' '|' < "$A2A_INSTRUCTIONS_FILE")"
printf 'out=%s\n' "$A2A_OUTPUT_DIR"
printf 'pwd=%s\n' "$(pwd -P)"
printf 'json=%s\n' "$A2A_TASK_JSON"
printf 'file=%s\n' "$(cat "$A2A_TASK_FILE")"
printf 'base=%s\n' "$BASE_VAR"
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}, Env: testEnv("BASE_VAR=kept")})
	raw := `{"task_run_id":"run-7","conversation_id":"conv-7","input":{"text":"x"},"instructions":"Be brief.","future_field":1}`
	req := adapterapi.RunTaskRequest{TaskRunID: "run-7", ConversationID: "conv-7", Input: []byte(`{"text":"x"}`), Instructions: "Be brief."}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	task := NewTask(req, []byte(raw), root, "You are a test agent.")

	res, err := runCommand(t, c, task)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(res.Output["text"].(string), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"run":       "run-7",
		"conv":      "conv-7",
		"instr":     "You are a test agent.||Be brief.",
		"instrfile": "You are a test agent.||Be brief.",
		"out":       task.OutputDir,
		"pwd":       filepath.Join(root, "conv-7"),
		"json":      raw,
		"file":      raw,
		"base":      "kept",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestCommand_NonZeroExitFailsWithStatusAndStderrTail(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "fail.sh", `
i=0
while [ $i -lt 100 ]; do echo "noise line $i padding padding padding" >&2; i=$((i+1)); done
echo "the real reason" >&2
exit 3
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}})

	_, err := runCommand(t, c, newTestTask(t, dir, "conv", "run", ""))
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("err = %v, want an *ExitError", err)
	}
	if exit.Code != 3 {
		t.Fatalf("exit code = %d, want 3", exit.Code)
	}
	msg := err.Error()
	if !strings.Contains(msg, "exited with status 3") || !strings.HasSuffix(msg, "the real reason") {
		t.Fatalf("message %q lacks the status or the end of stderr", msg)
	}
	if strings.Contains(msg, "noise line 0 ") || len(exit.StderrTail) > stderrTailBytes {
		t.Fatalf("stderr tail is %d bytes, want at most the last %d", len(exit.StderrTail), stderrTailBytes)
	}
}

func TestCommand_ProgressLinesOnStderrAreReported(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "progress.sh", `
echo "progress: 40% reading the files" >&2
echo "not a progress line" >&2
echo "progress:   almost there  " >&2
echo done
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}})
	var mu sync.Mutex
	var got []Progress
	res, err := c.Run(context.Background(), newTestTask(t, dir, "conv", "run", ""), func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output["text"] != "done" {
		t.Fatalf("output.text = %q", res.Output["text"])
	}
	if len(got) != 2 {
		t.Fatalf("got %d progress reports, want 2: %+v", len(got), got)
	}
	if got[0].Message != "reading the files" || got[0].Percent == nil || *got[0].Percent != 40 {
		t.Errorf("first report = %q %v, want \"reading the files\" at 40%%", got[0].Message, got[0].Percent)
	}
	if got[1].Message != "almost there" || got[1].Percent != nil {
		t.Errorf("second report = %q %v, want \"almost there\" without percent", got[1].Message, got[1].Percent)
	}
}

func TestCommand_OutputFilesBecomeArtifactWrites(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "outputs.sh", `
mkdir -p "$A2A_OUTPUT_DIR/reports"
printf '# Result\n' > "$A2A_OUTPUT_DIR/reports/result.md"
printf '{"a":1}' > "$A2A_OUTPUT_DIR/data.json"
printf '\211PNG\r\n\032\n\000\001\002' > "$A2A_OUTPUT_DIR/chart.png"
printf 'plain words' > "$A2A_OUTPUT_DIR/notes"
ln -s /etc/passwd "$A2A_OUTPUT_DIR/link.txt"
echo summary
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}})
	task := newTestTask(t, dir, "conv", "run", "")

	res, err := runCommand(t, c, task)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := adapterapi.ArtifactWrites(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	want := []adapterapi.ArtifactWrite{
		{Filename: "chart.png", MimeType: "image/png", ContentBase64: base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x01\x02"))},
		{Filename: "data.json", MimeType: "application/json", ContentText: `{"a":1}`},
		{Filename: "notes", MimeType: "text/plain", ContentText: "plain words"},
		{Filename: "reports/result.md", MimeType: "text/markdown", ContentText: "# Result\n"},
	}
	if len(writes) != len(want) {
		t.Fatalf("got %d artifact writes, want %d (the symlink skipped): %+v", len(writes), len(want), writes)
	}
	for i := range want {
		w, g := want[i], writes[i]
		if g.Filename != w.Filename || g.MimeType != w.MimeType || g.ContentText != w.ContentText || g.ContentBase64 != w.ContentBase64 {
			t.Errorf("artifact %d = %+v, want %+v", i, g, w)
		}
	}
	if _, err := os.Stat(task.RunDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory still there after the run: %v", err)
	}
}

func TestCommand_OutputFileOverTheCapFailsNamingIt(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "big.sh", `
printf 'small' > "$A2A_OUTPUT_DIR/ok.txt"
printf '0123456789abcdef' > "$A2A_OUTPUT_DIR/big.bin"
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}, MaxArtifactBytes: 10})

	_, err := runCommand(t, c, newTestTask(t, dir, "conv", "run", ""))
	if !errors.Is(err, ErrArtifactTooLarge) || !strings.Contains(err.Error(), "big.bin") {
		t.Fatalf("err = %v, want ErrArtifactTooLarge naming big.bin", err)
	}
}

func TestCommand_StdoutOverTheCapFails(t *testing.T) {
	dir := t.TempDir()
	c := newTestCommand(t, CommandConfig{Argv: []string{writeScript(t, dir, "loud.sh", `printf '%0100d' 0`)}, MaxStdoutBytes: 10})

	_, err := runCommand(t, c, newTestTask(t, dir, "conv", "run", ""))
	if err == nil || !strings.Contains(err.Error(), "output larger than 10 bytes") {
		t.Fatalf("err = %v, want the stdout cap", err)
	}
}

func TestCommand_EachConversationHasItsOwnWorkdir(t *testing.T) {
	dir := t.TempDir()
	// The script answers with what it remembered in this directory, then
	// remembers the new input.
	script := writeScript(t, dir, "memory.sh", `
[ -f memory ] && cat memory
cat > memory
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}})
	steps := []struct{ conv, input, want string }{
		{"conv-a", "alpha", ""},
		{"conv-b", "bravo", ""},
		{"../conv-a", "intruder", ""},
		{"CONV-A", "shouting", ""},
		{"conv-a", "again", "alpha"},
		{"conv-b", "again", "bravo"},
	}
	for i, s := range steps {
		res, err := runCommand(t, c, newTestTask(t, dir, s.conv, "run", s.input))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := res.Output["text"]; got != s.want {
			t.Fatalf("step %d (%s): remembered %q, want %q", i, s.conv, got, s.want)
		}
	}
}

func TestCommand_CancelStopsTheScriptAndItsChild(t *testing.T) {
	dir := t.TempDir()
	c := newTestCommand(t, CommandConfig{
		Argv:      []string{writeScript(t, dir, "spawn.sh", "echo $$ > \"$PIDS/script\"\nsleep 1000 &\necho $! > \"$PIDS/child\"\nwait\n")},
		Env:       testEnv("PIDS=" + dir),
		KillGrace: 200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, newTestTask(t, dir, "conv", "run", ""), nil)
		done <- err
	}()
	script, child := readPID(t, filepath.Join(dir, "script")), readPID(t, filepath.Join(dir, "child"))

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	assertGone(t, "script", script)
	assertGone(t, "background child", child)
}

func TestCommand_TimeoutStopsTheScriptAndItsChild(t *testing.T) {
	dir := t.TempDir()
	c := newTestCommand(t, CommandConfig{
		Argv:      []string{writeScript(t, dir, "spawn.sh", "sleep 1000 &\necho $! > \"$PIDS/child\"\necho $$ > \"$PIDS/script\"\nwait\n")},
		Env:       testEnv("PIDS=" + dir),
		KillGrace: 200 * time.Millisecond,
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	_, err := c.Run(ctx, newTestTask(t, dir, "conv", "run", ""), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	assertGone(t, "script", readPID(t, filepath.Join(dir, "script")))
	assertGone(t, "background child", readPID(t, filepath.Join(dir, "child")))
}

func TestCommand_StopSendsSIGINTBeforeSIGKILL(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "interrupted")
	// The script waits with the wait builtin, which a trapped signal
	// interrupts at once; a foreground sleep would hold the trap back
	// until it ends, and one started just after the group was signalled
	// never gets the signal. Its pid is written once the sleep runs, so
	// the stop cannot come before the wait or the echo. A background
	// job of a script ignores SIGINT: the trap ends it.
	script := writeScript(t, dir, "trap.sh", `
sleep 1000 &
child=$!
trap 'echo SIGINT > "$MARKER"; kill $child; exit 0' INT
echo $$ > "$PIDS/script"
wait $child
`)
	c := newTestCommand(t, CommandConfig{
		Argv:      []string{script},
		Env:       testEnv("PIDS="+dir, "MARKER="+marker),
		KillGrace: 10 * time.Second,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, newTestTask(t, dir, "conv", "run", ""), nil)
		done <- err
	}()
	pid := readPID(t, filepath.Join(dir, "script"))

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return well within the kill grace: the trap did not run")
	}
	b, err := os.ReadFile(marker)
	if err != nil || strings.TrimSpace(string(b)) != "SIGINT" {
		t.Fatalf("trap marker = %q, %v; want SIGINT written by the script's trap", b, err)
	}
	assertGone(t, "script", pid)
}

func TestCommand_BackgroundProcessesEndWithTheTask(t *testing.T) {
	dir := t.TempDir()
	// The child keeps the script's stdout open; the task must still end.
	script := writeScript(t, dir, "leave.sh", "sleep 1000 &\necho $! > \"$PIDS/child\"\necho finished\n")
	c := newTestCommand(t, CommandConfig{Argv: []string{script}, Env: testEnv("PIDS=" + dir), KillGrace: 200 * time.Millisecond})

	res, err := runCommand(t, c, newTestTask(t, dir, "conv", "run", ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Output["text"] != "finished" {
		t.Fatalf("output.text = %q", res.Output["text"])
	}
	assertGone(t, "background child", readPID(t, filepath.Join(dir, "child")))
}

func TestNewCommand(t *testing.T) {
	if _, err := NewCommand(CommandConfig{}); !errors.Is(err, ErrNoCommand) {
		t.Errorf("no argv: err = %v, want ErrNoCommand", err)
	}
	if _, err := NewCommand(CommandConfig{Argv: []string{"a2a-no-such-command-anywhere"}}); err == nil {
		t.Error("a missing command was accepted")
	}
	dir := t.TempDir()
	writeScript(t, dir, "rel.sh", "echo relative\n")
	t.Chdir(dir)
	c, err := NewCommand(CommandConfig{Argv: []string{"./rel.sh"}, Env: testEnv()})
	if err != nil {
		t.Fatal(err)
	}
	// The command runs in the conversation directory, not where the
	// adapter started.
	res, err := runCommand(t, c, newTestTask(t, t.TempDir(), "conv", "run", ""))
	if err != nil || res.Output["text"] != "relative" {
		t.Fatalf("relative command: %v, %v", res, err)
	}
}
