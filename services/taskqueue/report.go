package taskqueue

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

const maxProgressMessage = 16 << 10

var errorCodePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

func (s *Service) handleProgress(ctx context.Context, in *meshapi.ProgressRequest) (*meshapi.ReportAck, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkProgress(in.Message, in.Percent); err != nil {
		return nil, err
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if err := r.CheckHeld(agentID, runtimeID, in.Attempt); err != nil {
			return "", err
		}
		r.Progress = &mesh.Progress{Message: in.Message, Percent: in.Percent, UpdatedAt: time.Now().UTC()}
		r.LeaseExpiresAt = s.leaseFromNow()
		return mesh.EventTaskRunProgress, nil
	})
	if err != nil {
		return nil, err
	}
	return meshapi.AckOf(run), nil
}

// checkProgress checks a progress report's message and percent.
func checkProgress(message string, percent *float64) error {
	if len(message) > maxProgressMessage {
		return mesh.Errorf(mesh.CodeInvalidRequest, "progress message is longer than %d bytes", maxProgressMessage)
	}
	if percent != nil && (*percent < 0 || *percent > 100) {
		return mesh.Errorf(mesh.CodeInvalidRequest, "percent must be between 0 and 100")
	}
	return nil
}

func (s *Service) handleComplete(ctx context.Context, in *meshapi.CompleteRequest) (*meshapi.ReportAck, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if len(in.Output) == 0 || string(in.Output) == "null" {
		in.Output = json.RawMessage(`{}`)
	}
	if !isJSONObject(in.Output) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "output must be a JSON object")
	}
	to := mesh.StatusCompleted
	if in.InputRequired {
		// The agent ended its turn with a question: the run waits for the
		// caller's answer (OpTaskContinue) instead of ending.
		to = mesh.StatusInputRequired
	}
	return s.end(ctx, agentID, runtimeID, in.TaskRunID, in.Attempt, to, in.Output, nil)
}

func (s *Service) handleFail(ctx context.Context, in *meshapi.FailRequest) (*meshapi.ReportAck, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	runErr, err := failure(in.Output)
	if err != nil {
		return nil, err
	}
	return s.end(ctx, agentID, runtimeID, in.TaskRunID, in.Attempt, mesh.StatusFailed, in.Output, runErr)
}

// failure reads the error of a fail report: output.error as text or an object
// with a message, and an optional machine code in output.code / output.error_code.
func failure(output json.RawMessage) (*mesh.RunError, error) {
	var out struct {
		Error     json.RawMessage `json:"error"`
		Code      string          `json:"code"`
		ErrorCode string          `json:"error_code"`
	}
	if !isJSONObject(output) || json.Unmarshal(output, &out) != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "output must be a JSON object with an \"error\"")
	}
	re := &mesh.RunError{Code: mesh.ReasonTaskFailed}
	var text string
	var obj struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	}
	switch {
	case json.Unmarshal(out.Error, &text) == nil && text != "":
		re.Message = text
	case json.Unmarshal(out.Error, &obj) == nil && obj.Message != "":
		re.Message = obj.Message
		if obj.Code != "" {
			out.Code = obj.Code
		}
	default:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "output.error must be a non-empty string or an object with a message")
	}
	for _, c := range []string{out.Code, out.ErrorCode} {
		if c != "" {
			if !errorCodePattern.MatchString(c) {
				return nil, mesh.Errorf(mesh.CodeInvalidRequest, "error code must be UPPER_SNAKE_CASE, at most 64 characters")
			}
			re.Code = c
		}
	}
	return re, nil
}

