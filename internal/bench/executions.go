package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/meshapi"
)

// ExecutionsReport is the envelope protocol's execution history (GET
// /api/executions, seed 002) over many task runs: how fast the runs were
// made, and the latency of pages with their totals under each filter.
type ExecutionsReport struct {
	Runs          int     `json:"runs"`
	Agents        int     `json:"agents"`
	CreatePerSec  float64 `json:"create_per_sec"`
	Queries       int     `json:"queries"`
	All           Summary `json:"all_latency"`
	ByAgent       Summary `json:"by_agent_latency"`
	ByStatus      Summary `json:"by_status_latency"`
	ByAgentStatus Summary `json:"by_agent_and_status_latency"`
	Overall       Summary `json:"overall_latency"`
}

// executionAgents is how many agents the runs are spread over.
const executionAgents = 4

// measureExecutions creates cfg.ExecutionsRuns task runs over the bus (one
// in ten canceled, so the status filter has something to tell apart), then
// times GET /api/executions with its filters and random offsets.
func (r *Report) measureExecutions(ctx context.Context, dir string, cfg Config) error {
	p, err := startPlatform(ctx, filepath.Join(dir, "executions"), unlimitedCallers)
	if err != nil {
		return err
	}
	defer p.Stop()
	c := meshapi.NewClient(p.Conn().NC)
	agents := make([]string, executionAgents)
	convs := make([]string, executionAgents)
	for i := range agents {
		a, err := c.CreateAgent(ctx, meshapi.CreateAgentRequest{Name: fmt.Sprintf("history-%d", i)})
		if err != nil {
			return err
		}
		conv, err := c.CreateConversation(ctx, meshapi.CreateConversationRequest{})
		if err != nil {
			return err
		}
		agents[i], convs[i] = a.ID, conv.ID
	}
	began := time.Now()
	if err := createRuns(ctx, c, agents, convs, cfg.ExecutionsRuns, cfg.Progress); err != nil {
		return err
	}
	rep := &ExecutionsReport{Runs: cfg.ExecutionsRuns, Agents: executionAgents, CreatePerSec: float64(cfg.ExecutionsRuns) / time.Since(began).Seconds(), Queries: cfg.ExecutionsQueries}
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(filepath.Join(dir, "executions")))
	if err != nil {
		return err
	}
	base := "http://" + p.HTTPAddr() + "/api/executions"
	hc := &http.Client{Timeout: 30 * time.Second}
	var all, byAgent, byStatus, both, overall latencies
	for i := 0; i < cfg.ExecutionsQueries; i++ {
		agent := agents[i%len(agents)]
		status := []string{"pending", "canceled"}[i%2]
		offset := rand.IntN(max(1, cfg.ExecutionsRuns/executionAgents/2))
		kinds := []struct {
			query string
			lat   *latencies
		}{
			{fmt.Sprintf("?offset=%d", offset), &all},
			{fmt.Sprintf("?agentId=%s&offset=%d", agent, offset), &byAgent},
			{fmt.Sprintf("?status=%s&offset=%d", status, offset/10), &byStatus},
			{fmt.Sprintf("?agentId=%s&status=%s&limit=50", agent, status), &both},
		}
		k := kinds[i%len(kinds)]
		d, err := timeGet(ctx, hc, base+k.query, token)
		if err != nil {
			return err
		}
		k.lat.add(d)
		overall.add(d)
	}
	rep.All, rep.ByAgent, rep.ByStatus, rep.ByAgentStatus, rep.Overall = all.summary(), byAgent.summary(), byStatus.summary(), both.summary(), overall.summary()
	r.Executions = rep
	return nil
}

// createRuns makes n runs spread over the agents, as fast as the bus takes
// them; every tenth is canceled.
func createRuns(ctx context.Context, c *meshapi.Client, agents, convs []string, n int, progress func(string)) error {
	const workers = 32
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	input := json.RawMessage(`{"text":"history"}`)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				a := i % len(agents)
				res, err := c.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: agents[a], ConversationID: convs[a], Input: input})
				if err == nil && i%10 == 0 {
					_, err = c.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: res.TaskRun.ID})
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("create run %d: %w", i, err) })
					return
				}
				if (i+1)%20000 == 0 {
					progress(fmt.Sprintf("executions: %d runs created", i+1))
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// timeGet times one owner GET that must answer 200 with a page.
func timeGet(ctx context.Context, hc *http.Client, url, token string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var page struct {
		Executions []json.RawMessage `json:"executions"`
		Total      int               `json:"total"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	d := time.Since(start)
	if resp.StatusCode != http.StatusOK || err != nil {
		return 0, fmt.Errorf("GET %s: HTTP %d (%v)", url, resp.StatusCode, err)
	}
	return d, nil
}
