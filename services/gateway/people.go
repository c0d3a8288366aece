package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/a2amesh/a2amesh/internal/sealed"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// issuePairingCode serves POST .../pairing-codes; its optional body's
// ttl_seconds shortens the code's lifetime below the platform default.
func (g *Gateway) issuePairingCode(w http.ResponseWriter, r *http.Request) {
	ttl, ok := g.decodeTTL(w, r)
	if !ok {
		return
	}
	code, err := g.client.IssuePairingCode(r.Context(), meshapi.IssuePairingCodeRequest{
		AgentID: r.PathValue("agentId"), TTL: ttl,
	})
	if err == nil {
		// The code is a credential until redeemed: never cache it anywhere.
		w.Header().Set("Cache-Control", "no-store")
	}
	g.reply(w, r, http.StatusCreated, code, err)
}

func (g *Gateway) listRuntimes(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agentId")
	if _, err := g.client.GetAgent(r.Context(), agentID); err != nil {
		g.writeError(w, r, err)
		return
	}
	l, err := g.client.ListRuntimes(r.Context(), agentID)
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) revokeRuntime(w http.ResponseWriter, r *http.Request) {
	rt, err := g.client.RevokeRuntime(r.Context(), meshapi.RevokeRuntimeRequest{RuntimeID: r.PathValue("runtimeId")})
	if err == nil {
		g.rtAuth.ended(r.Context(), rt.ID)
	}
	g.reply(w, r, http.StatusOK, rt, err)
}

func (g *Gateway) createTaskRun(w http.ResponseWriter, r *http.Request) {
	var in meshapi.CreateTaskRunRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	if len(in.Input) == 0 {
		g.writeError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "input is required, e.g. {\"text\": \"...\"}"))
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" && in.IdempotencyKey == "" {
		in.IdempotencyKey = key
	}
	if err := g.sealVariables(r.Context(), &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	res, err := g.client.CreateTaskRun(r.Context(), in)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if !res.Created {
		status = http.StatusOK
	}
	writeJSON(w, status, res.TaskRun)
}

// answerTaskRun gives a run waiting in input-required its next turn: the
// same run goes back to its agent (the task queue's continue, as the A2A
// endpoint's answer does).
func (g *Gateway) answerTaskRun(w http.ResponseWriter, r *http.Request) {
	var in meshapi.InputAnswer
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	input := in.Input
	switch {
	case in.Text != nil && len(in.Input) > 0, in.Text == nil && len(in.Input) == 0:
		g.writeError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, `give the answer as "text" or as "input" (an object such as {"text": "..."}), not both`))
		return
	case in.Text != nil:
		input, _ = json.Marshal(map[string]string{"text": *in.Text})
	}
	run, err := g.client.ContinueTaskRun(r.Context(), meshapi.ContinueTaskRunRequest{TaskRunID: r.PathValue("taskRunId"), Input: input})
	g.reply(w, r, http.StatusOK, run, err)
}

// decideApproval allows or denies the step a run waits for; the run goes
// back to running and its host hears the decision.
func (g *Gateway) decideApproval(w http.ResponseWriter, r *http.Request) {
	var in meshapi.ApprovalDecision
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	by := "owner"
	if sessionOf(r) != nil {
		by = "owner (web page)"
	}
	run, err := g.client.DecideApproval(r.Context(), meshapi.DecideApprovalRequest{TaskRunID: r.PathValue("taskRunId"), Decision: in.Decision, Reason: in.Reason, By: by})
	g.reply(w, r, http.StatusOK, run, err)
}

// reply writes v with status, or the error.
func (g *Gateway) reply(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

// rawObject reports whether raw holds a JSON object.
func rawObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &m) == nil
}

// sealVariables seals the caller's environment.variables to the target
// agent's active runtime, before anything is stored: the task queue gets
// the ciphertext only (docs/api.md, "Environment variables").
func (g *Gateway) sealVariables(ctx context.Context, in *meshapi.CreateTaskRunRequest) error {
	env := in.Environment
	if env == nil || (len(env.Variables) == 0 && env.Sealed == nil) {
		return nil
	}
	if env.Sealed != nil {
		return mesh.Errorf(mesh.CodeInvalidRequest, "environment.sealed_variables is set by the platform only; send environment.variables")
	}
	box, err := sealed.ForAgent(ctx, sealed.PlatformKeys{Client: g.client}, in.TargetAgentID, env.Variables)
	if err != nil {
		return err
	}
	in.Environment = &mesh.HostEnvironment{WorkingDirectory: env.WorkingDirectory, Sealed: box}
	return nil
}
