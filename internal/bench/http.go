package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/rs/zerolog"
)

// HTTPReport is end to end with task runs created over the REST API
// (`POST /task-runs` with the owner credential, as an integration does)
// next to the same runs created on the bus, with the same number of
// runtimes and clients, one line after the other.
type HTTPReport struct {
	Runtimes int `json:"runtimes"`
	// Clients create runs at once, each waiting for some run to complete
	// before it creates the next.
	Clients int `json:"clients"`
	// Bus and HTTP are created on the bus and over the REST API of one
	// platform in this process, with the same runtimes.
	Bus  HTTPLineReport `json:"bus"`
	HTTP HTTPLineReport `json:"http"`
	// RESTRuntimes is created over the REST API of the same platform, for
	// runtimes of their own on the HTTP transport (seed 001's REST
	// contract: pull, complete), each with its own HTTP client as
	// `a2a-runtime` on HTTP has: the whole cycle over the REST API.
	RESTRuntimes HTTPLineReport `json:"rest_runtimes"`
	// Process is created over the REST API of an `a2a-platform up`
	// process of its own, the runtimes connected to it over TCP NATS
	// from this process: the platform as it is deployed.
	Process HTTPLineReport `json:"process"`
	// Ratio is the REST API's runs/s over the bus's, in this process.
	Ratio float64 `json:"http_to_bus_ratio"`
}

// HTTPLineReport is one way of creating runs, driven for a window.
type HTTPLineReport struct {
	RunsPerSec float64 `json:"runs_per_sec"`
	// Create is the create call alone: request sent -> answer read.
	Create   Summary `json:"create_latency"`
	Dispatch Summary `json:"dispatch_latency"`
	EndToEnd Summary `json:"create_to_completed_latency"`
	// CPUPerRunUs is the CPU time (user and system) this process spent
	// per completed run; PlatformCPUPerRunUs that of the platform
	// process, when it is one of its own.
	CPUPerRunUs         float64 `json:"cpu_per_run_us"`
	PlatformCPUPerRunUs float64 `json:"platform_cpu_per_run_us,omitempty"`
}

// httpClients is how many clients create runs in the http phase: two per
// runtime of the default eight, as the e2e phase's load generator has.
const httpClients = 16

// measureHTTP drives the end-to-end cycle from outside over the REST API,
// and on the bus for comparison, on one platform.
func (r *Report) measureHTTP(ctx context.Context, dir string, cfg Config) error {
	rep := &HTTPReport{Runtimes: cfg.Agents, Clients: httpClients}
	// Keep-alive connections, one per client, as a load generator or an
	// integration's HTTP client pool keeps them.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: httpClients, MaxIdleConnsPerHost: httpClients}}
	defer hc.CloseIdleConnections()
	if err := measureHTTPInProcess(ctx, dir, hc, cfg, rep); err != nil {
		return err
	}
	rep.Ratio = ratio(rep.HTTP.RunsPerSec, rep.Bus.RunsPerSec)
	cfg.Progress(fmt.Sprintf("http: %d clients create over the REST API of a platform process, %d runtimes", httpClients, cfg.Agents))
	var err error
	if rep.Process, err = measureHTTPProcess(ctx, dir, hc, cfg); err != nil {
		return fmt.Errorf("platform process: %w", err)
	}
	r.HTTP = rep
	return nil
}

// measureHTTPInProcess fills the lines measured on one platform in this
// process: created on the bus and over the REST API for the same runtimes
// on NATS, then over the REST API for runtimes on the HTTP transport.
func measureHTTPInProcess(ctx context.Context, dir string, hc *http.Client, cfg Config, rep *HTTPReport) error {
	data := filepath.Join(dir, "http")
	p, err := startPlatform(ctx, data)
	if err != nil {
		return err
	}
	defer p.Stop()
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(data))
	if err != nil {
		return err
	}
	rig, err := newE2ERig(ctx, platformTarget(p), cfg.Agents, filepath.Join(dir, "http-work"))
	if err != nil {
		return err
	}
	defer rig.close()

	cfg.Progress(fmt.Sprintf("http: %d clients create on the bus, %d runtimes", httpClients, cfg.Agents))
	busClient := meshapi.NewClient(rig.tg.conn.NC)
	rep.Bus = rig.drive(ctx, cfg.Window, httpClients, 0, func(ctx context.Context, agentID, key string) error {
		_, err := busClient.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: agentID, Input: textInput(key)})
		return err
	})

	cfg.Progress(fmt.Sprintf("http: %d clients create over the REST API, %d runtimes", httpClients, cfg.Agents))
	url := "http://" + p.HTTPAddr() + "/task-runs"
	rep.HTTP = rig.drive(ctx, cfg.Window, httpClients, 0, func(ctx context.Context, agentID, key string) error {
		return postTaskRun(ctx, hc, url, token, agentID, key)
	})
	rig.close()

	cfg.Progress(fmt.Sprintf("http: %d clients create over the REST API, %d runtimes on the HTTP transport", httpClients, cfg.Agents))
	rest, err := newRESTRig(ctx, platformTarget(p), cfg.Agents, filepath.Join(dir, "http-rest-work"))
	if err != nil {
		return err
	}
	defer rest.close()
	rep.RESTRuntimes = rest.drive(ctx, cfg.Window, httpClients, 0, func(ctx context.Context, agentID, key string) error {
		return postTaskRun(ctx, hc, url, token, agentID, key)
	})
	return nil
}

