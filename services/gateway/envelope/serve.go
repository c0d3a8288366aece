package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/internal/sealed"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
	"github.com/a2amesh/a2amesh/services/gateway/inflight"
)

// Methods of the envelope protocol.
const (
	methodExecute = "execute-agent"
	methodStatus  = "status"
)

// capabilities are what status answers the agents can do.
var capabilities = []string{methodExecute, methodStatus}

// serveEnvelope is POST /a2a.
func (d *Endpoint) serveEnvelope(w http.ResponseWriter, r *http.Request) {
	body, perr := d.readBody(w, r)
	if perr != nil {
		d.reply(w, nil, "", nil, perr)
		return
	}
	m, perr := decode(body)
	if perr != nil {
		d.reply(w, m, "", nil, perr)
		return
	}
	c, err := d.cfg.Admission.Admit(w, r)
	if err != nil {
		d.reply(w, m, "", nil, classify(d.cfg.Logger, err))
		return
	}
	var (
		status int
		result any
		from   string
	)
	switch m.Payload.Method {
	case methodExecute:
		status, result, from, err = d.execute(r.Context(), c, m)
	case methodStatus:
		result, from, err = d.agentStatus(r.Context(), c, m)
		status = http.StatusOK
	default:
		err = &payloadError{Code: codeMethodNotFound, Message: "payload.method must be execute-agent or status"}
	}
	if err != nil {
		d.reply(w, m, from, nil, classify(d.cfg.Logger, err))
		return
	}
	d.replyStatus(w, status, m, from, result, nil)
}

// readBody takes the turn of a large body (inflight) and reads a JSON body
// within the endpoint's limit, once, into a buffer of its announced length.
func (d *Endpoint) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *payloadError) {
	if err := inflight.Take(w, r, inflight.Anonymous(r)); err != nil {
		return nil, classify(d.cfg.Logger, err)
	}
	b, err := httpbody.Read(w, r, d.cfg.MaxBodyBytes)
	switch {
	case errors.Is(err, httpbody.ErrTooLarge):
		return nil, &payloadError{Code: codePayloadTooLarge, Message: "the body is too large"}
	case err != nil:
		return nil, invalid("the body could not be read")
	}
	if !httpbody.Empty(b) && !httpbody.IsJSON(r.Header.Get("Content-Type")) {
		return nil, &payloadError{Code: codeUnsupportedMedia, Message: "Content-Type must be application/json"}
	}
	return b, nil
}

// reply answers with a response message whose status is the payload's.
func (d *Endpoint) reply(w http.ResponseWriter, req *message, from string, result any, perr *payloadError) {
	status := http.StatusOK
	if perr != nil {
		status = statusOf(perr.Code)
	}
	d.replyStatus(w, status, req, from, result, perr)
}

