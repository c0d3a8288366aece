package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// ScaleReport is what many connected runtimes cost the platform: `a2a-platform
// up` as its own process (the NATS server is in it), runtimes connected over
// real NATS connections through the auth callout from the bench process.
type ScaleReport struct {
	Runtimes int `json:"runtimes"`
	// AttachSeconds is how long creating, pairing and attaching them took.
	AttachSeconds float64 `json:"attach_seconds"`
	// ConnectSeconds is how long connecting them (callout, hello, first
	// heartbeat) took, 32 at a time.
	ConnectSeconds float64 `json:"connect_seconds"`
	// ConnectRetries counts connections refused and tried again.
	ConnectRetries int `json:"connect_retries"`
	// PlatformRSSBeforeMB and PlatformRSSAfterMB are the platform process's
	// resident memory with the agents and runtimes created, before the
	// runtimes connected and as soon as all of them are (idle: none has
	// been given work yet).
	PlatformRSSBeforeMB float64 `json:"platform_rss_before_mb"`
	PlatformRSSAfterMB  float64 `json:"platform_rss_after_mb"`
	// PerRuntimeKiB is the difference per connected idle runtime.
	PerRuntimeKiB float64 `json:"per_runtime_kib"`
	// ServerHeapPerRuntimeKiB and PlatformHeapPerRuntimeKiB split the
	// live Go heap the runtimes added (after a collection) between what
	// the NATS server's code allocated (connections, subscriptions,
	// imports) and the rest: the services and their clients. RSS holds
	// more than the live heap: goroutine stacks, and heap the collector
	// has not returned yet.
	ServerHeapPerRuntimeKiB   float64 `json:"server_heap_per_runtime_kib"`
	PlatformHeapPerRuntimeKiB float64 `json:"platform_heap_per_runtime_kib"`
	// GoroutinesPerRuntime is the platform process's goroutines added per
	// connected runtime.
	GoroutinesPerRuntime float64 `json:"goroutines_per_runtime"`
	// StackPerRuntimeKiB is the goroutine stack memory the runtimes added.
	StackPerRuntimeKiB float64 `json:"stack_per_runtime_kib"`
	// ConnectCPUUs is the platform process's CPU time per runtime
	// connected: the auth callout, hello and the first heartbeat, as a
	// runtime pays again each time its connection's authorisation expires.
	ConnectCPUUs float64 `json:"connect_cpu_us"`
	// HeartbeatCPUUs is the platform process's CPU time per heartbeat,
	// every runtime sending one (32 at a time): what idle runtimes cost it
	// at their heartbeat interval.
	HeartbeatCPUUs float64 `json:"heartbeat_cpu_us"`
	// Dispatch is created -> claimed with one task per agent in flight.
	Dispatch Summary `json:"dispatch_latency"`
	// StopMs and ReadyMs are a graceful stop, and a start until /readyz,
	// with every agent and runtime stored.
	StopMs  float64 `json:"stop_ms"`
	ReadyMs float64 `json:"ready_ms"`
}

// connectTries is how often a runtime of the scale phase tries to
// connect, and createTries how often a task run's creation is sent.
const (
	connectTries = 3
	createTries  = 3
)

// scaleProfileWindow is how long the CPU profile of the dispatch burst
// runs, from its start.
const scaleProfileWindow = 10 * time.Second

// profileCPU writes a CPU profile of the process serving pprof at base,
// taken over window from now, to path; the channel receives the outcome.
// An empty path profiles nothing.
func profileCPU(ctx context.Context, base, path string, window time.Duration) <-chan error {
	done := make(chan error, 1)
	if path == "" {
		done <- nil
		return done
	}
	go func() {
		done <- saveProfile(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(window.Seconds())), path)
	}()
	return done
}