// newRESTRig attaches runtimes to new agents of tg and runs them on the
// HTTP transport, each with an HTTP client of its own.
func newRESTRig(ctx context.Context, tg target, runtimes int, workdir string) (*e2eRig, error) {
	ids, err := attachRuntimes(ctx, tg, runtimes)
	if err != nil {
		return nil, err
	}
	rig := &e2eRig{tg: tg, ids: ids, dispatch: &latencies{}, endToEnd: &latencies{}, finished: make(chan string, 4096)}
	for i, id := range ids {
		api, err := restclient.New("http://"+tg.httpAddr, restclient.WithRuntimeToken(id.token), restclient.WithHTTPClient(&http.Client{Transport: &http.Transport{}}))
		if err != nil {
			rig.close()
			return nil, err
		}
		t := runtimeengine.NewHTTP(runtimeengine.HTTPConfig{API: api, AgentID: id.agentID, PullWait: 2 * time.Second, Logger: zerolog.Nop()})
		if err := t.Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
			t.Close()
			rig.close()
			return nil, err
		}
		if err := rig.startRuntime(ctx, i, id, &reporting{Transport: t, rig: rig}, workdir); err != nil {
			rig.close()
			return nil, err
		}
	}
	return rig, nil
}

// measureHTTPProcess drives the REST API of an `a2a-platform up` process
// (the bench's own log level, warnings only). Without a service connection
// to watch events on, a run counts as completed when the platform accepted
// its runtime's report.
func measureHTTPProcess(ctx context.Context, dir string, hc *http.Client, cfg Config) (HTTPLineReport, error) {
	data := filepath.Join(dir, "http-process")
	up, err := newUpCommand(data)
	if err != nil {
		return HTTPLineReport{}, err
	}
	plat, err := startChild(dir, filepath.Join(cfg.BinDir, "a2a-platform"), up.env, up.args...)
	if err != nil {
		return HTTPLineReport{}, err
	}
	defer plat.stop()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := waitReady(rctx, up.base, time.Now()); err != nil {
		return HTTPLineReport{}, err
	}
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(data))
	if err != nil {
		return HTTPLineReport{}, err
	}
	owner, err := restclient.New(up.base, restclient.WithOwnerToken(token))
	if err != nil {
		return HTTPLineReport{}, err
	}
	atts, err := parallel(cfg.Agents, 4, func(i int) (meshapi.AttachResponse, error) { return attachOverHTTP(ctx, owner, up.base, i) })
	if err != nil {
		return HTTPLineReport{}, fmt.Errorf("attach: %w", err)
	}
	rig := &e2eRig{
		tg:       target{natsURL: "nats://" + up.natsAddr, httpAddr: strings.TrimPrefix(up.base, "http://")},
		dispatch: &latencies{}, endToEnd: &latencies{}, finished: make(chan string, 4096),
	}
	defer rig.close()
	for i, a := range atts {
		id := runtimeIdentity{agentID: a.AgentID, runtimeID: a.RuntimeID, token: a.RuntimeToken, inbox: a.NATS.InboxPrefix}
		rig.ids = append(rig.ids, id)
		t, err := dialRuntime(ctx, rig.tg, id)
		if err != nil {
			return HTTPLineReport{}, err
		}
		if err := rig.startRuntime(ctx, i, id, &reporting{Transport: t, rig: rig}, filepath.Join(dir, "http-process-work")); err != nil {
			return HTTPLineReport{}, err
		}
	}
	url := up.base + "/task-runs"
	return rig.drive(ctx, cfg.Window, httpClients, plat.cmd.Process.Pid, func(ctx context.Context, agentID, key string) error {
		return postTaskRun(ctx, hc, url, token, agentID, key)
	}), nil
}

// reporting tells its rig that a run completed once the platform accepted
// the runtime's report of it.
type reporting struct {
	runtimeengine.Transport
	rig  *e2eRig
	keys sync.Map // run id -> the key its input carries
}

func (t *reporting) NextUpTo(ctx context.Context, n int) ([]*mesh.TaskRun, error) {
	runs, err := t.Transport.NextUpTo(ctx, n)
	for _, run := range runs {
		t.note(run)
	}
	return runs, err
}

// note remembers which key a claimed run's input carries.
func (t *reporting) note(run *mesh.TaskRun) { t.keys.Store(run.ID, run.InputText()) }

