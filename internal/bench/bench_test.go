package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/bench"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// The bench phases are exercised briefly so they keep working; the numbers
// themselves are measured by `a2a-platform bench`, not asserted here.
func TestBench_PhasesRunAndReport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		only  string
		check func(*bench.Report) string
	}{
		{"cycle", func(r *bench.Report) string {
			if r.Cycle.RawRunsPerSec <= 0 || r.Cycle.ServiceRunsPerSec <= 0 || r.Cycle.ServiceClaim.Count == 0 || r.Cycle.RawCPUPerRunUs <= 0 || r.Cycle.ServiceCPUPerRunUs <= 0 {
				return "cycle measured nothing"
			}
			return ""
		}},
		{"e2e", func(r *bench.Report) string {
			if len(r.E2E) != 2 || r.E2E[0].RunsPerSec <= 0 || r.E2E[1].RunsPerSec <= 0 || r.E2E[0].CPUPerRunUs <= 0 || r.E2E[1].CPUPerRunUs <= 0 || r.Idle.Count != 10 {
				return "end to end measured nothing"
			}
			if md := r.Markdown(); !strings.Contains(md, "### End to end") || strings.Contains(md, "### Processes") || strings.Contains(md, "### Task-run cycle") {
				return "the report shows phases that did not run, or not the one that did"
			}
			p := r.E2EProcesses
			if p == nil || p.Runs == 0 || p.Runtimes != 2 || p.PlatformCPUPerRunUs <= 0 || p.RuntimeCPUPerRunUs <= 0 || p.AdapterCPUPerRunUs <= 0 {
				return "end to end with the programs as processes measured nothing, or not each kind of process"
			}
			// Each process wrote its CPU profile as it stopped.
			if len(p.Profiles) != 5 {
				return fmt.Sprintf("%d CPU profiles, want one per process (5)", len(p.Profiles))
			}
			for _, f := range p.Profiles {
				if info, err := os.Stat(f); err != nil || info.Size() == 0 {
					return fmt.Sprintf("CPU profile %s not written: %v", f, err)
				}
			}
			return ""
		}},
		{"http", func(r *bench.Report) string {
			h := r.HTTP
			if h == nil || h.Clients != 16 || h.Runtimes != 2 {
				return "http measured nothing"
			}
			for name, l := range map[string]bench.HTTPLineReport{"bus": h.Bus, "REST API": h.HTTP, "runtimes on HTTP": h.RESTRuntimes, "platform process": h.Process} {
				if l.RunsPerSec <= 0 || l.Create.Count == 0 || l.Dispatch.Count == 0 || l.EndToEnd.Count == 0 || l.CPUPerRunUs <= 0 {
					return "http line " + name + " measured nothing"
				}
			}
			if h.Process.PlatformCPUPerRunUs <= 0 {
				return "the platform process's CPU was not read"
			}
			if md := r.Markdown(); !strings.Contains(md, "### REST API") || strings.Contains(md, "### End to end") {
				return "the REST API is missing from the report, or phases that did not run are shown"
			}
			return ""
		}},
		{"cluster", func(r *bench.Report) string {
			c := r.Cluster
			if c == nil || c.Nodes != 3 || c.Cycle.SingleRunsPerSec <= 0 || c.Cycle.ClusterRunsPerSec <= 0 || c.Cycle.ClusterClaim.Count == 0 || c.Cycle.Ratio <= 0 {
				return "cluster cycle measured nothing"
			}
			if len(c.E2E) != 2 || c.ClusterIdle.Count != 10 || c.SingleIdle.Count != 10 {
				return "cluster end to end measured nothing"
			}
			for _, e := range c.E2E {
				if e.Single.RunsPerSec <= 0 || e.Cluster.RunsPerSec <= 0 || e.Cluster.Dispatch.Count == 0 || e.Cluster.EndToEnd.Count == 0 || e.Ratio <= 0 {
					return fmt.Sprintf("cluster end to end with %d runtimes measured nothing", e.Runtimes)
				}
			}
			if md := r.Markdown(); !strings.Contains(md, "### Three-node cluster") || strings.Contains(md, "### Task-run cycle") || strings.Contains(md, "### End to end") {
				return "the cluster is missing from the report, or phases that did not run are shown"
			}
			return ""
		}},
		{"a2a", func(r *bench.Report) string {
			if r.A2A == nil || r.A2A.Sequential.Count != 10 || r.A2A.RequestsSec <= 0 || !strings.Contains(r.Markdown(), "message/send") {
				return "a2a measured nothing"
			}
			return ""
		}},
		{"executions", func(r *bench.Report) string {
			if e := r.Executions; e == nil || e.Runs != 200 || e.Overall.Count != 20 || !strings.Contains(r.Markdown(), "/api/executions") {
				return "executions measured nothing"
			}
			return ""
		}},
		{"scale", func(r *bench.Report) string {
			if sc := r.Scale; sc == nil || sc.Runtimes != 12 || sc.Dispatch.Count != 12 || sc.PlatformRSSAfterMB <= 0 || sc.ReadyMs <= 0 {
				return "scale measured nothing"
			}
			// Each connection is served by a goroutine that reads it and one
			// that writes it in the server, so the profiles were read if
			// they show about two per runtime. The count is a difference of
			// two snapshots of a busy process: a few of its own short-lived
			// goroutines may have ended in between.
			if r.Scale.GoroutinesPerRuntime < 1.5 {
				return fmt.Sprintf("scale read %.1f goroutines per runtime from the platform's profiles, want about 2", r.Scale.GoroutinesPerRuntime)
			}
			if md := r.Markdown(); !strings.Contains(md, "### Scale: 12 runtimes") || strings.Contains(md, "### End to end") {
				return "scale missing from the report, or other phases shown"
			}
			return ""
		}},
		{"regions", func(r *bench.Report) string {
			g := r.Regions
			if g == nil || len(g.Cases) != 4 {
				return "regions measured nothing"
			}
			for _, c := range g.Cases {
				if c.Dispatch.Count != 5 || c.Completion.Count != 5 || c.Completion.P50Ms < c.Dispatch.P50Ms {
					return fmt.Sprintf("regions case %q measured %d dispatches and %d completions", c.Name, c.Dispatch.Count, c.Completion.Count)
				}
				local := c.CreatedIn == c.Home && c.RuntimeIn == c.Home
				// A task created in another region, or a runtime connected to
				// one, crosses a gateway link at least once before its
				// adapter has it: the link's delay is a floor.
				if !local && c.Dispatch.P50Ms < 20 {
					return fmt.Sprintf("regions case %q dispatched in %.2f ms, under the 20 ms of one crossing", c.Name, c.Dispatch.P50Ms)
				}
				// A local agent's cycle crosses no gateway: in the origin,
				// nothing of it does; elsewhere, only its events do, sourced
				// into the origin's gathered log.
				if local && c.Home == g.Cases[0].Home && c.GatewayMsgsPerTask >= 1 {
					return fmt.Sprintf("regions case %q sent %.1f gateway messages per task; a local cycle sends none", c.Name, c.GatewayMsgsPerTask)
				}
			}
			if md := r.Markdown(); !strings.Contains(md, "### Regions: west and east") || strings.Contains(md, "### End to end") {
				return "regions missing from the report, or other phases shown"
			}
			return ""
		}},
		{"fanout", func(r *bench.Report) string {
			if f := r.Fanout; f == nil || f.Runs != 20 || f.RunsPerSec <= 0 || f.SSE.Latency.Count == 0 || f.Webhooks.Latency.Count == 0 {
				return "fan-out measured nothing"
			}
			if !strings.Contains(r.Markdown(), "SSE") {
				return "fan-out missing from the report"
			}
			return ""
		}},
	}
	platformBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	// The e2e phase runs the three programs as processes.
	progs, remove, err := meshtest.BuildPrograms()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	for _, tc := range cases {
		t.Run(tc.only, func(t *testing.T) {
			var r *bench.Report
			switch tc.only {
			case "cluster":
				r = benchProgram(t, tc.only)
			case "regions":
				r = benchProgram(t, tc.only, "--region-samples", "5", "--region-delay", "20ms")
			default:
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cfg := bench.Config{
					Only: tc.only, Window: 500 * time.Millisecond, Samples: 10, Agents: 2,
					FanoutRuns: 20, FanoutSubscribers: 3, FanoutWebhooks: 2, ExecutionsRuns: 200, ExecutionsQueries: 20,
					ScaleRuntimes: 12, BinDir: filepath.Dir(platformBin),
				}
				if tc.only == "e2e" {
					cfg.BinDir, cfg.ProcessProfileDir = filepath.Dir(progs.Platform), t.TempDir()
				}
				var err error
				r, err = bench.Run(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
			}
			if problem := tc.check(r); problem != "" {
				t.Fatalf("%s:\n%s", problem, r.Markdown())
			}
		})
	}
}

// benchProgram runs one phase as `a2a-platform bench --only <phase> --json`
// (with extra flags) does, in the program built without the race
// detector: the cluster and regions phases run several NATS servers in one
// process, and the clustered JetStream code
// of nats-server 2.15.2 has a data race of its own that the detector
// reports (the cluster tests run nats-server as processes for the same
// reason).
func benchProgram(t *testing.T, phase string, extra ...string) *bench.Report {
	t.Helper()
	progs, remove, err := meshtest.BuildPrograms()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, progs.Platform, append([]string{"bench", "--only", phase, "--json",
		"--window", "500ms", "--samples", "10", "--agents", "2", "--bin-dir", filepath.Dir(progs.Platform)}, extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("a2a-platform bench --only %s: %v\n%s", phase, err, stderr.String())
	}
	var r bench.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("bench --json printed no report: %v\n%s", err, out)
	}
	return &r
}
