package partner

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// defaultMethod is the method of a task created through another endpoint.
const defaultMethod = "message/send"

// taskOf is seed 003's Task of a run: its state by the strict machine's
// names, the method and params it was created with (params are the run's
// input.data; a task of another endpoint shows its text), the result of a
// completed run (its output; for input-required, the question), the error
// of a failed or canceled one, sessionId (the caller's, or the run's
// conversation), clientAgentId (the caller's, or the initiating agent),
// remoteAgentId (the run's agent), progress 0-100 and, with a deadline,
// estimatedCompletion.
func taskOf(run *mesh.TaskRun, rec *taskRecord) partnerapi.Task {
	t := partnerapi.Task{
		TaskID: run.ID, State: partnerapi.StateOf(run.Status), Method: defaultMethod,
		SessionID: run.ConversationID, ClientAgentID: run.InitiatorAgentID, RemoteAgentID: run.TargetAgentID,
		CreatedAt: partnerapi.Time(run.CreatedAt), UpdatedAt: partnerapi.Time(run.UpdatedAt),
	}
	var in struct {
		Text string          `json:"text"`
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(run.Input, &in)
	if rec != nil {
		t.Method, t.ClientAgentID = rec.Method, rec.ClientAgentID
		if rec.SessionID != "" {
			t.SessionID = rec.SessionID
		}
		t.Params = in.Data
	}
	if len(t.Params) == 0 || string(t.Params) == "null" {
		t.Params, _ = json.Marshal(map[string]string{"text": in.Text})
	}
	if run.Status == mesh.StatusCompleted || run.Status == mesh.StatusInputRequired {
		t.Result = result(run)
	}
	if run.Error != nil && (run.Status == mesh.StatusFailed || run.Status == mesh.StatusCanceled) {
		t.Error = &partnerapi.Error{Code: runErrorCode(run), Message: run.Error.Message, Data: map[string]any{"reason": run.Error.Code}}
	}
	if run.EndedAt != nil {
		t.CompletedAt = partnerapi.Time(*run.EndedAt)
	}
	if run.Deadline != nil && !run.Status.Terminal() {
		t.EstimatedCompletion = partnerapi.Time(*run.Deadline)
	}
	t.Progress = progress(run)
	return t
}

// result is a run's output as a Task's result: the output object, with the
// links of the files the run delivered.
func result(run *mesh.TaskRun) any {
	var out map[string]any
	if json.Unmarshal(run.Output, &out) != nil || out == nil {
		out = map[string]any{}
	}
	delete(out, "artifacts")
	if len(run.Artifacts) > 0 {
		files := make([]map[string]any, 0, len(run.Artifacts))
		for _, a := range run.Artifacts {
			files = append(files, map[string]any{"artifactId": a.ArtifactID, "filename": a.Filename, "mimeType": a.MimeType, "size": a.Size})
		}
		out["files"] = files
	}
	return out
}

// progress is 0-100: the runtime's last percent while the run works, 100
// once it completed.
func progress(run *mesh.TaskRun) *float64 {
	var p float64
	switch {
	case run.Status == mesh.StatusCompleted:
		p = 100
	case run.Progress != nil && run.Progress.Percent != nil:
		p = math.Max(0, math.Min(100, *run.Progress.Percent))
	}
	return &p
}

// newTask is a task a caller asks for.
type newTask struct {
	method        string
	params        json.RawMessage
	clientAgentID string
	sessionID     string
}

// create makes the task run of a partner task and records the endpoint's side.
func (d *Endpoint) create(ctx context.Context, c *admission.Caller, agent *mesh.Agent, nt newTask) (*mesh.TaskRun, *taskRecord, error) {
	input := map[string]any{"text": paramsText(nt.method, nt.params)}
	if p := bytes.TrimSpace(nt.params); len(p) > 0 && string(p) != "null" {
		input["data"] = nt.params
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, nil, err
	}
	conv := ""
	if nt.sessionID != "" {
		if conv, err = d.records.conversation(ctx, agent.ID, c.ID, nt.sessionID); err != nil {
			return nil, nil, err
		}
	}
	res, err := d.cfg.Client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{
		TargetAgentID: agent.ID, Input: raw, ConversationID: conv, InitiatorAgentID: c.AgentID,
		Metadata: map[string]any{"partner_method": nt.method},
	})
	if err != nil {
		return nil, nil, err
	}
	run := &res.TaskRun
	rec := &taskRecord{Method: nt.method, ClientAgentID: nt.clientAgentID, SessionID: nt.sessionID, CreatedAt: time.Now().UTC()}
	if err := d.records.putTask(ctx, run, rec); err != nil {
		return nil, nil, err
	}
	// The A2A endpoint (and every other) shows the task to the same caller.
	if err := d.cfg.A2A.Adopt(ctx, run, c, a2atask.Version10); err != nil {
		return nil, nil, err
	}
	return run, rec, nil
}