// saveProfile writes the profile served at url to path; an empty path
// writes nothing.
func saveProfile(ctx context.Context, url, path string) error {
	if path == "" {
		return nil
	}
	return getText(ctx, url, func(r io.Reader) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

// measureScale connects cfg.ScaleRuntimes runtimes to a platform process and
// reads what they cost it.
func (r *Report) measureScale(ctx context.Context, dir string, cfg Config) error {
	n := cfg.ScaleRuntimes
	data := filepath.Join(dir, "scale-data")
	up, err := newUpCommand(data)
	if err != nil {
		return err
	}
	base, natsAddr, args, env := up.base, up.natsAddr, up.args, up.env
	pprofAddr, err := freePort()
	if err != nil {
		return err
	}
	args = append(args, "--pprof-listen", pprofAddr)
	profiles := "http://" + pprofAddr
	plat, err := startChild(dir, filepath.Join(cfg.BinDir, "a2a-platform"), env, args...)
	if err != nil {
		return err
	}
	defer func() { plat.stop() }()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := waitReady(rctx, base, time.Now()); err != nil {
		return err
	}
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(data))
	if err != nil {
		return err
	}
	owner, err := restclient.New(base, restclient.WithOwnerToken(token))
	if err != nil {
		return err
	}
	rep := ScaleReport{Runtimes: n}

	began := time.Now()
	ids, err := parallel(n, 16, func(i int) (meshapi.AttachResponse, error) { return attachOverHTTP(ctx, owner, base, i) })
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	rep.AttachSeconds = time.Since(began).Seconds()
	before, cpuBefore, err := procStats(plat.cmd.Process.Pid)
	if err != nil {
		return err
	}
	heapBefore, err := readHeapSplit(ctx, profiles)
	if err != nil {
		return err
	}

	began = time.Now()
	var retries atomic.Int64
	transports, err := parallel(n, 32, func(i int) (runtimeengine.Transport, error) {
		a := ids[i]
		// Like a2a-runtime start, a runtime whose connection was refused
		// tries again: when thousands connect at once, the auth callout
		// may not admit each one within the server's auth timeout.
		for try := 1; ; try++ {
			t, _, err := runtimeengine.DialNATS(ctx, runtimeengine.NATSConfig{
				URL: "nats://" + natsAddr, Token: a.RuntimeToken, AgentID: a.AgentID, RuntimeID: a.RuntimeID,
				InboxPrefix: a.NATS.InboxPrefix, ClaimWait: 20 * time.Second, ConnectTimeout: 30 * time.Second,
			})
			if err != nil && try < connectTries && ctx.Err() == nil {
				retries.Add(1)
				time.Sleep(time.Duration(try) * 500 * time.Millisecond)
				continue
			}
			if err != nil {
				return nil, err
			}
			return t, t.Heartbeat(ctx, meshapi.HeartbeatRequest{})
		}
	})
	rep.ConnectRetries = int(retries.Load())
	defer func() {
		for _, t := range transports {
			if t != nil {
				t.Close()
			}
		}
	}()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	rep.ConnectSeconds = time.Since(began).Seconds()
	after, cpuAfter, err := procStats(plat.cmd.Process.Pid)
	if err != nil {
		return err
	}
	rep.ConnectCPUUs = usPer(cpuAfter-cpuBefore, int64(n))
	rep.PlatformRSSBeforeMB = float64(before) / (1 << 20)
	rep.PlatformRSSAfterMB = float64(after) / (1 << 20)
	rep.PerRuntimeKiB = float64(after-before) / 1024 / float64(n)
	heapAfter, err := readHeapSplit(ctx, profiles)
	if err != nil {
		return err
	}
	rep.ServerHeapPerRuntimeKiB = float64(heapAfter.Server-heapBefore.Server) / 1024 / float64(n)
	rep.PlatformHeapPerRuntimeKiB = float64(heapAfter.Other-heapBefore.Other) / 1024 / float64(n)
	rep.GoroutinesPerRuntime = float64(heapAfter.Goroutines-heapBefore.Goroutines) / float64(n)
	rep.StackPerRuntimeKiB = float64(heapAfter.Stacks-heapBefore.Stacks) / 1024 / float64(n)
	if err := saveProfile(ctx, profiles+"/debug/pprof/heap?gc=1", cfg.ScaleHeapProfile); err != nil {
		return fmt.Errorf("heap profile of the idle runtimes: %w", err)
	}

	if rep.HeartbeatCPUUs, err = heartbeatAll(ctx, plat.cmd.Process.Pid, transports); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	// From here on every runtime heartbeats as a2a-runtime does, so none
	// is offline when its task comes, however long the burst takes.
	stopBeats := keepOnline(ctx, transports, scaleHeartbeatInterval)

	profiled := profileCPU(ctx, profiles, cfg.ScaleCPUProfile, scaleProfileWindow)
	if rep.Dispatch, err = dispatchAll(ctx, owner, ids, transports); err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	if err := <-profiled; err != nil {
		return fmt.Errorf("CPU profile of the dispatch: %w", err)
	}
	stopBeats()
	for i, t := range transports {
		t.Close()
		transports[i] = nil
	}

	began = time.Now()
	plat.stop()
	rep.StopMs = ms(time.Since(began))
	began = time.Now()
	if plat, err = startChild(dir, filepath.Join(cfg.BinDir, "a2a-platform"), env, args...); err != nil {
		return err
	}
	// A wait of its own: the first one's time went into the phases above.
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	d, err := waitReady(sctx, base, began)
	if err != nil {
		return err
	}
	rep.ReadyMs = ms(d)
	r.Scale = &rep
	return nil
}

// attachOverHTTP creates agent i, issues a pairing code and attaches a
// runtime with it, as `a2a-runtime pair` does.
func attachOverHTTP(ctx context.Context, owner *restclient.Client, base string, i int) (meshapi.AttachResponse, error) {
	var att meshapi.AttachResponse
	var agent struct {
		AgentID string `json:"agent_id"`
	}
	if _, err := owner.Do(ctx, http.MethodPost, "/agent-accounts", nil, map[string]any{"name": fmt.Sprintf("scale-%d", i)}, &agent); err != nil {
		return att, err
	}
	var code struct {
		PairingToken string `json:"pairing_token"`
	}
	if _, err := owner.Do(ctx, http.MethodPost, "/agent-accounts/"+agent.AgentID+"/pairing-codes", nil, nil, &code); err != nil {
		return att, err
	}
	anon, err := restclient.New(base)
	if err != nil {
		return att, err
	}
	body := map[string]any{"pairing_token": code.PairingToken, "device_name": "bench", "local_executor": map[string]any{"type": "custom"}}
	_, err = anon.Do(ctx, http.MethodPost, "/agent-runtimes/runtime/attach-via-pairing", nil, body, &att)
	return att, err
}

// scaleHeartbeatInterval is how often the scale phase's runtimes heartbeat
// once connected: as often as a2a-runtime does with the default timeout.
const scaleHeartbeatInterval = mesh.DefaultHeartbeatTimeout / 3

// keepOnline heartbeats every runtime each interval, spread over it, until
// the returned function is called (which waits for the loop to end).
func keepOnline(ctx context.Context, ts []runtimeengine.Transport, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval / time.Duration(len(ts)))
		defer tick.Stop()
		for i := 0; ; i = (i + 1) % len(ts) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			go func() { _ = ts[i].Heartbeat(ctx, meshapi.HeartbeatRequest{}) }()
		}
	}()
	return func() { cancel(); <-done }
}