// replyStatus answers with a response message: a new id, inResponseTo the
// request's id, the request's addressing turned around, and the result or
// the error.
func (d *Endpoint) replyStatus(w http.ResponseWriter, status int, req *message, from string, result any, perr *payloadError) {
	resp := message{A2A: header{
		Protocol: protocolA2A, Version: protocolVersion, ID: uuid.NewString(),
		Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), Type: typeResponse,
	}}
	if req != nil {
		resp.A2A.InResponseTo = req.A2A.ID
		resp.Context = addressing{From: req.Context.To, To: req.Context.From, ConversationID: req.Context.ConversationID}
	}
	if from != "" {
		resp.Context.From = from
	}
	if perr != nil {
		resp.Payload.Error = perr
	} else {
		resp.Payload.Result = result
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// executeParams are execute-agent's params. The working directory reaches
// the agent's host through its runtime only: it is never logged, published
// or answered back. Environment variables are sealed to the agent's active
// runtime's key before anything is stored, so the platform keeps only
// ciphertext (docs/a2a.md, "Envelope protocol").
type executeParams struct {
	AgentID              string            `json:"agentId"`
	Input                *string           `json:"input"`
	WorkingDirectory     string            `json:"workingDirectory"`
	EnvironmentVariables map[string]string `json:"environmentVariables"`
}

// executeResult is execute-agent's result.
type executeResult struct {
	Output        string `json:"output"`
	ExecutionID   string `json:"executionId"`
	ExecutionTime int64  `json:"executionTime"`
	// Status is the execution's status when it has not completed: running
	// (past the wait) or input-required (the agent asks a question, in
	// output).
	Status string `json:"status,omitempty"`
}

// execute is execute-agent: a task run for the agent with input as its
// text, answered with its output once it ended. 503 when the agent cannot
// answer now (no runtime online, no routing rule); 202 with the execution
// still running when it takes longer than the endpoint waits.
func (d *Endpoint) execute(ctx context.Context, c *admission.Caller, m *message) (int, any, string, error) {
	var p executeParams
	if err := json.Unmarshal(m.Payload.Params, &p); err != nil {
		return 0, nil, "", &payloadError{Code: codeInvalidParams, Message: "params are agentId, input, workingDirectory and environmentVariables (an object of strings)"}
	}
	if p.Input == nil {
		return 0, nil, "", &payloadError{Code: codeInvalidParams, Message: "params.input is required"}
	}
	if err := sealed.Check(p.EnvironmentVariables); err != nil {
		return 0, nil, "", &payloadError{Code: codeInvalidParams, Message: "environmentVariables: " + mesh.AsError(err).Message}
	}
	agentID := p.AgentID
	if agentID == "" {
		agentID = m.Context.To
	}
	agent, cc, err := d.reach(ctx, c, agentID, meshapi.ScopeSend)
	if err != nil {
		return 0, nil, "", err
	}
	// Variables are sealed first, before anything is stored: the platform
	// keeps the ciphertext only, which the agent's active runtime alone opens.
	var box *mesh.SealedVariables
	if len(p.EnvironmentVariables) > 0 {
		if box, err = sealed.ForAgent(ctx, sealed.PlatformKeys{Client: d.cfg.Client}, agent.ID, p.EnvironmentVariables); err != nil {
			return 0, nil, agent.ID, err
		}
	}
	if !d.cfg.A2A.Online(ctx, agent.ID) && !d.delegates(ctx, agent.ID) {
		return 0, nil, agent.ID, &payloadError{Code: codeAgentUnavailable, Message: "agent " + agent.ID + " has no runtime online to execute now"}
	}
	conv := ""
	if m.Context.ConversationID != "" {
		if conv, err = d.conversation(ctx, agent.ID, cc.ID, m.Context.ConversationID); err != nil {
			return 0, nil, agent.ID, err
		}
	}
	input, _ := json.Marshal(map[string]string{"text": *p.Input})
	req := meshapi.CreateTaskRunRequest{
		TargetAgentID: agent.ID, Input: input, ConversationID: conv, InitiatorAgentID: cc.AgentID,
		// The same message sent again (a client's retry) is the same execution.
		IdempotencyKey: "envelope:" + secret.Hash(cc.ID + "\x00" + m.A2A.ID)[:40],
		Metadata:       map[string]any{"envelope_from": m.Context.From},
	}
	if p.WorkingDirectory != "" || len(p.EnvironmentVariables) > 0 {
		req.Environment = &mesh.HostEnvironment{WorkingDirectory: p.WorkingDirectory}
	}
	if box != nil {
		req.Environment.Sealed = box
	}
	res, err := d.cfg.Client.CreateTaskRun(ctx, req)
	if err != nil {
		return 0, nil, agent.ID, err
	}
	run := &res.TaskRun
	if res.Created {
		if err := d.cfg.A2A.Adopt(ctx, run, cc, a2atask.Version10); err != nil {
			return 0, nil, agent.ID, err
		}
	}
	if run, err = d.cfg.Runs.Await(ctx, d.cfg.Client, run, d.cfg.ExecuteWait); err != nil {
		return 0, nil, agent.ID, err
	}
	return executed(run, agent.ID)
}

// executed is execute-agent's answer for a run as it is.
func executed(run *mesh.TaskRun, agentID string) (int, any, string, error) {
	elapsed := executionTime(run)
	out := a2atask.Output(run).Text
	switch run.Status {
	case mesh.StatusCompleted:
		return http.StatusOK, executeResult{Output: out, ExecutionID: run.ID, ExecutionTime: elapsed}, agentID, nil
	case mesh.StatusInputRequired:
		return http.StatusOK, executeResult{Output: out, ExecutionID: run.ID, ExecutionTime: elapsed, Status: string(run.Status)}, agentID, nil
	case mesh.StatusFailed, mesh.StatusCanceled:
		pe := &payloadError{Code: codeExecutionFailed, Message: "the execution " + string(run.Status), ExecutionID: run.ID, ExecutionTime: &elapsed}
		if run.Error != nil {
			pe.Message, pe.Reason = run.Error.Message, run.Error.Code
		}
		return 0, nil, agentID, pe
	}
	return http.StatusAccepted, executeResult{ExecutionID: run.ID, ExecutionTime: elapsed, Status: executionStatus(run.Status)}, agentID, nil
}

// executionTime is how long a run has taken, in milliseconds: from its
// claim (its creation, when never claimed) to its end (now, while it runs).
func executionTime(run *mesh.TaskRun) int64 {
	start := run.CreatedAt
	if run.ClaimedAt != nil {
		start = *run.ClaimedAt
	}
	end := time.Now()
	if run.EndedAt != nil {
		end = *run.EndedAt
	}
	return max(0, end.Sub(start).Milliseconds())
}

// statusResult is status's result.
type statusResult struct {
	Status       string    `json:"status"`
	Capabilities []string  `json:"capabilities"`
	AgentInfo    agentInfo `json:"agentInfo"`
}

type agentInfo struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// agentStatus is status: ready when the agent's runtime is online and
// idle, busy when it is working on a run, error when it is offline.
func (d *Endpoint) agentStatus(ctx context.Context, c *admission.Caller, m *message) (any, string, error) {
	var p struct {
		AgentID string `json:"agentId"`
	}
	_ = json.Unmarshal(m.Payload.Params, &p)
	agentID := p.AgentID
	if agentID == "" {
		agentID = m.Context.To
	}
	agent, _, err := d.reach(ctx, c, agentID, meshapi.ScopeRead)
	if err != nil {
		return nil, "", err
	}
	state := "error"
	if d.cfg.A2A.Online(ctx, agent.ID) {
		state = "ready"
		busy, err := d.running(ctx, agent.ID)
		if err != nil {
			return nil, agent.ID, err
		}
		if busy > 0 {
			state = "busy"
		}
	}
	return statusResult{Status: state, Capabilities: capabilities, AgentInfo: agentInfo{ID: agent.ID, Name: agent.Name, Version: d.cfg.Version}}, agent.ID, nil
}

// running counts an agent's runs in progress.
func (d *Endpoint) running(ctx context.Context, agentID string) (int, error) {
	l, err := d.cfg.Client.ListTaskRuns(ctx, meshapi.ListTaskRunsRequest{AgentID: agentID, Status: mesh.StatusRunning, Limit: 1, WithTotal: true})
	if err != nil || l.Total == nil {
		return 0, err
	}
	return *l.Total, nil
}

// reach returns an agent the caller reaches, and the caller as that agent's
// endpoint sees it, checking a scope.
func (d *Endpoint) reach(ctx context.Context, c *admission.Caller, agentID, scope string) (*mesh.Agent, *admission.Caller, error) {
	a, err := d.cfg.A2A.Agent(ctx, agentID)
	if errors.Is(err, mesh.ErrNotFound) || (err == nil && !c.Reaches(a) && !c.Anonymous()) {
		return nil, nil, &payloadError{Code: codeAgentNotFound, Message: "no agent " + agentID + " that this credential reaches"}
	}
	if err != nil {
		return nil, nil, err
	}
	if !c.Reaches(a) {
		return nil, nil, &payloadError{Code: codeUnauthenticated, Message: "this agent needs a credential: send X-API-Key: <api key> or Authorization: Bearer <token>"}
	}
	cc := c.For(a)
	if !cc.Can(scope) {
		return nil, nil, &payloadError{Code: codeForbidden, Message: "this credential lacks the " + scope + " scope"}
	}
	return a, cc, nil
}

func (d *Endpoint) delegates(ctx context.Context, agentID string) bool {
	rules, err := d.cfg.Client.ListRoutingRules(ctx, agentID)
	return err == nil && len(rules.Rules) > 0
}
