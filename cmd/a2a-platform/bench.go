package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/a2amesh/a2amesh/internal/bench"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/spf13/cobra"
)

func newBench(g *globals) *cobra.Command {
	var cfg bench.Config
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure this machine: task-run cycle vs raw JetStream, end-to-end throughput and latency, process footprint",
		Long: "Measure this machine: task-run cycle vs raw JetStream, end-to-end throughput and latency, process footprint.\n" +
			"The report is Markdown, or JSON with -o json.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Progress = func(s string) { fmt.Fprintln(os.Stderr, "bench:", s) }
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			r, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			// Markdown unless JSON is asked for: a report for people, even in a file.
			if g.output == outputJSON {
				fmt.Println(r.JSON())
				return nil
			}
			fmt.Print(r.Markdown())
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Window, "window", 10*time.Second, "length of each throughput phase")
	f.IntVar(&cfg.Samples, "samples", 500, "one-at-a-time tasks for idle dispatch latency")
	f.IntVar(&cfg.Agents, "agents", 8, "agents (one runtime each) for the multi-runtime phases")
	f.DurationVar(&cfg.Idle, "idle", 10*time.Second, "idle window for process footprint")
	f.StringVar(&cfg.BinDir, "bin-dir", "", "directory holding the three binaries (default: this executable's)")
	cliusage.DeprecatedSwitch(f, "json", "output", outputJSON)
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the in-process phases to this file")
	f.StringVar(&cfg.Only, "only", "", "run only this phase: cycle, e2e, http, cluster, fanout, a2a, executions, processes, or scale or regions (these two not run otherwise)")
	f.DurationVar(&cfg.RegionDelay, "region-delay", 40*time.Millisecond, "regions phase: delay added to each gateway link, each way")
	f.IntVar(&cfg.RegionSamples, "region-samples", 100, "regions phase: tasks one at a time per case")
	f.IntVar(&cfg.ExecutionsRuns, "executions-runs", 100000, "executions phase: task runs created")
	f.IntVar(&cfg.ExecutionsQueries, "executions-queries", 2000, "executions phase: GET /api/executions queries timed")
	f.IntVar(&cfg.FanoutRuns, "fanout-runs", 1000, "fan-out phase: task runs completed")
	f.IntVar(&cfg.FanoutSubscribers, "fanout-sse", 100, "fan-out phase: SSE subscribers")
	f.IntVar(&cfg.FanoutWebhooks, "fanout-webhooks", 10, "fan-out phase: webhook endpoints")
	f.IntVar(&cfg.ScaleRuntimes, "scale-runtimes", 1000, "scale phase: runtimes connected to one platform process")
	f.StringVar(&cfg.ScaleCPUProfile, "scale-cpuprofile", "", "scale phase: write a CPU profile of the platform process during the dispatch burst to this file")
	f.StringVar(&cfg.ProcessProfileDir, "e2e-profile-dir", "", "e2e phase: have the platform, runtime and adapter processes of its process line each write a CPU profile into this directory")
	f.StringVar(&cfg.ScaleHeapProfile, "scale-heapprofile", "", "scale phase: write a heap profile of the platform process with every runtime connected and idle to this file")
	return cmd
}