func (t *reporting) Complete(ctx context.Context, req meshapi.CompleteRequest) error {
	err := t.Transport.Complete(ctx, req)
	if key, ok := t.keys.LoadAndDelete(req.TaskRunID); ok && err == nil {
		t.rig.completed(key.(string))
	}
	return err
}

// textInput is a run's input carrying key as its text.
func textInput(key string) json.RawMessage { return json.RawMessage(`{"text":"` + key + `"}`) }

// postTaskRun creates one run over the REST API and reads the whole answer.
func postTaskRun(ctx context.Context, hc *http.Client, url, token, agentID, key string) error {
	body := `{"target_agent_id":"` + agentID + `","input":` + string(textInput(key)) + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /task-runs: %d %s", resp.StatusCode, b)
	}
	return nil
}

// drive runs clients that each create a run for their agent with create,
// then wait for some run to complete before creating the next, for the
// window, and returns what the window measured. platformPid, when not 0,
// is the platform's own process, whose CPU time is read too.
func (r *e2eRig) drive(ctx context.Context, window time.Duration, clients, platformPid int, create func(ctx context.Context, agentID, key string) error) HTTPLineReport {
	r.dispatch, r.endToEnd = &latencies{}, &latencies{}
	calls := &latencies{}
	// Completions of an earlier line must not let this one's clients on.
	for len(r.finished) > 0 {
		<-r.finished
	}
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	before := r.done.Load()
	var wg sync.WaitGroup
	for i := range clients {
		agentID := r.ids[i%len(r.ids)].agentID
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				key := mesh.NewID()
				sent := time.Now()
				r.sent.Store(key, sent)
				if err := create(wctx, agentID, key); err != nil {
					r.sent.Delete(key)
					return
				}
				calls.add(time.Since(sent))
				select {
				case <-r.finished:
				case <-wctx.Done():
					return
				}
			}
		}()
	}
	start := time.Now()
	self, plat := cpuTime(os.Getpid()), cpuTime(platformPid)
	wg.Wait()
	runs := r.done.Load() - before
	rep := HTTPLineReport{RunsPerSec: float64(runs) / time.Since(start).Seconds()}
	rep.CPUPerRunUs = usPer(cpuTime(os.Getpid())-self, runs)
	if platformPid != 0 {
		rep.PlatformCPUPerRunUs = usPer(cpuTime(platformPid)-plat, runs)
	}
	// Let the runs still in flight finish before the next line starts.
	drain := time.Now().Add(5 * time.Second)
	for time.Now().Before(drain) && r.inFlight() > 0 {
		select {
		case <-r.finished:
		case <-time.After(100 * time.Millisecond):
		}
	}
	rep.Create, rep.Dispatch, rep.EndToEnd = calls.summary(), r.dispatch.summary(), r.endToEnd.summary()
	return rep
}

// usPer is d in microseconds per one of n things (runs, runtimes); 0
// when there were none.
func usPer(d time.Duration, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// cpuTime is the CPU time a process has used so far; 0 for pid 0 or when
// it cannot be read.
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	_, cpu, _ := procStats(pid)
	return cpu
}

// inFlight counts runs created and not yet completed.
func (r *e2eRig) inFlight() int {
	n := 0
	r.sent.Range(func(any, any) bool { n++; return true })
	return n
}

// markdown renders the two lines side by side.
func (h *HTTPReport) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "### REST API: end to end with runs created over `POST /task-runs` vs on the bus (%d runtimes, %d clients)\n\n", h.Runtimes, h.Clients)
	b.WriteString("| created | runs/s | create call p50 | p99 | dispatch p50 | p99 | create->completed p50 | p99 | CPU per run: bench process / platform process |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range []struct {
		name string
		r    HTTPLineReport
	}{{"on the bus, platform in the bench process", h.Bus}, {"`POST /task-runs`, platform in the bench process", h.HTTP},
		{"`POST /task-runs`, runtimes on the HTTP transport, platform in the bench process", h.RESTRuntimes}, {"`POST /task-runs`, `a2a-platform up` process", h.Process}} {
		plat := "-"
		if l.r.PlatformCPUPerRunUs > 0 {
			plat = fmt.Sprintf("%.0f µs", l.r.PlatformCPUPerRunUs)
		}
		fmt.Fprintf(b, "| %s | %.0f | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.0f µs / %s |\n", l.name, l.r.RunsPerSec,
			l.r.Create.P50Ms, l.r.Create.P99Ms, l.r.Dispatch.P50Ms, l.r.Dispatch.P99Ms, l.r.EndToEnd.P50Ms, l.r.EndToEnd.P99Ms, l.r.CPUPerRunUs, plat)
	}
	fmt.Fprintf(b, "\nIn the bench process, the REST API keeps **%.0f%%** of the bus's throughput. "+
		"Completed is the completion event on the bus, or, for the platform process, the platform accepting the runtime's report.\n\n", 100*h.Ratio)
}
