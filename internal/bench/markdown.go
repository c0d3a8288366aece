package bench

import (
	"fmt"
	"strings"
)

// Markdown renders the report as the tables of docs/benchmarks.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Machine: %d cores (%s), %s, %s. Run took %s.\n\n", m.Cores, m.CPU, m.OS, m.Go, r.Duration)
	if sc := r.Scale; sc != nil {
		fmt.Fprintf(&b, "### Scale: %d runtimes connected to one platform process\n\n", sc.Runtimes)
		b.WriteString("| measure | value |\n|---|---|\n")
		fmt.Fprintf(&b, "| create, pair and attach (16 at a time) | %.1f s |\n", sc.AttachSeconds)
		fmt.Fprintf(&b, "| connect over NATS: callout, hello, heartbeat (32 at a time) | %.1f s |\n", sc.ConnectSeconds)
		fmt.Fprintf(&b, "| platform RSS (server included) before / after they connected | %.1f MB / %.1f MB |\n", sc.PlatformRSSBeforeMB, sc.PlatformRSSAfterMB)
		fmt.Fprintf(&b, "| platform + server memory per connected idle runtime | %.1f KiB |\n", sc.PerRuntimeKiB)
		fmt.Fprintf(&b, "| live Go heap per runtime: NATS server / services | %.1f KiB / %.1f KiB |\n", sc.ServerHeapPerRuntimeKiB, sc.PlatformHeapPerRuntimeKiB)
		fmt.Fprintf(&b, "| goroutines per runtime, and their stacks | %.1f, %.1f KiB |\n", sc.GoroutinesPerRuntime, sc.StackPerRuntimeKiB)
		fmt.Fprintf(&b, "| platform CPU per runtime connected / per heartbeat (every runtime once, 32 at a time) | %.0f µs / %.0f µs |\n", sc.ConnectCPUUs, sc.HeartbeatCPUUs)
		fmt.Fprintf(&b, "| dispatch, one task per agent at once: p50 / p99 / max | %.2f ms / %.2f ms / %.2f ms |\n", sc.Dispatch.P50Ms, sc.Dispatch.P99Ms, sc.Dispatch.MaxMs)
		fmt.Fprintf(&b, "| graceful stop / start until ready, with %d agents | %.0f ms / %.0f ms |\n\n", sc.Runtimes, sc.StopMs, sc.ReadyMs)
		return b.String()
	}
	if g := r.Regions; g != nil {
		fmt.Fprintf(&b, "### Regions: %s and %s, one node each with every service, %s added on each gateway link (each way)\n\n", regionHome, regionOther, g.Delay)
		b.WriteString("| case | agent homed in | task created in | runtime connected to | dispatch p50 | p99 | created->completed p50 | p99 | gateway messages per task |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range g.Cases {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f |\n", c.Name, c.Home, c.CreatedIn, c.RuntimeIn,
				c.Dispatch.P50Ms, c.Dispatch.P99Ms, c.Completion.P50Ms, c.Completion.P99Ms, c.GatewayMsgsPerTask)
		}
		fmt.Fprintf(&b, "\n%s is the origin (it starts first); %d tasks one at a time per case. Dispatch is task created -> the adapter receives it; completion is task created -> its completed event reaches the region that created it. Gateway messages are those of the platform's accounts, counted by the servers.\n\n", regionHome, g.Samples)
		return b.String()
	}
	if f := r.Fanout; f != nil {
		fmt.Fprintf(&b, "### Event fan-out: %d task runs (%d events each) to %d SSE subscribers and %d webhook endpoints\n\n", f.Runs, f.Events/max(f.Runs, 1), f.SSESubscribers, f.WebhookEndpoints)
		b.WriteString("| channel | deliveries | deliveries/s | latency p50 | p99 | max |\n|---|---|---|---|---|---|\n")
		for _, ch := range []struct {
			name string
			c    Channel
		}{{fmt.Sprintf("SSE (`GET /events`, %d clients)", f.SSESubscribers), f.SSE}, {fmt.Sprintf("webhooks (%d endpoints)", f.WebhookEndpoints), f.Webhooks}} {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f ms | %.2f ms | %.2f ms |\n", ch.name, ch.c.Latency.Count, ch.c.DeliveriesPerSec, ch.c.Latency.P50Ms, ch.c.Latency.P99Ms, ch.c.Latency.MaxMs)
		}
		fmt.Fprintf(&b, "\nTask runs completed at %.0f runs/s meanwhile. Latency is the event's `time` to its arrival at the consumer.\n\n", f.RunsPerSec)
		if r.Cycle.Agents == 0 && len(r.E2E) == 0 && r.Process.PlatformReadyEmptyMs == 0 {
			return b.String()
		}
	}
	if a := r.A2A; a != nil {
		b.WriteString("### A2A `message/send` (blocking, JSON-RPC 1.0, official Go client, echo agent)\n\n")
		b.WriteString("| clients | requests/s | latency p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n")
		seq := a.Sequential
		if seq.Count > 0 {
			fmt.Fprintf(&b, "| 1 (one request at a time, n=%d) | %.0f | %.2f ms | %.2f ms | %.2f ms | %.2f ms |\n", seq.Count, a.SequentialPerSec, seq.P50Ms, seq.P90Ms, seq.P99Ms, seq.MaxMs)
		}
		fmt.Fprintf(&b, "| %d (concurrent, n=%d) | %.0f | %.2f ms | %.2f ms | %.2f ms | %.2f ms |\n", a.Clients, a.Concurrent.Count, a.RequestsSec, a.Concurrent.P50Ms, a.Concurrent.P90Ms, a.Concurrent.P99Ms, a.Concurrent.MaxMs)
		b.WriteString("\nLatency is the client's: request sent -> completed task decoded, through the endpoint, a task run, a runtime claim, the echo adapter and the completion event.\n\n")
		if r.Cycle.Agents == 0 && len(r.E2E) == 0 && r.Process.PlatformReadyEmptyMs == 0 {
			return b.String()
		}
	}
	if e := r.Executions; e != nil {
		fmt.Fprintf(&b, "### Execution history: `GET /api/executions` over %d task runs (%d agents)\n\n", e.Runs, e.Agents)
		b.WriteString("| filter | queries | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n")
		for _, row := range []struct {
			name string
			s    Summary
		}{{"none (random offset)", e.All}, {"`agentId` (random offset)", e.ByAgent}, {"`status` (random offset)", e.ByStatus}, {"`agentId` and `status`", e.ByAgentStatus}, {"**all queries**", e.Overall}} {
			fmt.Fprintf(&b, "| %s | %d | %.2f ms | %.2f ms | %.2f ms | %.2f ms |\n", row.name, row.s.Count, row.s.P50Ms, row.s.P90Ms, row.s.P99Ms, row.s.MaxMs)
		}
		fmt.Fprintf(&b, "\nRuns were created over the bus at %.0f runs/s (one in ten canceled). Each query answers a page of 50 with the `total` of its matches, over HTTP with the owner credential, one at a time.\n\n", e.CreatePerSec)
		if r.Cycle.Agents == 0 && len(r.E2E) == 0 && r.Process.PlatformReadyEmptyMs == 0 {
			return b.String()
		}
	}
	if c := r.Cycle; c.Agents > 0 {
		fmt.Fprintf(&b, "### Task-run cycle (create -> claim -> complete), %d agents\n\n", c.Agents)
		b.WriteString("| path | runs/s | claim latency p50 | p99 | CPU per run |\n|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| raw JetStream operations of one cycle | %.0f | %.2f ms | %.2f ms | %.0f µs |\n", c.RawRunsPerSec, c.RawClaim.P50Ms, c.RawClaim.P99Ms, c.RawCPUPerRunUs)
		fmt.Fprintf(&b, "| through the services (bus requests, CAS, events) | %.0f | %.2f ms | %.2f ms | %.0f µs |\n", c.ServiceRunsPerSec, c.ServiceClaim.P50Ms, c.ServiceClaim.P99Ms, c.ServiceCPUPerRunUs)
		fmt.Fprintf(&b, "\nService layer keeps **%.0f%%** of the raw throughput.\n\n", 100*c.Ratio)
	}
	if len(r.E2E) > 0 {
		b.WriteString("### End to end (platform + runtimes + echo adapters over loopback)\n\n")
		b.WriteString("| runtimes | runs/s | dispatch p50 | dispatch p99 | create->completed p50 | p99 | CPU per run |\n|---|---|---|---|---|---|---|\n")
		for _, e := range r.E2E {
			fmt.Fprintf(&b, "| %d | %.0f | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.0f µs |\n", e.Runtimes, e.RunsPerSec, e.Dispatch.P50Ms, e.Dispatch.P99Ms, e.EndToEnd.P50Ms, e.EndToEnd.P99Ms, e.CPUPerRunUs)
		}
		fmt.Fprintf(&b, "\nIdle dispatch latency (one task at a time, task created -> adapter receives it): %s\n\n", r.Idle)
	}
	if e := r.E2EProcesses; e != nil {
		e.markdown(&b)
	}
	if h := r.HTTP; h != nil {
		h.markdown(&b)
	}
	if c := r.Cluster; c != nil {
		c.markdown(&b)
	}
	if p := r.Process; p.PlatformReadyEmptyMs > 0 {
		b.WriteString("### Processes\n\n| measure | value |\n|---|---|\n")
		fmt.Fprintf(&b, "| `a2a-platform up` ready, empty data dir | %.0f ms |\n", p.PlatformReadyEmptyMs)
		fmt.Fprintf(&b, "| `a2a-platform up` ready, existing data dir | %.0f ms |\n", p.PlatformReadyExistingMs)
		fmt.Fprintf(&b, "| platform idle RSS | %.1f MB |\n", p.PlatformIdleRSSMB)
		fmt.Fprintf(&b, "| runtime idle RSS | %.1f MB |\n", p.RuntimeIdleRSSMB)
		fmt.Fprintf(&b, "| runtime idle CPU over %.0f s | %.2f %% |\n", p.RuntimeIdleSeconds, p.RuntimeIdleCPUPercent)
	}
	return b.String()
}

