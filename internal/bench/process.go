package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/freeport"
)

// procStats reads resident memory (bytes) and CPU time (user+system) of a
// process from /proc (Linux).
func procStats(pid int) (rss int64, cpu time.Duration, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return rss, 0, err
	}
	// Fields after the command name (which may hold spaces) start after ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	if len(fields) > 12 {
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		cpu = time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	return rss, cpu, nil
}

// child is a started program whose output is kept in a file.
type child struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process exited and was reaped
	err  error         // its exit, once done is closed
}

func startChild(dir, name string, env []string, args ...string) (*child, error) {
	logPath := filepath.Join(dir, filepath.Base(name)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	c := &child{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

// wait waits for the process to exit and returns how it did.
func (c *child) wait() error {
	<-c.done
	return c.err
}

func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// waitReady polls GET /readyz until it answers 200 and returns how long that took since start.
func waitReady(ctx context.Context, base string, start time.Time) (time.Duration, error) {
	client := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s never became ready", base)
}

// upCommand is an `a2a-platform up` the bench runs as its own process, on
// ports of its own and with warnings only in its log.
type upCommand struct {
	base, natsAddr string
	args, env      []string
}

func newUpCommand(data string) (upCommand, error) {
	httpAddr, err := freePort()
	if err != nil {
		return upCommand{}, err
	}
	natsAddr, err := freePort()
	if err != nil {
		return upCommand{}, err
	}
	return upCommand{
		base: "http://" + httpAddr, natsAddr: natsAddr,
		args: []string{"up", "--data-dir", data, "--http", httpAddr, "--nats-listen", natsAddr},
		env:  []string{"A2A_MESH_LOG_LEVEL=warn"},
	}, nil
}

// freePort returns a reserved free loopback address (package freeport).
func freePort() (string, error) { return freeport.Addr() }
