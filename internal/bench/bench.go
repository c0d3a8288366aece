// Package bench measures A2A Mesh on the machine it runs on: the task-run
// cycle through the services next to the raw JetStream operations it performs
// (measured in the same run), end-to-end throughput and dispatch latency with
// real runtimes and echo adapters over loopback, the same two on a
// three-node cluster next to one node, and the idle footprint and start-up
// time of the platform and runtime processes.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/rs/zerolog"
)

// Config sizes a bench run. Zero values take the defaults.
type Config struct {
	// Window is how long each throughput phase runs. Default 10s.
	Window time.Duration
	// Samples is the number of one-at-a-time tasks for idle dispatch latency. Default 500.
	Samples int
	// Agents is the number of agents (one runtime each) of the cycle and the
	// multi-runtime end-to-end phase. Default 8.
	Agents int
	// BinDir holds a2a-platform, a2a-runtime and a2a-adapter for the process
	// measurements. Default: the directory of the running executable.
	BinDir string
	// Idle is how long processes sit idle before their footprint is read. Default 10s.
	Idle time.Duration
	// Only runs one phase: "cycle", "e2e", "http", "cluster", "fanout", "a2a",
	// "executions", "processes", "scale" or "regions" (default all but
	// scale and regions, which take minutes). The cluster phase compares with the cycle and e2e
	// phases' figures, and measures them itself when it runs alone.
	Only string
	// FanoutRuns, FanoutSubscribers and FanoutWebhooks size the fan-out
	// phase. Defaults 1,000 runs, 100 SSE subscribers, 10 webhook endpoints.
	FanoutRuns        int
	FanoutSubscribers int
	FanoutWebhooks    int
	// ExecutionsRuns and ExecutionsQueries size the execution-history
	// phase. Defaults 100,000 runs and 2,000 queries.
	ExecutionsRuns    int
	ExecutionsQueries int
	// ScaleRuntimes is how many runtimes the scale phase connects. Default 1,000.
	ScaleRuntimes int
	// ScaleCPUProfile, when set, is where the scale phase writes a CPU
	// profile of the platform process taken while every agent's task is
	// dispatched.
	ScaleCPUProfile string
	// ScaleHeapProfile, when set, is where the scale phase writes a heap
	// profile of the platform process with every runtime connected and idle.
	ScaleHeapProfile string
	// ProcessProfileDir, when set, is where the e2e phase's process line
	// has each program write a CPU profile of its run (platform.pprof,
	// runtime-N.pprof, adapter-N.pprof).
	ProcessProfileDir string
	// RegionDelay is added to each gateway link of the regions phase, each
	// way. Default 40ms.
	RegionDelay time.Duration
	// RegionSamples is how many tasks, one at a time, each case of the
	// regions phase measures. Default 100.
	RegionSamples int
	// Progress receives one line per phase.
	Progress func(string)
}

