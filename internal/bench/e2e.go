package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// stamped wraps the echo provider and notes when each task reaches the adapter.
type stamped struct {
	provider.Echo
	received func(runID string)
}

func (s stamped) Run(ctx context.Context, t *provider.Task, p func(provider.Progress)) (*provider.Result, error) {
	s.received(t.Text)
	return s.Echo.Run(ctx, t, p)
}

// e2eRig is a target platform with runtimes (the runtime engine, over TCP NATS, as
// a2a-runtime runs it) and one echo adapter per runtime over loopback HTTP.
type e2eRig struct {
	tg       target
	ids      []runtimeIdentity
	sent     sync.Map // run id -> time the create call started
	dispatch *latencies
	endToEnd *latencies
	done     atomic.Int64
	finished chan string
	stop     []func()
}

func newE2ERig(ctx context.Context, tg target, runtimes int, workdir string) (*e2eRig, error) {
	r := &e2eRig{tg: tg, dispatch: &latencies{}, endToEnd: &latencies{}, finished: make(chan string, 4096)}
	ids, err := attachRuntimes(ctx, tg, runtimes)
	if err != nil {
		return nil, err
	}
	r.ids = ids
	// Completions are watched on the bus, as any consumer would.
	sub, err := tg.conn.NC.Subscribe(bus.EventFilter("", string(mesh.KindTaskRun), ""), func(m *nats.Msg) {
		if bus.EventType(m.Header) != mesh.EventTaskRunCompleted {
			return
		}
		var run struct {
			Input struct {
				Text string `json:"text"`
			} `json:"input"`
		}
		if json.Unmarshal(m.Data, &run) != nil {
			return
		}
		r.completed(run.Input.Text)
	})
	if err != nil {
		return nil, err
	}
	r.stop = append(r.stop, func() { _ = sub.Unsubscribe() })
	for i, id := range ids {
		t, err := dialRuntime(ctx, tg, id)
		if err != nil {
			return nil, err
		}
		if err := r.startRuntime(ctx, i, id, t, workdir); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// completed notes that the run sent with key completed.
func (r *e2eRig) completed(key string) {
	if v, ok := r.sent.LoadAndDelete(key); ok {
		r.endToEnd.add(time.Since(v.(time.Time)))
		r.done.Add(1)
		select {
		case r.finished <- key:
		default:
		}
	}
}

// startRuntime runs the runtime engine of id on transport t, with an echo
// adapter of its own over loopback HTTP; close stops both.
func (r *e2eRig) startRuntime(ctx context.Context, i int, id runtimeIdentity, t runtimeengine.Transport, workdir string) (err error) {
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	srv, err := adapter.New(adapter.Config{
		Provider: stamped{received: func(key string) {
			if v, ok := r.sent.Load(key); ok {
				r.dispatch.add(time.Since(v.(time.Time)))
			}
		}},
		Workdir: fmt.Sprintf("%s/adapter-%d", workdir, i), Logger: zerolog.Nop(),
	})
	if err != nil {
		return err
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(ln) }()
	r.stop = append(r.stop, func() { _ = srv.Shutdown(context.Background()) })
	ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
	if err != nil {
		return err
	}
	api, _ := restclient.New("http://"+r.tg.httpAddr, restclient.WithRuntimeToken(id.token))
	// The runtime a2a-runtime start builds, so the figures are the shipped
	// runtime's.
	c := runtimeengine.NewRuntime(runtimeengine.RuntimeConfig{
		AgentID: id.agentID, RuntimeID: id.runtimeID, Transport: t, API: api, Adapter: ac, Logger: zerolog.Nop(),
		HeartbeatInterval: 20 * time.Second, RenewInterval: 10 * time.Second, DrainGrace: time.Second,
	})
	cctx, cancel := context.WithCancel(ctx)
	go func() { _ = c.Run(cctx) }()
	r.stop = append(r.stop, func() { cancel(); t.Close() })
	return nil
}

// close stops the runtimes and adapters; closing again does nothing.
func (r *e2eRig) close() {
	for i := len(r.stop) - 1; i >= 0; i-- {
		r.stop[i]()
	}
	r.stop = nil
}

// create sends one task. A runtime may finish it before the create call
// returns, so runs are tracked by a key chosen before the call and carried in
// the input text, which both the adapter and the completion event see.
func (r *e2eRig) create(ctx context.Context, client *meshapi.Client, agentID string) error {
	key := mesh.NewID()
	r.sent.Store(key, time.Now())
	_, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: agentID, Input: textInput(key)})
	if err != nil {
		r.sent.Delete(key)
	}
	return err
}

// sequential sends one task at a time to the first runtime: the dispatch
// latency of an idle system.
func (r *e2eRig) sequential(ctx context.Context, n int) error {
	client := meshapi.NewClient(r.tg.conn.NC)
	for i := 0; i < n; i++ {
		if err := r.create(ctx, client, r.ids[0].agentID); err != nil {
			return err
		}
		select {
		case <-r.finished:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("task %d did not complete", i)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// saturate keeps every runtime busy for the window and returns completions per second.
func (r *e2eRig) saturate(ctx context.Context, window time.Duration, perAgent int) (rps, cpuPerRunUs float64) {
	client := meshapi.NewClient(r.tg.conn.NC)
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	before := r.done.Load()
	var wg sync.WaitGroup
	for _, id := range r.ids {
		for j := 0; j < perAgent; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for wctx.Err() == nil {
					if err := r.create(wctx, client, id.agentID); err != nil {
						return
					}
					// Wait for some run to finish before adding another, so
					// the queue stays short and latencies stay meaningful.
					select {
					case <-r.finished:
					case <-wctx.Done():
						return
					}
				}
			}()
		}
	}
	start, cpu := time.Now(), cpuTime(os.Getpid())
	wg.Wait()
	runs := r.done.Load() - before
	return float64(runs) / time.Since(start).Seconds(), usPer(cpuTime(os.Getpid())-cpu, runs)
}
