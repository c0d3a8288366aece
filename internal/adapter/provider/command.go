package provider

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// DefaultMaxStdoutBytes caps a command's stdout, which becomes output.text.
const DefaultMaxStdoutBytes = 16 << 20

// CommandConfig configures the command provider.
type CommandConfig struct {
	// Argv is the command and its arguments. Required. A bare name is looked
	// up in PATH.
	Argv []string
	// Env is the base environment of the command; the task's A2A_ variables
	// (see Task.Env) are added to it. The adapter passes its own environment
	// so that hosts find their PATH, HOME and credentials. Nil means an empty
	// base.
	Env []string
	// KillGrace is the time between SIGINT and SIGKILL when a task is
	// stopped. Default DefaultKillGrace.
	KillGrace time.Duration
	// MaxArtifactBytes caps each file in the output directory. Default
	// DefaultMaxArtifactBytes.
	MaxArtifactBytes int64
	// MaxStdoutBytes caps stdout. Default DefaultMaxStdoutBytes.
	MaxStdoutBytes int64
}

// Command runs a command per task: the task text on stdin, the task in A2A_
// environment variables (see Task.Env), the caller's environment variables
// (see Task.CallerEnv), the conversation's own directory as working
// directory. stdout, without its trailing line ends, becomes
// output.text, and files written to $A2A_OUTPUT_DIR become artifact write
// requests. Lines on stderr starting with "progress:" are progress reports
// (see ParseProgressLine), and a line starting with "usage:" reports
// what the run spent (see ParseUsageLine), which becomes output.usage. When the run has the mesh's tools, A2A_MCP_CONFIG
// names their MCP configuration (see commandMCPEnv). A non-zero exit is a failure quoting the exit
// status and the end of stderr.
type Command struct {
	cfg  CommandConfig
	path string
}

// NewCommand checks cfg and resolves the command to an absolute path, so a
// missing command is reported when the adapter starts rather than on the
// first task.
func NewCommand(cfg CommandConfig) (*Command, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, ErrNoCommand
	}
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", cfg.Argv[0], err)
	}
	// The command runs in the conversation's directory, against which a
	// relative path would be resolved.
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("command %q: %w", cfg.Argv[0], err)
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if cfg.MaxStdoutBytes <= 0 {
		cfg.MaxStdoutBytes = DefaultMaxStdoutBytes
	}
	cfg.Argv = slices.Clone(cfg.Argv)
	return &Command{cfg: cfg, path: path}, nil
}

// Name returns "command".
func (c *Command) Name() string { return "command" }

// Run runs the command for t and returns when it and everything it started
// are gone.
func (c *Command) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	if err := t.PrepareDirs(); err != nil {
		return nil, err
	}
	// The outputs travel in the reply; the conversation directory stays.
	defer func() { _ = t.RemoveRunDir() }()
	toolEnv, err := commandMCPEnv(t)
	if err != nil {
		return nil, err
	}

	stdout := &cappedBuffer{max: c.cfg.MaxStdoutBytes}
	report := progressLines(progress)
	var usage *mesh.Usage
	err = RunProcess(ctx, Process{
		Path:   c.path,
		Args:   c.cfg.Argv,
		Dir:    t.Workdir,
		Env:    append(append(append(slices.Clip(c.cfg.Env), t.CallerEnv()...), t.Env()...), toolEnv...),
		Stdin:  strings.NewReader(t.Text),
		Stdout: stdout,
		StderrLine: func(line string) {
			if u, ok := ParseUsageLine(line); ok {
				usage = u
				return
			}
			if report != nil {
				report(line)
			}
		},
		KillGrace: c.cfg.KillGrace,
	})
	name := filepath.Base(c.path)
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", name, err)
	}
	if stdout.overflow {
		return nil, fmt.Errorf("command %s: output larger than %d bytes", name, c.cfg.MaxStdoutBytes)
	}
	artifacts, err := CollectArtifacts(t.OutputDir, c.cfg.MaxArtifactBytes)
	if err != nil {
		return nil, err
	}
	output := map[string]any{"text": strings.TrimRight(string(stdout.buf), "\r\n")}
	if len(artifacts) > 0 {
		output["artifacts"] = artifacts
	}
	if usage != nil {
		output["usage"] = usage
	}
	return &Result{Output: output}, nil
}

// progressLines turns progress-prefixed stderr lines into progress reports.
func progressLines(progress func(Progress)) func(string) {
	if progress == nil {
		return nil
	}
	return func(line string) {
		if p, ok := ParseProgressLine(line); ok {
			progress(p)
		}
	}
}

// cappedBuffer keeps at most max bytes and notes whether more came. It never
// fails a write, so the host is never blocked on a full pipe.
type cappedBuffer struct {
	max      int64
	buf      []byte
	overflow bool
}

// Write keeps what fits under the cap and reports all of p written.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := b.max - int64(len(b.buf))
	if int64(len(p)) > room {
		b.overflow = true
		p = p[:max(room, 0)]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}