func (c *Config) defaults() {
	if c.Window == 0 {
		c.Window = 10 * time.Second
	}
	if c.Samples == 0 {
		c.Samples = 500
	}
	if c.Agents == 0 {
		c.Agents = 8
	}
	if c.Idle == 0 {
		c.Idle = 10 * time.Second
	}
	if c.BinDir == "" {
		if exe, err := os.Executable(); err == nil {
			c.BinDir = filepath.Dir(exe)
		}
	}
	if c.FanoutRuns == 0 {
		c.FanoutRuns = 1000
	}
	if c.FanoutSubscribers == 0 {
		c.FanoutSubscribers = 100
	}
	if c.FanoutWebhooks == 0 {
		c.FanoutWebhooks = 10
	}
	if c.ExecutionsRuns == 0 {
		c.ExecutionsRuns = 100000
	}
	if c.ExecutionsQueries == 0 {
		c.ExecutionsQueries = 2000
	}
	if c.ScaleRuntimes == 0 {
		c.ScaleRuntimes = 1000
	}
	if c.RegionDelay == 0 {
		c.RegionDelay = 40 * time.Millisecond
	}
	if c.RegionSamples == 0 {
		c.RegionSamples = 100
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
}

// Report is the outcome of a bench run.
type Report struct {
	Machine Machine     `json:"machine"`
	Cycle   CycleReport `json:"cycle"`
	E2E     []E2EReport `json:"end_to_end"`
	// E2EProcesses is end to end with the shipped programs as processes,
	// and what each kind of process spends per run.
	E2EProcesses *ProcessE2EReport `json:"end_to_end_processes,omitempty"`
	Idle         Summary           `json:"idle_dispatch_latency"`
	// HTTP is end to end with runs created over the REST API next to the bus.
	HTTP    *HTTPReport   `json:"http,omitempty"`
	Process ProcessReport `json:"processes"`
	Fanout  *FanoutReport `json:"fanout,omitempty"`
	A2A     *A2AReport    `json:"a2a,omitempty"`
	// Executions is the execution history over many runs (GET /api/executions).
	Executions *ExecutionsReport `json:"executions,omitempty"`
	// Cluster is the cycle and end to end on a three-node cluster next to
	// the same on one node.
	Cluster *ClusterReport `json:"cluster,omitempty"`
	// Regions is latency across regions (only with Only "regions").
	Regions *RegionsReport `json:"regions,omitempty"`
	// Scale is what many connected runtimes cost (only with Only "scale").
	Scale    *ScaleReport `json:"scale,omitempty"`
	Duration string       `json:"duration"`
}

// Machine describes where the numbers come from.
type Machine struct {
	Cores int    `json:"cores"`
	CPU   string `json:"cpu"`
	OS    string `json:"os"`
	Go    string `json:"go"`
}

// CycleReport compares create -> claim -> complete through the services with
// the raw JetStream operations it performs.
type CycleReport struct {
	Agents            int     `json:"agents"`
	RawRunsPerSec     float64 `json:"raw_runs_per_sec"`
	RawClaim          Summary `json:"raw_claim_latency"`
	ServiceRunsPerSec float64 `json:"service_runs_per_sec"`
	ServiceClaim      Summary `json:"service_claim_latency"`
	Ratio             float64 `json:"service_to_raw_ratio"`
	// RawCPUPerRunUs and ServiceCPUPerRunUs are the CPU time the bench
	// process (everything of the phase runs in it) spent per run: what a
	// run costs, which a machine whose hops are slow hides from runs/s.
	RawCPUPerRunUs     float64 `json:"raw_cpu_per_run_us"`
	ServiceCPUPerRunUs float64 `json:"service_cpu_per_run_us"`
}

// E2EReport is end-to-end throughput with real runtimes and echo adapters.
type E2EReport struct {
	Runtimes   int     `json:"runtimes"`
	RunsPerSec float64 `json:"runs_per_sec"`
	// CPUPerRunUs is the CPU time the bench process (platform, runtimes
	// and adapters) spent per run while saturated.
	CPUPerRunUs float64 `json:"cpu_per_run_us"`
	Dispatch    Summary `json:"dispatch_latency"`
	EndToEnd    Summary `json:"create_to_completed_latency"`
}

// ProcessReport is the footprint of the programs as real processes.
type ProcessReport struct {
	PlatformReadyEmptyMs    float64 `json:"platform_ready_empty_ms"`
	PlatformReadyExistingMs float64 `json:"platform_ready_existing_ms"`
	PlatformIdleRSSMB       float64 `json:"platform_idle_rss_mb"`
	RuntimeIdleRSSMB        float64 `json:"runtime_idle_rss_mb"`
	RuntimeIdleCPUPercent   float64 `json:"runtime_idle_cpu_percent"`
	RuntimeIdleSeconds      float64 `json:"runtime_idle_seconds"`
}

// Run measures everything. It only listens on and connects to loopback.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	began := time.Now()
	dir, err := os.MkdirTemp("", "a2a-mesh-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &Report{Machine: machine()}

	phase := func(name string) bool { return cfg.Only == "" || cfg.Only == name }
	if phase("cycle") {
		cfg.Progress("cycle: raw JetStream operations")
		if err := r.measureRaw(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("raw cycle: %w", err)
		}
		cfg.Progress("cycle: through the services")
		if err := r.measureService(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("service cycle: %w", err)
		}
	}
	if phase("e2e") {
		for _, n := range []int{1, cfg.Agents} {
			cfg.Progress(fmt.Sprintf("end to end: %d runtime(s)", n))
			if err := r.measureE2E(ctx, dir, n, cfg); err != nil {
				return nil, fmt.Errorf("end to end with %d runtimes: %w", n, err)
			}
		}
		cfg.Progress(fmt.Sprintf("end to end: the programs as processes, %d runtimes and echo adapters, %d clients over the REST API", cfg.Agents, httpClients))
		if err := r.measureProcessE2E(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("end to end with processes: %w", err)
		}
	}
	if phase("http") {
		if err := r.measureHTTP(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
	}
	if phase("cluster") {
		if err := r.measureCluster(ctx, filepath.Join(dir, "cluster"), cfg); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	if phase("fanout") {
		cfg.Progress(fmt.Sprintf("fan-out: %d runs to %d SSE subscribers and %d webhooks", cfg.FanoutRuns, cfg.FanoutSubscribers, cfg.FanoutWebhooks))
		if err := r.measureFanout(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("fan-out: %w", err)
		}
	}
	if phase("a2a") {
		cfg.Progress("a2a: blocking message/send over JSON-RPC to an echo agent")
		if err := r.measureA2A(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("a2a: %w", err)
		}
	}
	if phase("executions") {
		cfg.Progress(fmt.Sprintf("executions: %d task runs, then GET /api/executions with filters", cfg.ExecutionsRuns))
		if err := r.measureExecutions(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("executions: %w", err)
		}
	}
	if phase("processes") {
		cfg.Progress("processes: start-up and idle footprint")
		if err := r.measureProcesses(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("processes: %w", err)
		}
	}
	if cfg.Only == "regions" {
		if err := r.measureRegions(ctx, filepath.Join(dir, "regions"), cfg); err != nil {
			return nil, fmt.Errorf("regions: %w", err)
		}
	}
	if cfg.Only == "scale" {
		cfg.Progress(fmt.Sprintf("scale: %d runtimes connected to a platform process", cfg.ScaleRuntimes))
		if err := r.measureScale(ctx, dir, cfg); err != nil {
			return nil, fmt.Errorf("scale: %w", err)
		}
	}
	r.Duration = time.Since(began).Round(time.Second).String()
	return r, nil
}

func (r *Report) measureRaw(ctx context.Context, dir string, cfg Config) error {
	s, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(dir, "raw"), Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer s.Shutdown()
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: s})
	if err != nil {
		return err
	}
	defer conn.Drain(time.Second)
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{}); err != nil {
		return err
	}
	res, err := rawCycle(ctx, conn, cfg.Agents, cfg.Window)
	if err != nil {
		return err
	}
	r.Cycle.Agents, r.Cycle.RawRunsPerSec, r.Cycle.RawClaim, r.Cycle.RawCPUPerRunUs = cfg.Agents, res.rps, res.claim, res.cpuPerRunUs
	return nil
}

