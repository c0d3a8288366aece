// Package keeper runs an agent host under a keeper: a small process of its
// own, the adapter's program started again in a hidden mode, that owns
// every process the host starts and ends them all when the task ends, when
// the adapter asks, or when the adapter dies, however it dies.
//
// The keeper learns of the adapter's death from a pipe whose only writer
// is the adapter: the kernel closes it when the adapter's process ends,
// by a crash or SIGKILL as well, and the keeper reads end of file. (A
// parent-death signal would be tied to the thread that started the keeper,
// and a Go program's threads are not the program.) On Linux the keeper is
// the child subreaper of everything below it, so a process the host moved
// to a session of its own (setsid) and left behind is adopted by the
// keeper instead of init, and found by walking /proc.
//
// The keeper's command line is the program's name and the mode word only:
// the host's command, directory and environment reach it over the pipe,
// and its own environment is empty, so nothing of a task is visible in ps.
package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// modeArg is the argument that starts the program as a keeper.
const modeArg = "host-keeper"

// The keeper's file descriptors beyond stdin, stdout and stderr, in the
// order of exec.Cmd.ExtraFiles.
const (
	fdControl = 3 + iota // the adapter's lifeline: the host's spec, then end of file to stop
	fdStatus             // the keeper's reports: started, error, exit
	fdStdin              // the host's stdin
	fdStdout             // the host's stdout
	fdStderr             // the host's stderr
)

// ErrNotEnabled is returned by Start in a program whose main does not call
// Init: starting that program again would not give a keeper.
var ErrNotEnabled = errors.New("this program cannot keep host processes: its main does not call keeper.Init")

// ErrStuck is returned by Wait when processes of the host were still there
// after their SIGKILLs: only a process stuck in the kernel survives them.
var ErrStuck = errors.New("host processes survived SIGKILL")

var enabled atomic.Bool

// Init is called first thing in the main function (and TestMain) of a
// program that runs hosts with Start. When the process was started as a
// keeper, Init runs as one and exits; otherwise it returns at once.
func Init() {
	if len(os.Args) == 2 && os.Args[1] == modeArg {
		// Not os.Exit: in a race-detector build its exit hook waits a
		// second, which every task would wait for; a keeper has nothing
		// else to flush.
		syscall.Exit(runKeeper())
	}
	enabled.Store(true)
}

// Spec is the host a keeper runs.
type Spec struct {
	// Path is the executable; a relative path is resolved against Dir.
	Path string `json:"path"`
	// Args is the full argv, Args[0] included.
	Args []string `json:"args"`
	// Dir is the working directory.
	Dir string `json:"dir"`
	// Env is the whole environment of the host. When a name repeats, the
	// last value wins, as with os/exec.
	Env []string `json:"env"`
	// Grace is the time between SIGINT and SIGKILL when the host's
	// processes are stopped.
	Grace time.Duration `json:"grace"`
}

// Keeper is a running keeper, seen from the program that started it.
type Keeper struct {
	cmd      *exec.Cmd
	control  *os.File
	status   *os.File
	reports  *bufio.Reader
	hostPID  int
	stopOnce sync.Once
}

// Start starts a keeper that runs the host of spec with the given standard
// streams and returns once the host has started. The keeper stops the
// host and everything it started (SIGINT, SIGKILL after spec.Grace) when
// the host exits, when Stop is called, or when this process dies.
func Start(spec Spec, stdin, stdout, stderr *os.File) (*Keeper, error) {
	if !enabled.Load() {
		return nil, ErrNotEnabled
	}
	spec.Env = dedupEnv(spec.Env)
	line, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("host keeper: %w", err)
	}
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("host keeper: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		controlR.Close()
		controlW.Close()
		return nil, fmt.Errorf("host keeper: %w", err)
	}
	cmd := &exec.Cmd{
		Path: self(),
		Args: []string{os.Args[0], modeArg},
		Env:  []string{},
		// A keeper writes nothing unless the Go runtime fails in it; then
		// the adapter's log shows why.
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{controlR, statusW, stdin, stdout, stderr},
		// A group of its own keeps a Ctrl-C meant for the adapter from
		// reaching the keeper: the adapter decides when a task stops.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	controlR.Close()
	statusW.Close()
	if err != nil {
		controlW.Close()
		statusR.Close()
		return nil, fmt.Errorf("start host keeper: %w", err)
	}
	k := &Keeper{cmd: cmd, control: controlW, status: statusR, reports: bufio.NewReader(statusR)}
	// The keeper reads the spec at once; should it have died, the write
	// fails and the report below says so.
	_, _ = controlW.Write(append(line, '\n'))
	if err := k.started(spec.Path); err != nil {
		k.Stop()
		_ = k.cmd.Wait()
		statusR.Close()
		return nil, err
	}
	return k, nil
}

// started reads the keeper's first report: the host's pid, or why it did
// not start.
func (k *Keeper) started(path string) error {
	word, rest := k.report()
	switch word {
	case "started":
		pid, err := strconv.Atoi(rest)
		if err != nil {
			return fmt.Errorf("host keeper: bad report %q", rest)
		}
		k.hostPID = pid
		return nil
	case "error":
		code, msg, _ := strings.Cut(rest, " ")
		if errno, err := strconv.Atoi(code); err == nil && errno > 0 {
			return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(errno)}
		}
		return fmt.Errorf("start %s: %s", path, msg)
	}
	return errors.New("host keeper ended before starting the host")
}

// report reads one line of the keeper's reports, split at its first space;
// the word is empty once the keeper is gone.
func (k *Keeper) report() (word, rest string) {
	line, err := k.reports.ReadString('\n')
	if err != nil {
		return "", ""
	}
	word, rest, _ = strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	return word, rest
}

// HostPID returns the host's process id, which is also its process group.
func (k *Keeper) HostPID() int { return k.hostPID }

// Stop asks the keeper to stop the host and everything it started. It
// does not wait; Wait does.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() { k.control.Close() })
}

// Wait waits until the host and every process it started are gone and the
// keeper has exited, and returns how the host ended.
func (k *Keeper) Wait() (syscall.WaitStatus, error) {
	word, rest := k.report()
	k.Stop()
	k.status.Close()
	waitErr := k.cmd.Wait()
	switch word {
	case "exit":
		n, err := strconv.ParseUint(rest, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("host keeper: bad report %q", rest)
		}
		return syscall.WaitStatus(n), nil
	case "stuck":
		return 0, ErrStuck
	}
	// The keeper itself was killed: end what is left of the host's group,
	// the one part of its processes findable from here.
	_ = syscall.Kill(-k.hostPID, syscall.SIGKILL)
	return 0, fmt.Errorf("host keeper ended before the host's processes: %v", waitErr)
}

// dedupEnv keeps the last entry of each name, in the order of those
// entries: the keeper starts the host with the environment as given, and a
// program that reads the first of two values would see the stale one.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, env[i])
	}
	slices.Reverse(out)
	return out
}

// self is the program to start as a keeper: the very file this process
// runs, even when an upgrade has replaced it on disk since.
func self() string {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe"
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}