// markdown renders the cluster's figures next to one node's, each row with
// the cluster's value over one node's.
func (c *ClusterReport) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "### Three-node cluster (every service on R%d) next to one node, %d agents\n\n", c.Replicas, c.Agents)
	b.WriteString("| measure | one node | three nodes | three / one |\n|---|---|---|---|\n")
	runs := func(name string, one, three, ratio float64) {
		fmt.Fprintf(b, "| %s: runs/s | %.0f | %.0f | %.2f |\n", name, one, three, ratio)
	}
	lat := func(name string, one, three Summary) {
		fmt.Fprintf(b, "| %s p50 / p99 | %.2f / %.2f ms | %.2f / %.2f ms | %.2f / %.2f |\n",
			name, one.P50Ms, one.P99Ms, three.P50Ms, three.P99Ms, ratio(three.P50Ms, one.P50Ms), ratio(three.P99Ms, one.P99Ms))
	}
	runs("cycle through the services", c.Cycle.SingleRunsPerSec, c.Cycle.ClusterRunsPerSec, c.Cycle.Ratio)
	lat("cycle: claim latency", c.Cycle.SingleClaim, c.Cycle.ClusterClaim)
	for _, e := range c.E2E {
		name := fmt.Sprintf("end to end, %d runtime(s)", e.Runtimes)
		runs(name, e.Single.RunsPerSec, e.Cluster.RunsPerSec, e.Ratio)
		lat(name+": dispatch", e.Single.Dispatch, e.Cluster.Dispatch)
		lat(name+": create->completed", e.Single.EndToEnd, e.Cluster.EndToEnd)
	}
	lat("idle dispatch latency (one task at a time)", c.SingleIdle, c.ClusterIdle)
	b.WriteString("\nThe nodes are NATS servers in one process, routed over loopback, configured as deploy/nats/cluster.conf; " +
		"each service runs as `a2a-platform serve <service> --replicas 3` runs it, the services spread over the nodes; " +
		"runtimes connect through the auth callout to a node that does not lead the JetStream meta group.\n\n")
}
