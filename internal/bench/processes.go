package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
)

// measureProcesses runs the programs as a user would and reads their
// start-up time and idle footprint from the outside.
func (r *Report) measureProcesses(ctx context.Context, dir string, cfg Config) error {
	bin := func(name string) string { return filepath.Join(cfg.BinDir, name) }
	for _, name := range []string{"a2a-platform", "a2a-runtime", "a2a-adapter"} {
		if _, err := os.Stat(bin(name)); err != nil {
			return fmt.Errorf("%s not found in %s (run `make build` first): %w", name, cfg.BinDir, err)
		}
	}
	data := filepath.Join(dir, "proc-data")
	up, err := newUpCommand(data)
	if err != nil {
		return err
	}
	base, env, args := up.base, up.env, up.args
	start := time.Now()
	plat, err := startChild(dir, bin("a2a-platform"), env, args...)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := waitReady(rctx, base, start)
	if err != nil {
		plat.stop()
		return err
	}
	r.Process.PlatformReadyEmptyMs = ms(d)
	owner, agentID, err := seed(ctx, base, data)
	if err != nil {
		plat.stop()
		return err
	}
	plat.stop()

	start = time.Now()
	plat, err = startChild(dir, bin("a2a-platform"), env, args...)
	if err != nil {
		return err
	}
	defer plat.stop()
	if d, err = waitReady(rctx, base, start); err != nil {
		return err
	}
	r.Process.PlatformReadyExistingMs = ms(d)

	adapterAddr, err := freePort()
	if err != nil {
		return err
	}
	adapter, err := startChild(dir, bin("a2a-adapter"), nil, "--provider", "echo", "--listen", adapterAddr, "--workdir", filepath.Join(dir, "adapter-work"))
	if err != nil {
		return err
	}
	defer adapter.stop()
	var code struct {
		PairingToken string `json:"pairing_token"`
	}
	if _, err := owner.Do(ctx, http.MethodPost, "/agent-accounts/"+agentID+"/pairing-codes", nil, nil, &code); err != nil {
		return err
	}
	home := filepath.Join(dir, "home")
	renv := []string{"HOME=" + home}
	pair, err := startChild(dir, bin("a2a-runtime"), append(renv, "A2A_MESH_PAIRING_CODE="+code.PairingToken),
		"pair", "--api-base", base, "--local-agent-endpoint", "http://"+adapterAddr+"/run-task")
	if err != nil {
		return err
	}
	if err := pair.wait(); err != nil {
		return fmt.Errorf("pair failed (see %s): %w", pair.log, err)
	}
	rt, err := startChild(dir, bin("a2a-runtime"), renv, "start", "--log-level", "warn")
	if err != nil {
		return err
	}
	defer rt.stop()
	if err := waitOnline(rctx, owner, agentID); err != nil {
		return err
	}
	// Let start-up work settle, then watch the idle window.
	time.Sleep(time.Second)
	_, cpu0, err := procStats(rt.cmd.Process.Pid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(cfg.Idle)
	rss, cpu1, err := procStats(rt.cmd.Process.Pid)
	if err != nil {
		return err
	}
	window := time.Since(t0)
	r.Process.RuntimeIdleRSSMB = float64(rss) / (1 << 20)
	r.Process.RuntimeIdleCPUPercent = 100 * (cpu1 - cpu0).Seconds() / window.Seconds()
	r.Process.RuntimeIdleSeconds = window.Seconds()
	prss, _, err := procStats(plat.cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.Process.PlatformIdleRSSMB = float64(prss) / (1 << 20)
	return nil
}

// seed creates an agent and a few completed-looking records so the second
// start is on an existing data dir.
func seed(ctx context.Context, base, data string) (*restclient.Client, string, error) {
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(data))
	if err != nil {
		return nil, "", err
	}
	owner, err := restclient.New(base, restclient.WithOwnerToken(token))
	if err != nil {
		return nil, "", err
	}
	var agent struct {
		AgentID string `json:"agent_id"`
	}
	if _, err := owner.Do(ctx, http.MethodPost, "/agent-accounts", nil, map[string]any{"name": "bench"}, &agent); err != nil {
		return nil, "", err
	}
	for i := 0; i < 100; i++ {
		body := map[string]any{"target_agent_id": agent.AgentID, "input": map[string]any{"text": "seed"}}
		if _, err := owner.Do(ctx, http.MethodPost, "/task-runs", nil, body, nil); err != nil {
			return nil, "", err
		}
	}
	return owner, agent.AgentID, nil
}

func waitOnline(ctx context.Context, owner *restclient.Client, agentID string) error {
	for ctx.Err() == nil {
		var list struct {
			Runtimes []struct {
				Status string `json:"status"`
			} `json:"runtimes"`
		}
		if _, err := owner.Do(ctx, http.MethodGet, "/agent-accounts/"+agentID+"/runtimes", nil, nil, &list); err == nil {
			for _, rt := range list.Runtimes {
				if rt.Status == "online" {
					return nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("runtime never came online")
}

// JSON renders the report.
func (r *Report) JSON() string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}