// end completes or fails the run a runtime holds, or ends its turn asking for
// input. Repeating the same report for the same attempt is answered with the
// run as it is.
func (s *Service) end(ctx context.Context, agentID, runtimeID, runID string, attempt int, to mesh.Status, output json.RawMessage, runErr *mesh.RunError) (*meshapi.ReportAck, error) {
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	usage := s.usageOf(runID, output)
	counted := false
	run, err := s.transitionFirst(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		counted = false
		if r.Status == to && r.TargetAgentID == agentID && r.HeldBy(runtimeID, attempt) {
			return "", errUnchanged
		}
		if err := r.CheckHeld(agentID, runtimeID, attempt); err != nil {
			return "", err
		}
		if usage != nil {
			// Each turn's answer reports that turn's usage: they add up.
			r.Usage, r.UsageTotal = r.Usage.Plus(usage), r.UsageTotal.Plus(usage)
			counted = true
		}
		now := time.Now().UTC()
		r.Status = to
		r.Output = output
		r.Error = runErr
		if to.Terminal() {
			r.EndedAt = &now
		}
		r.LeaseExpiresAt = nil
		return mesh.TaskRunEventType(to), nil
	}, func(*mesh.TaskRun) string {
		if counted {
			return mesh.EventTaskRunUsage
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	if counted {
		s.usageRecorded(ctx, run, usage)
	}
	return meshapi.AckOf(run), nil
}

func (s *Service) handleRenew(ctx context.Context, in *meshapi.RenewRequest) (*meshapi.RenewResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if len(in.TaskRunIDs) > maxRenewal {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "at most %d task runs per renewal", maxRenewal)
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	return s.renew(ctx, agentID, runtimeID, in.TaskRunIDs, in.Attempt)
}

// maxRenewal bounds the runs one renewal names.
const maxRenewal = 1000

// renew extends the leases of the given runs that the runtime still holds
// (at the given attempt, unless 0).
func (s *Service) renew(ctx context.Context, agentID, runtimeID string, ids []string, attempt int) (*meshapi.RenewResponse, error) {
	return s.renewHeld(ctx, ids, func(r *mesh.TaskRun) error {
		if r.Status == mesh.StatusApprovalRequired && r.TargetAgentID == agentID && r.HeldBy(runtimeID, attempt) {
			// Its host waits for a person: the runtime still holds it.
			return nil
		}
		return r.CheckHeld(agentID, runtimeID, attempt)
	})
}

// renewHeld extends the leases of the given runs that held accepts; those
// whose records refuse are reported lost, and their holder stops them. A
// lease the store could not extend (unavailable, or slow past the
// request's time) says nothing about who holds the run: the renewal then
// fails as UNAVAILABLE, after extending the others, and its caller asks
// again at once rather than stop a run it still holds.
func (s *Service) renewHeld(ctx context.Context, ids []string, held func(*mesh.TaskRun) error) (*meshapi.RenewResponse, error) {
	resp := &meshapi.RenewResponse{Renewed: []string{}}
	lease := s.leaseFromNow()
	unrenewed := 0
	var failed error
	for _, id := range ids {
		_, err := s.transition(ctx, id, func(r *mesh.TaskRun) (string, error) {
			if err := held(r); err != nil {
				return "", err
			}
			r.LeaseExpiresAt = lease
			return "", nil
		})
		switch {
		case err == nil:
			resp.Renewed = append(resp.Renewed, id)
		case notHeld(err):
			resp.Lost = append(resp.Lost, id)
		default:
			unrenewed, failed = unrenewed+1, err
		}
	}
	if unrenewed > 0 {
		s.cfg.Logger.Warn().Ctx(ctx).Err(failed).Int("task_runs", unrenewed).Msg("leases not extended: the store did not take them")
		return nil, mesh.Errorf(mesh.CodeUnavailable, "the leases of %d of %d task runs could not be extended now; renew again", unrenewed, len(ids))
	}
	resp.LeaseExpiresAt = *lease
	return resp, nil
}

// notHeld says whether a renewal's error is its run's record saying the
// run is not the caller's: another agent's, another attempt's, ended, or
// gone.
func notHeld(err error) bool {
	for _, refusal := range []error{mesh.ErrForbidden, mesh.ErrStaleAttempt, mesh.ErrInvalidTransition, mesh.ErrNotFound} {
		if errors.Is(err, refusal) {
			return true
		}
	}
	return false
}

// onHeartbeat renews the leases of the runs the heartbeating runtime lists,
// or of every run it holds when it lists none. The registry answers the
// heartbeat itself.
func (s *Service) onHeartbeat(msg *nats.Msg) {
	subject := bus.HandedOverSubject(msg.Subject, msg.Header)
	handedOver := subject != msg.Subject
	agentID, runtimeID, _, ok := bus.ParseRuntimeSubject(subject)
	if !ok || (!handedOver && s.handOverHeartbeat(msg, agentID)) {
		return
	}
	var hb struct {
		RunningTaskRunIDs  *[]string `json:"running_task_run_ids"`
		AbandonedClaimKeys []string  `json:"abandoned_claim_keys"`
	}
	_ = json.Unmarshal(msg.Data, &hb)
	var ids []string
	var abandoned map[string]bool
	if hb.RunningTaskRunIDs == nil {
		// A runtime that does not say what it holds (seed 001's heartbeat is
		// just its agent id) keeps every run it holds.
		ids = s.index.runningBy(runtimeID)
	} else {
		// One that does keeps only those: a run it holds without listing it
		// was claimed by an earlier process of the same runtime, killed and
		// started again, and must end when its lease does (no orphan).
		for _, id := range *hb.RunningTaskRunIDs {
			if mesh.ValidID(id) {
				ids = append(ids, id)
			}
		}
		abandoned = abandonedKeys(hb.AbandonedClaimKeys)
	}
	if len(ids) == 0 && len(abandoned) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return
	}
	ids = dedupe(ids)
	if len(ids) > 0 {
		s.renew(ctx, agentID, runtimeID, ids, 0)
	}
	if len(abandoned) > 0 {
		s.giveBackAbandoned(ctx, agentID, runtimeID, ids, abandoned)
	}
}

// abandonedKeys are the valid keys of a heartbeat's abandoned claims, at
// most meshapi.MaxAbandonedClaimKeys of them.
func abandonedKeys(keys []string) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys[:min(len(keys), meshapi.MaxAbandonedClaimKeys)] {
		if mesh.ValidID(k) {
			out[k] = true
		}
	}
	return out
}

