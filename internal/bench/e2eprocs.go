package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/cpuprofile"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/mesh"
)

// ProcessE2EReport is end to end with the shipped programs as processes:
// an `a2a-platform up`, and per agent an `a2a-runtime start` and an
// `a2a-adapter --provider echo`, runs created over `POST /task-runs` by
// httpClients clients, each waiting for some run to complete (a
// task_run.completed event on GET /events) before it creates the next.
// The CPU time of each kind of process is read from /proc before and after
// the window.
type ProcessE2EReport struct {
	Runtimes   int     `json:"runtimes"`
	Clients    int     `json:"clients"`
	Runs       int64   `json:"runs"`
	RunsPerSec float64 `json:"runs_per_sec"`
	// CPU per completed run of the platform process, of the runtimes
	// together and of the adapters together, and their sum.
	PlatformCPUPerRunUs float64 `json:"platform_cpu_per_run_us"`
	RuntimeCPUPerRunUs  float64 `json:"runtime_cpu_per_run_us"`
	AdapterCPUPerRunUs  float64 `json:"adapter_cpu_per_run_us"`
	TotalCPUPerRunUs    float64 `json:"total_cpu_per_run_us"`
	// BenchCPUPerRunUs is the load generator's own CPU (the clients and the
	// event stream it reads), not part of the total.
	BenchCPUPerRunUs float64 `json:"bench_cpu_per_run_us"`
	EndToEnd         Summary `json:"create_to_completed_latency"`
	// Profiles are the CPU profiles written, one per process, when the
	// bench was asked for them (Config.ProcessProfileDir).
	Profiles []string `json:"profiles,omitempty"`
}

// procRig is the programs of one process end to end.
type procRig struct {
	dir, bin string
	profiles string
	base     string
	token    string
	plat     *child
	runtimes []*child
	adapters []*child
	agents   []string
	written  []string
}

// measureProcessE2E runs the e2e phase's process line with cfg.Agents
// agents.
func (r *Report) measureProcessE2E(ctx context.Context, dir string, cfg Config) error {
	for _, name := range []string{"a2a-platform", "a2a-runtime", "a2a-adapter"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, name)); err != nil {
			return fmt.Errorf("%s not found in %s (run `make build` first): %w", name, cfg.BinDir, err)
		}
	}
	rig := &procRig{dir: filepath.Join(dir, "e2e-processes"), bin: cfg.BinDir, profiles: cfg.ProcessProfileDir}
	defer rig.stop()
	if err := rig.start(ctx, cfg.Agents); err != nil {
		return err
	}
	rep, err := rig.drive(ctx, cfg.Window)
	if err != nil {
		return err
	}
	rig.stop()
	rep.Profiles = rig.written
	r.E2EProcesses = rep
	return nil
}

// child starts one program with its log in a folder of its own and, when
// profiles are asked for, a CPU profile of its whole run.
func (p *procRig) child(name, tag string, env []string, args ...string) (*child, error) {
	dir := filepath.Join(p.dir, tag)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if p.profiles != "" {
		path := filepath.Join(p.profiles, tag+".pprof")
		env = append(env, cpuprofile.EnvVar+"="+path)
		p.written = append(p.written, path)
	}
	return startChild(dir, filepath.Join(p.bin, name), env, args...)
}

func (p *procRig) start(ctx context.Context, agents int) error {
	if p.profiles != "" {
		if err := os.MkdirAll(p.profiles, 0o755); err != nil {
			return err
		}
	}
	data := filepath.Join(p.dir, "data")
	up, err := newUpCommand(data)
	if err != nil {
		return err
	}
	if p.plat, err = p.child("a2a-platform", "platform", up.env, up.args...); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := waitReady(rctx, up.base, time.Now()); err != nil {
		return err
	}
	p.base = up.base
	if p.token, err = platform.ReadOwnerToken(platform.OwnerTokenPath(data)); err != nil {
		return err
	}
	owner, err := restclient.New(up.base, restclient.WithOwnerToken(p.token))
	if err != nil {
		return err
	}
	for i := range agents {
		if err := p.startAgent(rctx, owner, i); err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
	}
	return nil
}

// startAgent makes an agent, its echo adapter and its runtime, paired as
// a user pairs one, and waits for the runtime to be online.
func (p *procRig) startAgent(ctx context.Context, owner *restclient.Client, i int) error {
	var agent struct {
		AgentID string `json:"agent_id"`
	}
	if _, err := owner.Do(ctx, http.MethodPost, "/agent-accounts", nil, map[string]any{"name": fmt.Sprintf("bench-%d", i)}, &agent); err != nil {
		return err
	}
	addr, err := freePort()
	if err != nil {
		return err
	}
	tag := fmt.Sprintf("adapter-%d", i)
	ad, err := p.child("a2a-adapter", tag, nil, "--provider", "echo", "--listen", addr, "--workdir", filepath.Join(p.dir, tag, "work"), "--log-level", "warn")
	if err != nil {
		return err
	}
	p.adapters = append(p.adapters, ad)
	var code struct {
		PairingToken string `json:"pairing_token"`
	}
	if _, err := owner.Do(ctx, http.MethodPost, "/agent-accounts/"+agent.AgentID+"/pairing-codes", nil, nil, &code); err != nil {
		return err
	}
	tag = fmt.Sprintf("runtime-%d", i)
	home := []string{"HOME=" + filepath.Join(p.dir, tag, "home")}
	pair, err := startChild(filepath.Join(p.dir), filepath.Join(p.bin, "a2a-runtime"), append(home, "A2A_MESH_PAIRING_CODE="+code.PairingToken),
		"pair", "--api-base", p.base, "--local-agent-endpoint", "http://"+addr+"/run-task")
	if err != nil {
		return err
	}
	if err := pair.wait(); err != nil {
		return fmt.Errorf("pair failed (see %s): %w", pair.log, err)
	}
	rt, err := p.child("a2a-runtime", tag, home, "start", "--log-level", "warn")
	if err != nil {
		return err
	}
	p.runtimes = append(p.runtimes, rt)
	p.agents = append(p.agents, agent.AgentID)
	return waitOnline(ctx, owner, agent.AgentID)
}