// paramsText is the text a task's agent gets: the params' text, message
// (a string, or an A2A message's text parts), input or prompt; failing
// those, the method and its params as JSON, so an agent of another kind
// still learns what was asked.
func paramsText(method string, params json.RawMessage) string {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) == nil {
		for _, key := range []string{"text", "message", "input", "prompt"} {
			if t := textOf(p[key]); t != "" {
				return t
			}
		}
	}
	if len(bytes.TrimSpace(params)) == 0 {
		return method
	}
	var compact bytes.Buffer
	if json.Compact(&compact, params) != nil {
		return method
	}
	return method + " " + compact.String()
}

// textOf reads text from a string, or from an A2A message's text parts.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var msg struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	if json.Unmarshal(raw, &msg) != nil {
		return ""
	}
	var texts []string
	for _, part := range msg.Parts {
		if part.Text != "" {
			texts = append(texts, part.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// canRun reports whether anything can run a task for the agent: a paired
// runtime (online or not: tasks for an offline runtime wait for it), or a
// routing rule that delegates it.
func (d *Endpoint) canRun(ctx context.Context, agentID string) (bool, error) {
	l, err := d.cfg.Client.ListRuntimes(ctx, agentID)
	if err != nil {
		return false, err
	}
	for _, rt := range l.Runtimes {
		if rt.State == mesh.RuntimeActive {
			return true, nil
		}
	}
	return d.delegates(ctx, agentID), nil
}

// runsNow reports whether a task for the agent can be answered while the
// caller waits: its runtime is online, or a routing rule delegates it.
func (d *Endpoint) runsNow(ctx context.Context, agentID string) bool {
	return d.cfg.A2A.Online(ctx, agentID) || d.delegates(ctx, agentID)
}

func (d *Endpoint) delegates(ctx context.Context, agentID string) bool {
	rules, err := d.cfg.Client.ListRoutingRules(ctx, agentID)
	return err == nil && len(rules.Rules) > 0
}

// taskRequest is the body of POST /a2a/task.
type taskRequest struct {
	Method        string          `json:"method"`
	Params        json.RawMessage `json:"params"`
	ClientAgentID string          `json:"clientAgentId"`
	SessionID     string          `json:"sessionId"`
	// RemoteAgentID (or agentId, or params.agentId) names the agent.
	RemoteAgentID string `json:"remoteAgentId"`
	AgentID       string `json:"agentId"`
}

// createTask is POST /a2a/task: a long-running task, answered at once with
// its Task. 400 without method or clientAgentId; 503 ("A2A adapter not
// available") when nothing can run a task for the agent: no runtime paired
// and no routing rule delegating it.
func (d *Endpoint) createTask(w http.ResponseWriter, r *http.Request) {
	const internal = "Task creation failed"
	c, err := d.cfg.Admission.Admit(w, r)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	body, de := d.readBody(w, r)
	if de != nil {
		writeError(w, de)
		return
	}
	var in taskRequest
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, refuse(partnerapi.CodeParseError, http.StatusBadRequest, "the body is not a JSON object with the Task fields"))
		return
	}
	switch {
	case strings.TrimSpace(in.Method) == "":
		writeError(w, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "method is required"))
		return
	case strings.TrimSpace(in.ClientAgentID) == "":
		writeError(w, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "clientAgentId is required"))
		return
	case len(in.Params) > 0 && !jsonContainer(in.Params):
		writeError(w, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "params must be an object or an array"))
		return
	}
	agentID := firstOf(in.RemoteAgentID, in.AgentID, paramAgent(in.Params))
	if agentID == "" {
		writeError(w, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "remoteAgentId is required: the agent that runs the task"))
		return
	}
	ctx := r.Context()
	agent, cc, err := d.reach(ctx, c, agentID, meshapi.ScopeSend)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	ok, err := d.canRun(ctx, agent.ID)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	if !ok {
		writeError(w, unavailable("agent "+agent.ID+" has no runtime paired and no routing rule: nothing can run the task"))
		return
	}
	run, rec, err := d.create(ctx, cc, agent, newTask{method: in.Method, params: in.Params, clientAgentID: in.ClientAgentID, sessionID: in.SessionID})
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	writeJSON(w, http.StatusOK, taskOf(run, rec))
}

// paramAgent is params.agentId (or params.remoteAgentId).
func paramAgent(params json.RawMessage) string {
	var p struct {
		AgentID       string `json:"agentId"`
		RemoteAgentID string `json:"remoteAgentId"`
	}
	_ = json.Unmarshal(params, &p)
	return firstOf(p.AgentID, p.RemoteAgentID)
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

func jsonContainer(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[' || string(t) == "null")
}
