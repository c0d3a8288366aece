package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// The runtime-facing REST contract of seed 001 §4. Bodies are read leniently
// so runtimes of other versions keep working.

// heartbeatRequest is seed 001's heartbeat body (its agent id) around the
// platform's (meshapi.HeartbeatRequest: the runs being worked on, the
// adapter's readiness, the claims abandoned).
type heartbeatRequest struct {
	AgentID string `json:"agent_id"`
	meshapi.HeartbeatRequest
}

func (g *Gateway) heartbeat(w http.ResponseWriter, r *http.Request) {
	id := runtimeOf(r)
	var in heartbeatRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, lenient, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	if in.AgentID != "" {
		if err := sameAgent(id, in.AgentID); err != nil {
			g.writeError(w, r, err)
			return
		}
	}
	res, err := g.client.Runtime(id.AgentID, id.RuntimeID).Heartbeat(r.Context(), in.HeartbeatRequest)
	g.reply(w, r, http.StatusOK, res, err)
}

func (g *Gateway) revokeSelf(w http.ResponseWriter, r *http.Request) {
	id := runtimeOf(r)
	rt, err := g.client.RevokeRuntime(r.Context(), meshapi.RevokeRuntimeRequest{RuntimeID: id.RuntimeID, AgentID: id.AgentID})
	if err == nil {
		g.rtAuth.ended(r.Context(), id.RuntimeID)
	}
	g.reply(w, r, http.StatusOK, rt, err)
}

func (g *Gateway) pull(w http.ResponseWriter, r *http.Request) {
	id := runtimeOf(r)
	if err := sameAgent(id, r.PathValue("agentId")); err != nil {
		g.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	wait, err := parseWait(q.Get("wait"), g.cfg.MaxPullWait)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	// key names this pull, so that a runtime that did not get the answer
	// asks for what it claimed (recover=true with the same key).
	in := meshapi.PullRequest{Wait: wait, Key: q.Get("key")}
	if v := q.Get("recover"); v != "" {
		if in.Recover, err = strconv.ParseBool(v); err != nil {
			g.writeError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "recover must be true or false"))
			return
		}
		if in.Recover {
			in.Wait = 0
		}
	}
	// Stop waiting when the platform shuts down, but not when the runtime
	// goes away: the taskqueue's wait goes on regardless and may still claim
	// a run for it, which must then be given back below rather than be left
	// running until its lease expires.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), wait+10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-g.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	rc := g.client.Runtime(id.AgentID, id.RuntimeID)
	pulled, err := rc.Pull(ctx, in)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	run := pulled.TaskRun
	if run == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Context().Err() != nil {
		// The runtime left while the claim was made: give the run back rather
		// than let it wait for its lease to expire. A keyed pull's run is
		// given back only if its runtime, back meanwhile, has not asked for
		// it under the key (the task queue decides, on the run's record):
		// it would run a run back in the queue.
		release, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rc.Release(release, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: run.Attempt, Key: in.Key})
		return
	}
	if pulled.InstructionsDigest != "" {
		w.Header().Set(meshapi.HeaderInstructionsDigest, pulled.InstructionsDigest)
	}
	writeJSON(w, http.StatusOK, run)
}

// parseWait reads ?wait= as a Go duration ("30s") or whole seconds ("30").
func parseWait(v string, max time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(strings.TrimSpace(v))
		if nerr != nil {
			return 0, mesh.Errorf(mesh.CodeInvalidRequest, "wait must be a duration like 30s")
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, mesh.Errorf(mesh.CodeInvalidRequest, "wait must not be negative")
	}
	return min(d, max), nil
}

// reportRequest is the body of progress, complete, fail and renew reports.
// Attempt is optional: simple runtimes omit it and report on whatever attempt
// they hold.
type reportRequest struct {
	Attempt int             `json:"attempt,omitempty"`
	Message string          `json:"message,omitempty"`
	Percent *float64        `json:"percent,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	// InputRequired (complete only) ends the turn asking for more input.
	InputRequired bool `json:"input_required,omitempty"`
}

func (g *Gateway) readReport(w http.ResponseWriter, r *http.Request) (*reportRequest, bool) {
	var in reportRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, lenient, &in); err != nil {
		g.writeError(w, r, err)
		return nil, false
	}
	return &in, true
}

func (g *Gateway) renew(w http.ResponseWriter, r *http.Request) {
	in, ok := g.readReport(w, r)
	if !ok {
		return
	}
	id := runtimeOf(r)
	runID := r.PathValue("taskRunId")
	res, err := g.client.Runtime(id.AgentID, id.RuntimeID).Renew(r.Context(), meshapi.RenewRequest{TaskRunIDs: []string{runID}, Attempt: in.Attempt})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if len(res.Renewed) == 0 {
		run, err := g.client.GetTaskRun(r.Context(), runID)
		if err == nil {
			err = sameAgent(id, run.TargetAgentID)
		}
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		e := mesh.Errorf(mesh.CodeStaleAttempt, "this runtime no longer holds task run %s", runID)
		e.Status = run.Status
		g.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// release gives back a claimed run the runtime never started (it was
// shutting down when the claim arrived); the attempt does not count.
func (g *Gateway) release(w http.ResponseWriter, r *http.Request) {
	in, ok := g.readReport(w, r)
	if !ok {
		return
	}
	id := runtimeOf(r)
	err := g.client.Runtime(id.AgentID, id.RuntimeID).Release(r.Context(), meshapi.ReleaseRequest{TaskRunID: r.PathValue("taskRunId"), Attempt: in.Attempt})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// replyRun answers a runtime's report with the run as it now is.
func (g *Gateway) replyRun(w http.ResponseWriter, r *http.Request, runID string, err error) {
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	run, err := g.client.GetTaskRun(r.Context(), runID)
	g.reply(w, r, http.StatusOK, run, err)
}