// startPlatform runs a platform in this process with its data in dir, on
// loopback ports of its own; each set adjusts the configuration first.
func startPlatform(ctx context.Context, dir string, set ...func(*platform.Config)) (*platform.Platform, error) {
	cfg := platform.Config{
		DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", Logger: zerolog.Nop(),
		ShutdownGrace: 2 * time.Second,
	}
	for _, f := range set {
		f(&cfg)
	}
	return platform.Up(ctx, cfg)
}

// unlimitedCallers lifts the A2A endpoints' per-caller limit (60 a minute
// by default), which would measure the limiter, not the endpoints.
func unlimitedCallers(cfg *platform.Config) { cfg.A2ARateLimitPerMinute = 1 << 30 }

// target is the platform a measurement drives, whatever runs it (one `up`
// process, or services on a cluster): a service's bus connection, which
// creates agents and task runs and watches events, the NATS URL runtimes
// dial, and the HTTP API's address.
type target struct {
	conn     *bus.Conn
	natsURL  string
	httpAddr string
	// home is the home region of the agents made for the measurement;
	// empty: the region of the agents service that creates them.
	home string
}

func platformTarget(p *platform.Platform) target {
	return target{conn: p.Conn(), natsURL: p.NATSURL(), httpAddr: p.HTTPAddr()}
}

