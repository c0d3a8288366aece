package envelope

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// The envelope protocol's internal routes (seed 002 "Internal API"). They
// answer errors in the platform's REST shape.

// agentEntry is one agent of GET /api/agents/status.
type agentEntry struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Type is the host type of the agent's runtime ("custom" without one).
	Type string `json:"type"`
	// Status is active while a runtime of the agent is online.
	Status        string     `json:"status"`
	LastExecution *time.Time `json:"lastExecution,omitempty"`
	// ConcurrentExecutions counts the agent's runs in progress.
	ConcurrentExecutions int `json:"concurrentExecutions"`
	// MaxConcurrent is how many runs the agent works on at once, as far as
	// the platform knows: a runtime does not report its concurrency, so it
	// is the larger of 1 and the runs in progress.
	MaxConcurrent int `json:"maxConcurrent"`
}

// admit authenticates the caller of an internal route and takes one
// request from its rate limit.
func (d *Endpoint) admit(w http.ResponseWriter, r *http.Request) (*admission.Caller, bool) {
	c, err := d.cfg.Admission.Admit(w, r)
	if err != nil {
		d.cfg.WriteError(w, r, platformError(err))
		return nil, false
	}
	return c, true
}

// platformError is the platform REST error of a refusal.
func platformError(err error) error {
	pe := classify(zerologNop, err)
	switch pe.Code {
	case codeUnauthenticated:
		return mesh.Errorf(mesh.CodeUnauthorized, "%s", pe.Message)
	case codeForbidden:
		return mesh.Errorf(mesh.CodeForbidden, "%s", pe.Message)
	case codeRateLimited:
		return mesh.Errorf(mesh.CodeRateLimited, "%s", pe.Message)
	}
	return err
}

// agentsStatus is GET /api/agents/status: every agent the caller reaches
// (the owner: every agent).
func (d *Endpoint) agentsStatus(w http.ResponseWriter, r *http.Request) {
	c, ok := d.admit(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	out := []agentEntry{}
	for _, a := range d.cfg.A2A.Agents() {
		if !c.Reaches(a) {
			continue
		}
		e, err := d.agentEntry(ctx, a)
		if err != nil {
			d.cfg.WriteError(w, r, err)
			return
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

func (d *Endpoint) agentEntry(ctx context.Context, a *mesh.Agent) (agentEntry, error) {
	e := agentEntry{ID: a.ID, Name: a.Name, Type: "custom", Status: "inactive", MaxConcurrent: 1}
	rts, err := d.cfg.Client.ListRuntimes(ctx, a.ID)
	if err != nil {
		return e, err
	}
	for _, rt := range rts.Runtimes {
		if rt.State != mesh.RuntimeActive {
			continue
		}
		if rt.HostType != "" {
			e.Type = rt.HostType
		}
		if rt.Status == mesh.PresenceOnline {
			e.Status = "active"
		}
	}
	if e.ConcurrentExecutions, err = d.running(ctx, a.ID); err != nil {
		return e, err
	}
	e.MaxConcurrent = max(1, e.ConcurrentExecutions)
	last, err := d.cfg.Client.ListTaskRuns(ctx, meshapi.ListTaskRunsRequest{AgentID: a.ID, Limit: 1})
	if err != nil {
		return e, err
	}
	if len(last.TaskRuns) > 0 {
		run := last.TaskRuns[0]
		t := run.CreatedAt
		if run.ClaimedAt != nil {
			t = *run.ClaimedAt
		}
		e.LastExecution = &t
	}
	return e, nil
}

// execution is one run of GET /api/executions.
type execution struct {
	ID            string     `json:"id"`
	AgentID       string     `json:"agentId"`
	Status        string     `json:"status"`
	StartTime     time.Time  `json:"startTime"`
	EndTime       *time.Time `json:"endTime,omitempty"`
	ExecutionTime int64      `json:"executionTime"`
}

// executionStatus is seed 002's name of a run status: success for a
// completed run, the run's status otherwise.
func executionStatus(s mesh.Status) string {
	switch s {
	case mesh.StatusCompleted:
		return "success"
	case mesh.StatusApprovalRequired:
		// Seed 002 has no approval state: the execution still runs.
		return string(mesh.StatusRunning)
	}
	return string(s)
}

// runStatus reads a status filter: seed 002's names or the run's.
func runStatus(s string) (mesh.Status, bool) {
	switch s {
	case "":
		return "", true
	case "success":
		return mesh.StatusCompleted, true
	case "error":
		return mesh.StatusFailed, true
	}
	st := mesh.Status(s)
	return st, st.Valid()
}

// executions is GET /api/executions?agentId=&status=&limit=&offset=: runs,
// newest first, with the total that match (owner only, since it lists every
// caller's runs: no credential is 401, another one 403). limit defaults to
// 50 (at most 500); offset skips matches.
// It pages over the task queue's in-memory index, so it stays fast on
// hundreds of thousands of runs (docs/benchmarks.md).
func (d *Endpoint) executions(w http.ResponseWriter, r *http.Request) {
	c, ok := d.admit(w, r)
	if !ok {
		return
	}
	switch {
	case c.Anonymous():
		admission.Challenge(w)
		d.cfg.WriteError(w, r, mesh.Errorf(mesh.CodeUnauthorized, "the execution history is the owner's: send the owner credential as Authorization: Bearer <owner token>"))
		return
	case !c.Owner():
		d.cfg.WriteError(w, r, mesh.Errorf(mesh.CodeForbidden, "the execution history is the owner's: send the owner credential"))
		return
	}
	q := r.URL.Query()
	status, valid := runStatus(q.Get("status"))
	if !valid {
		d.cfg.WriteError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "status must be success, failed, canceled, running, pending or input-required"))
		return
	}
	req := meshapi.ListTaskRunsRequest{AgentID: q.Get("agentId"), Status: status, Limit: meshapi.DefaultListLimit, WithTotal: true}
	for name, dst := range map[string]*int{"limit": &req.Limit, "offset": &req.Offset} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				d.cfg.WriteError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "%s must be a number, 0 or more", name))
				return
			}
			*dst = n
		}
	}
	if req.Limit == 0 {
		req.Limit = meshapi.DefaultListLimit
	}
	l, err := d.cfg.Client.ListTaskRuns(r.Context(), req)
	if err != nil {
		d.cfg.WriteError(w, r, err)
		return
	}
	out := make([]execution, 0, len(l.TaskRuns))
	for i := range l.TaskRuns {
		run := &l.TaskRuns[i]
		start := run.CreatedAt
		if run.ClaimedAt != nil {
			start = *run.ClaimedAt
		}
		out = append(out, execution{ID: run.ID, AgentID: run.TargetAgentID, Status: executionStatus(run.Status), StartTime: start, EndTime: run.EndedAt, ExecutionTime: executionTime(run)})
	}
	total := 0
	if l.Total != nil {
		total = *l.Total
	}
	writeJSON(w, http.StatusOK, map[string]any{"executions": out, "total": total, "limit": req.Limit, "offset": req.Offset})
}
