package bench

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/httpheader"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/meshapi"
)

// A2AReport is blocking message/send over the agent's A2A endpoint (JSON-RPC,
// spec 1.0, the official Go client) to an echo agent: each request creates a
// task run, a runtime claims it, the echo adapter answers and the completed
// task comes back.
type A2AReport struct {
	// Sequential is one request at a time: the latency of an idle platform.
	Sequential       Summary `json:"sequential_latency"`
	SequentialPerSec float64 `json:"sequential_requests_per_sec"`
	// Clients is the number of concurrent clients of the throughput measure.
	Clients     int     `json:"clients"`
	RequestsSec float64 `json:"requests_per_sec"`
	Concurrent  Summary `json:"concurrent_latency"`
}

// a2aClients is how many clients send at once in the throughput measure;
// the runtime works on as many runs at once.
const a2aClients = 4

func (r *Report) measureA2A(ctx context.Context, dir string, cfg Config) error {
	p, err := startPlatform(ctx, filepath.Join(dir, "a2a"), unlimitedCallers)
	if err != nil {
		return err
	}
	defer p.Stop()
	stop, agentID, err := startEchoAgent(ctx, p, filepath.Join(dir, "a2a-work"))
	if err != nil {
		return err
	}
	defer stop()
	key, err := meshapi.NewClient(p.Conn().NC).CreateA2AKey(ctx, meshapi.CreateA2AKeyRequest{AgentID: agentID, Name: "bench"})
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: httpheader.Transport{Header: map[string]string{"X-API-Key": key.APIKey}, Next: &http.Transport{MaxIdleConnsPerHost: 2 * a2aClients}}, Timeout: 30 * time.Second}
	card, err := (&agentcard.Resolver{Client: hc}).Resolve(ctx, "http://"+p.HTTPAddr()+"/a2a/"+agentID)
	if err != nil {
		return fmt.Errorf("resolve the agent card: %w", err)
	}
	client, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC}}),
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return err
	}
	defer func() { _ = client.Destroy() }()

	send := func(ctx context.Context, lat *latencies) error {
		began := time.Now()
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ping"))})
		if err != nil {
			return err
		}
		if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
			return fmt.Errorf("message/send answered %#v, not a completed task", res)
		}
		lat.add(time.Since(began))
		return nil
	}
	// Warm up connections and caches, then one request at a time.
	for i := 0; i < 10; i++ {
		if err := send(ctx, &latencies{}); err != nil {
			return err
		}
	}
	seq := &latencies{}
	seqStart := time.Now()
	for i := 0; i < cfg.Samples; i++ {
		if err := send(ctx, seq); err != nil {
			return err
		}
	}
	seqPerSec := float64(cfg.Samples) / time.Since(seqStart).Seconds()
	// Then a2aClients clients at once for the window.
	conc := &latencies{}
	wctx, cancel := context.WithTimeout(ctx, cfg.Window)
	defer cancel()
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, a2aClients)
	start := time.Now()
	for i := 0; i < a2aClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				if err := send(wctx, conc); err != nil {
					if wctx.Err() == nil {
						errs <- err
					}
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	r.A2A = &A2AReport{Sequential: seq.summary(), SequentialPerSec: seqPerSec, Clients: a2aClients, RequestsSec: float64(done.Load()) / elapsed.Seconds(), Concurrent: conc.summary()}
	return nil
}

// startEchoAgent attaches one agent with a runtime (the runtime engine over TCP
// NATS, as a2a-runtime runs it) working on a2aClients runs at once, and an
// echo adapter over loopback HTTP.
func startEchoAgent(ctx context.Context, p *platform.Platform, workdir string) (stop func(), agentID string, err error) {
	ids, err := attachRuntimes(ctx, platformTarget(p), 1)
	if err != nil {
		return nil, "", err
	}
	id := ids[0]
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	srv, err := adapter.New(adapter.Config{Provider: provider.Echo{}, Workdir: workdir, Logger: zerolog.Nop()})
	if err != nil {
		return nil, "", err
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	go func() { _ = srv.Serve(ln) }()
	stops = append(stops, func() { _ = srv.Shutdown(context.Background()) })
	t, err := dialRuntime(ctx, platformTarget(p), id)
	if err != nil {
		stop()
		return nil, "", err
	}
	ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
	if err != nil {
		stop()
		return nil, "", err
	}
	api, _ := restclient.New("http://"+p.HTTPAddr(), restclient.WithRuntimeToken(id.token))
	// The runtime a2a-runtime start builds, so the figures are the shipped
	// runtime's.
	c := runtimeengine.NewRuntime(runtimeengine.RuntimeConfig{
		AgentID: id.agentID, RuntimeID: id.runtimeID, Transport: t, API: api, Adapter: ac, Logger: zerolog.Nop(), Concurrency: a2aClients,
		HeartbeatInterval: 20 * time.Second, RenewInterval: 10 * time.Second, DrainGrace: time.Second,
	})
	cctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() { _ = c.Run(cctx); close(finished) }()
	stops = append(stops, func() { cancel(); <-finished; t.Close() })
	return stop, id.agentID, nil
}