// stop ends every process (the profiles are written as they exit); a
// second stop does nothing.
func (p *procRig) stop() {
	for _, c := range append(append(p.runtimes, p.adapters...), p.plat) {
		if c != nil {
			c.stop()
		}
	}
	p.runtimes, p.adapters, p.plat = nil, nil, nil
}

// cpuOf sums the CPU time the processes have used so far.
func cpuOf(cs []*child) time.Duration {
	var d time.Duration
	for _, c := range cs {
		d += cpuTime(c.cmd.Process.Pid)
	}
	return d
}

// drive creates runs for the window and reads what each kind of process
// spent.
func (p *procRig) drive(ctx context.Context, window time.Duration) (*ProcessE2EReport, error) {
	rig := &e2eRig{dispatch: &latencies{}, endToEnd: &latencies{}, finished: make(chan string, 4096)}
	for _, id := range p.agents {
		rig.ids = append(rig.ids, runtimeIdentity{agentID: id})
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := p.followCompletions(sctx, rig); err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: httpClients, MaxIdleConnsPerHost: httpClients}}
	defer hc.CloseIdleConnections()
	url := p.base + "/task-runs"
	plat, rts, ads, self := cpuTime(p.plat.cmd.Process.Pid), cpuOf(p.runtimes), cpuOf(p.adapters), cpuTime(os.Getpid())
	before := rig.done.Load()
	line := rig.drive(ctx, window, httpClients, 0, func(ctx context.Context, agentID, key string) error {
		return postTaskRun(ctx, hc, url, p.token, agentID, key)
	})
	runs := rig.done.Load() - before
	rep := &ProcessE2EReport{
		Runtimes: len(p.runtimes), Clients: httpClients, Runs: runs, RunsPerSec: line.RunsPerSec, EndToEnd: line.EndToEnd,
		PlatformCPUPerRunUs: usPer(cpuTime(p.plat.cmd.Process.Pid)-plat, runs),
		RuntimeCPUPerRunUs:  usPer(cpuOf(p.runtimes)-rts, runs),
		AdapterCPUPerRunUs:  usPer(cpuOf(p.adapters)-ads, runs),
		BenchCPUPerRunUs:    usPer(cpuTime(os.Getpid())-self, runs),
	}
	rep.TotalCPUPerRunUs = rep.PlatformCPUPerRunUs + rep.RuntimeCPUPerRunUs + rep.AdapterCPUPerRunUs
	if runs == 0 {
		return nil, fmt.Errorf("no run completed in %s (logs in %s)", window, p.dir)
	}
	return rep, nil
}

// followCompletions reads the completion events over GET /events, as any
// consumer of the platform would, and tells rig of each; it returns once
// the stream is open.
func (p *procRig) followCompletions(ctx context.Context, rig *e2eRig) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/events?type="+mesh.EventTaskRunCompleted, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("GET /events: %d", resp.StatusCode)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e struct {
				Data struct {
					Input struct {
						Text string `json:"text"`
					} `json:"input"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(data), &e) == nil {
				rig.completed(e.Data.Input.Text)
			}
		}
	}()
	return nil
}

// markdown renders the CPU per run of each kind of process.
func (e *ProcessE2EReport) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "### End to end with the programs as processes (%d runtimes, %d echo adapters, %d clients over `POST /task-runs`)\n\n", e.Runtimes, e.Runtimes, e.Clients)
	b.WriteString("| runs | runs/s | create->completed p50 | p99 | CPU per run: platform | runtimes | adapters | all three | (load generator) |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| %d | %.0f | %.2f ms | %.2f ms | %.0f µs | %.0f µs | %.0f µs | **%.0f µs** | %.0f µs |\n\n", e.Runs, e.RunsPerSec, e.EndToEnd.P50Ms, e.EndToEnd.P99Ms,
		e.PlatformCPUPerRunUs, e.RuntimeCPUPerRunUs, e.AdapterCPUPerRunUs, e.TotalCPUPerRunUs, e.BenchCPUPerRunUs)
	for _, p := range e.Profiles {
		fmt.Fprintf(b, "- CPU profile: %s\n", p)
	}
	if len(e.Profiles) > 0 {
		b.WriteString("\n")
	}
}