func (r *Report) measureService(ctx context.Context, dir string, cfg Config) error {
	res, err := singleNodeCycle(ctx, filepath.Join(dir, "service"), cfg)
	if err != nil {
		return err
	}
	r.Cycle.ServiceRunsPerSec, r.Cycle.ServiceClaim, r.Cycle.ServiceCPUPerRunUs = res.rps, res.claim, res.cpuPerRunUs
	if r.Cycle.RawRunsPerSec > 0 {
		r.Cycle.Ratio = res.rps / r.Cycle.RawRunsPerSec
	}
	return nil
}

// singleNodeCycle measures the service cycle on a platform of its own.
func singleNodeCycle(ctx context.Context, dir string, cfg Config) (cycleResult, error) {
	p, err := startPlatform(ctx, dir)
	if err != nil {
		return cycleResult{}, err
	}
	defer p.Stop()
	return cycleOn(ctx, platformTarget(p), cfg)
}

// cycleOn measures the service cycle with cfg.Agents new agents of tg.
func cycleOn(ctx context.Context, tg target, cfg Config) (cycleResult, error) {
	ids, err := attachRuntimes(ctx, tg, cfg.Agents)
	if err != nil {
		return cycleResult{}, err
	}
	return serviceCycle(ctx, tg, ids, cfg.Window)
}

func (r *Report) measureE2E(ctx context.Context, dir string, runtimes int, cfg Config) error {
	e, idle, err := singleNodeE2E(ctx, dir, runtimes, cfg)
	if err != nil {
		return err
	}
	if runtimes == 1 {
		r.Idle = idle
	}
	r.E2E = append(r.E2E, e)
	return nil
}

// singleNodeE2E measures end to end on a platform of its own.
func singleNodeE2E(ctx context.Context, dir string, runtimes int, cfg Config) (E2EReport, Summary, error) {
	p, err := startPlatform(ctx, filepath.Join(dir, fmt.Sprintf("e2e-%d", runtimes)))
	if err != nil {
		return E2EReport{}, Summary{}, err
	}
	defer p.Stop()
	return e2eOn(ctx, platformTarget(p), runtimes, filepath.Join(dir, fmt.Sprintf("work-%d", runtimes)), cfg)
}

// e2eOn measures end to end with the given number of new agents of tg, each
// with a runtime and an echo adapter: the throughput with every runtime kept
// busy, and with one runtime the idle dispatch latency first (cfg.Samples
// tasks one at a time; a zero Summary otherwise).
func e2eOn(ctx context.Context, tg target, runtimes int, workdir string, cfg Config) (E2EReport, Summary, error) {
	rig, err := newE2ERig(ctx, tg, runtimes, workdir)
	if err != nil {
		return E2EReport{}, Summary{}, err
	}
	defer rig.close()
	var idle Summary
	if runtimes == 1 {
		if err := rig.sequential(ctx, cfg.Samples); err != nil {
			return E2EReport{}, Summary{}, err
		}
		idle = rig.dispatch.summary()
		rig.dispatch, rig.endToEnd = &latencies{}, &latencies{}
	}
	rps, cpu := rig.saturate(ctx, cfg.Window, 2)
	return E2EReport{Runtimes: runtimes, RunsPerSec: rps, CPUPerRunUs: cpu, Dispatch: rig.dispatch.summary(), EndToEnd: rig.endToEnd.summary()}, idle, nil
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return m
}
