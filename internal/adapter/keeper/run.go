package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// pollInterval is how often stopping processes are checked for survivors.
const pollInterval = 20 * time.Millisecond

// killTimeout bounds the SIGKILLs after the grace: only a process stuck in
// the kernel outlasts them.
const killTimeout = 5 * time.Second

// runKeeper is the keeper process: it reads the host's spec, starts the
// host, and once the host exits, the adapter asks or the adapter is gone,
// stops every process below it and reports how the host ended. It returns
// the keeper's exit status.
func runKeeper() int {
	for fd := fdControl; fd <= fdStderr; fd++ {
		// None of the keeper's own ends may reach the host's processes.
		syscall.CloseOnExec(fd)
	}
	control := bufio.NewReader(os.NewFile(fdControl, "control"))
	status := os.NewFile(fdStatus, "status")
	line, err := control.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2a-adapter "+modeArg+" runs one task's host for a2a-adapter; it is not started by hand")
		return 2
	}
	var spec Spec
	if err := json.Unmarshal(line, &spec); err != nil {
		fmt.Fprintf(status, "error 0 bad host spec: %v\n", err)
		return 2
	}
	setName()
	// Without it, processes whose parent exits go to init; the keeper
	// still stops its host's group and the descendants it can see.
	_ = becomeSubreaper()
	stopSignals := make(chan os.Signal, 1)
	signal.Notify(stopSignals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)

	pid, err := syscall.ForkExec(spec.Path, spec.Args, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{fdStdin, fdStdout, fdStderr},
		Sys:   hostProcAttr(),
	})
	for fd := fdStdin; fd <= fdStderr; fd++ {
		// The host has them now; the pipes close once its processes do.
		syscall.Close(fd)
	}
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		fmt.Fprintf(status, "error %d %v\n", int(errno), err)
		return 0
	}
	fmt.Fprintf(status, "started %d\n", pid)

	k := newTree(pid)
	stop := make(chan struct{})
	go func() {
		// End of file: the adapter asked for the stop, or it is gone.
		_, _ = io.Copy(io.Discard, control)
		close(stop)
	}()
	select {
	case <-k.hostDone:
	case <-stop:
	case <-stopSignals:
	}
	k.stop(spec.Grace)
	select {
	case <-k.hostDone:
		fmt.Fprintf(status, "exit %d\n", uint32(k.hostStatus))
	default:
		fmt.Fprintln(status, "stuck")
	}
	return 0
}

// tree is the host and every process below the keeper.
type tree struct {
	pgid       int
	hostDone   chan struct{}
	hostStatus syscall.WaitStatus
	// allGone is closed once the keeper has no child left: as a subreaper
	// it then has no descendant left either.
	allGone chan struct{}
}

// newTree starts collecting the exits of the host pid and of every
// process the keeper adopts.
func newTree(pid int) *tree {
	k := &tree{pgid: pid, hostDone: make(chan struct{}), allGone: make(chan struct{})}
	go k.reap(pid)
	return k
}

func (k *tree) reap(host int) {
	defer close(k.allGone)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: no child left
		}
		if pid == host {
			k.hostStatus = ws
			close(k.hostDone)
		}
	}
}

// gone reports whether no process of the host is left. The group check
// matters where the keeper cannot adopt orphans (macOS): a group member
// whose parent exited is no longer its child.
func (k *tree) gone() bool {
	select {
	case <-k.allGone:
		return !groupAlive(k.pgid)
	default:
		return false
	}
}

// stop sends SIGINT to the host's group and to every descendant of the
// keeper, setsid or not, and SIGKILL to what is left after grace. It
// returns once they are gone, or after killTimeout of SIGKILLs.
func (k *tree) stop(grace time.Duration) {
	if k.gone() {
		return
	}
	k.signal(syscall.SIGINT)
	if k.waitGone(grace) {
		return
	}
	deadline := time.Now().Add(killTimeout)
	for time.Now().Before(deadline) {
		// Again each round: a process may have started another since.
		k.signal(syscall.SIGKILL)
		if k.waitGone(pollInterval) {
			return
		}
	}
}

func (k *tree) signal(sig syscall.Signal) {
	_ = syscall.Kill(-k.pgid, sig)
	for _, pid := range Descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// waitGone waits up to d for the processes to be gone and says whether
// they are.
func (k *tree) waitGone(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	allGone := k.allGone
	for {
		if k.gone() {
			return true
		}
		select {
		case <-deadline.C:
			return k.gone()
		case <-allGone:
			allGone = nil // closed: from now on the group is polled
		case <-tick.C:
		}
	}
}

// groupAlive reports whether any process of the group still exists.
// Signal 0 checks without delivering anything; ESRCH means it is empty.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// below lists every process under root, given each process's children.
func below(children map[int][]int, root int) []int {
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(root)
	return out
}