// giveBackAbandoned gives back to pending each run held for the runtime
// under a key it abandoned (meshapi.HeartbeatRequest.AbandonedClaimKeys)
// that it neither listed as held nor took up: the claim was stored after
// the runtime stopped asking for it, so the runtime never started it, and
// without this it would stay held by nobody until its lease ended.
func (s *Service) giveBackAbandoned(ctx context.Context, agentID, runtimeID string, held []string, abandoned map[string]bool) {
	listed := make(map[string]bool, len(held))
	for _, id := range held {
		listed[id] = true
	}
	givable := func(r *mesh.TaskRun) bool {
		return heldFor(r, agentID, runtimeID) && !r.ClaimTakenUp && abandoned[r.ClaimKey]
	}
	// Read first, so that a run left alone (an earlier process's) costs
	// one read a heartbeat, not a transition's lock and reads.
	runs, err := s.heldMatching(ctx, runtimeID, listed, givable)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Msg("runs claimed under keys their runtime abandoned not looked for; the next heartbeat looks again")
		return
	}
	for _, run := range runs {
		given := false
		_, err := s.transition(ctx, run.ID, func(r *mesh.TaskRun) (string, error) {
			given = givable(r)
			if !given {
				return "", errUnchanged
			}
			return giveBack(r), nil
		})
		switch {
		case err != nil:
			s.cfg.Logger.Warn().Err(err).Str("task_run_id", run.ID).Msg("a run claimed under a key its runtime abandoned not given back; the next heartbeat tries again")
		case given:
			s.cfg.Logger.Info().Str("task_run_id", run.ID).Str("runtime_id", runtimeID).Msg("gave back a run claimed under a key its runtime abandoned: it was stored after the runtime stopped asking for it")
		}
	}
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func (s *Service) handleAttachArtifact(ctx context.Context, in *meshapi.AttachArtifactRequest) (*meshapi.TaskRunReply, error) {
	if err := s.runtimes.Check(ctx, in.AgentID, in.RuntimeID, false); err != nil {
		return nil, err
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if err := r.CheckHeld(in.AgentID, in.RuntimeID, in.Attempt); err != nil {
			return "", err
		}
		for _, a := range r.Artifacts {
			if a.ArtifactID == in.Artifact.ArtifactID {
				return "", errUnchanged
			}
		}
		r.Artifacts = append(r.Artifacts, in.Artifact)
		r.LeaseExpiresAt = s.leaseFromNow()
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}