// heartbeatAll sends one heartbeat from every runtime, 32 at a time, and
// returns the platform process's CPU time per heartbeat.
func heartbeatAll(ctx context.Context, pid int, ts []runtimeengine.Transport) (float64, error) {
	_, before, err := procStats(pid)
	if err != nil {
		return 0, err
	}
	if _, err := parallel(len(ts), 32, func(i int) (struct{}, error) {
		return struct{}{}, ts[i].Heartbeat(ctx, meshapi.HeartbeatRequest{})
	}); err != nil {
		return 0, err
	}
	_, after, err := procStats(pid)
	if err != nil {
		return 0, err
	}
	return usPer(after-before, int64(len(ts))), nil
}

// retryable reports whether a runtime's request failed only for want of an
// answer in time (the platform under a burst), so a runtime asks again.
func retryable(err error) bool {
	code := mesh.AsError(err).Code
	return code == mesh.CodeTimeout || code == mesh.CodeUnavailable
}

// dispatchAll gives every agent one task at once and times each from its
// creation to its claim by the agent's runtime.
func dispatchAll(ctx context.Context, owner *restclient.Client, ids []meshapi.AttachResponse, ts []runtimeengine.Transport) (Summary, error) {
	created := make([]time.Time, len(ids))
	claimed := make([]time.Time, len(ids))
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				run, err := claimOne(ctx, t)
				if err != nil && retryable(err) && ctx.Err() == nil {
					// As the runtime does, a request for work the platform
					// did not answer in time is asked again.
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if run == nil {
					continue
				}
				claimed[i] = time.Now()
				errs <- t.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt})
				return
			}
		}()
	}
	if _, err := parallel(len(ids), 16, func(i int) (struct{}, error) {
		created[i] = time.Now()
		body := map[string]any{"target_agent_id": ids[i].AgentID, "input": map[string]any{"text": "scale"}, "idempotency_key": "scale-" + ids[i].AgentID}
		// As an API client should, a creation answered 503 (nothing
		// stored, try again: a service did not answer in time under the
		// burst) is sent again after its Retry-After, with the same
		// idempotency key. Its dispatch time counts from the first try.
		for try := 1; ; try++ {
			_, err := owner.Do(ctx, http.MethodPost, "/task-runs", nil, body, nil)
			if restclient.StatusOf(err) != http.StatusServiceUnavailable || try == createTries {
				return struct{}{}, err
			}
			select {
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
				return struct{}{}, ctx.Err()
			}
		}
	}); err != nil {
		return Summary{}, err
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return Summary{}, err
		}
	}
	var l latencies
	for i := range ids {
		l.add(claimed[i].Sub(created[i]))
	}
	return l.summary(), nil
}

// parallel runs f for 0..n-1, width at a time, and returns the results in
// order, or the first error.
func parallel[T any](n, width int, f func(i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	failed := make([]int, 0)
	for i, err := range errs {
		if err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) > 0 {
		sort.Ints(failed)
		return out, fmt.Errorf("%d of %d failed, first: %w", len(failed), n, errs[failed[0]])
	}
	return out, nil
}
