package taskqueue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Limits on task-run creation.
const (
	maxIdempotencyKeyLen = 255
	maxMetadataBytes     = 16 << 10
)

var taskTypePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// idempotencyRecord maps an idempotency key to the run it created, with a
// fingerprint of the request, so a key reused for a different request is refused.
type idempotencyRecord struct {
	TaskRunID   string    `json:"task_run_id"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"created_at"`
}

// fingerprint identifies what a create request asks for (after defaults), so
// a retry with the same key matches and a different request does not. It is
// the SHA-256 of the request's JSON with the input's keys in order, encoded
// straight into the hash: the input may be a mebibyte.
func fingerprint(in *meshapi.CreateTaskRunRequest) string {
	var input any
	_ = json.Unmarshal(in.Input, &input)
	h := sha256.New()
	_ = json.NewEncoder(withoutNewlines{h}).Encode(struct {
		Input          any            `json:"input"`
		Conversation   string         `json:"conversation_id"`
		TaskType       string         `json:"task_type"`
		Initiator      string         `json:"initiator_agent_id"`
		MaxAttempts    int            `json:"max_attempts"`
		Deadline       *time.Time     `json:"deadline"`
		TimeoutSeconds int64          `json:"timeout_seconds"`
		Metadata       map[string]any `json:"metadata"`
	}{input, in.ConversationID, in.TaskType, in.InitiatorAgentID, in.MaxAttempts, in.Deadline, in.TimeoutSeconds, in.Metadata})
	return hex.EncodeToString(h.Sum(nil))
}

// withoutNewlines drops the newline a json.Encoder ends its value with (the
// only one it writes: strings escape theirs), so the hash is json.Marshal's.
type withoutNewlines struct{ w io.Writer }

func (n withoutNewlines) Write(p []byte) (int, error) {
	size := len(p)
	for len(p) > 0 {
		line, rest, _ := bytes.Cut(p, []byte{'\n'})
		if _, err := n.w.Write(line); err != nil {
			return 0, err
		}
		p = rest
	}
	return size, nil
}

func (s *Service) handleCreate(ctx context.Context, in *meshapi.CreateTaskRunRequest) (*meshapi.CreateTaskRunResponse, error) {
	return s.create(ctx, in)
}

func (s *Service) create(ctx context.Context, in *meshapi.CreateTaskRunRequest) (*meshapi.CreateTaskRunResponse, error) {
	run, err := s.newRun(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := s.checkBudget(ctx, run); err != nil {
		return nil, err
	}
	// Routed before the idempotency key is taken, so a refusal leaves the
	// key free for the caller's retry.
	if run.DelegatedTo, err = s.delegationFor(ctx, run); err != nil {
		return nil, err
	}
	if in.IdempotencyKey != "" {
		existing, id, err := s.claimIdempotencyKey(ctx, in, run.ID)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			s.completeCreate(ctx, existing)
			return &meshapi.CreateTaskRunResponse{TaskRun: *existing.Public()}, nil
		}
		// The key names the one run it may ever create: this one, or the
		// one an earlier create chose and did not store (it failed, or
		// its answer was lost).
		run.ID = id
	}
	if run.ConversationID == "" {
		startConversation(run)
	}
	created, existing, err := s.store(ctx, in, run)
	if err != nil || existing != nil {
		return existing, err
	}
	// The event leaves off the run's lock, and ctx bounds the wait for it.
	created.wait(ctx)
	return &meshapi.CreateTaskRunResponse{TaskRun: *run.Public(), Created: true}, nil
}

// store stores a new run under its lock and queues its created event. When
// an earlier create with the same idempotency key stored it first, it
// answers with that run instead.
func (s *Service) store(ctx context.Context, in *meshapi.CreateTaskRunRequest, run *mesh.TaskRun) (*outgoing, *meshapi.CreateTaskRunResponse, error) {
	unlock := s.locks.lock(run.ID)
	defer unlock()
	rev, err := s.runs.Create(ctx, run.ID, run)
	if errors.Is(err, mesh.ErrConflict) && in.IdempotencyKey != "" {
		// Another create with the same key stored the run first.
		existing, existingRev, gerr := s.runs.Get(ctx, run.ID)
		if gerr != nil {
			return nil, nil, fmt.Errorf("read task run %s: %w", run.ID, gerr)
		}
		existing.Revision = existingRev
		return nil, &meshapi.CreateTaskRunResponse{TaskRun: *existing.Public()}, nil
	}
	if err != nil {
		// Whether or not the run was stored, the key keeps naming its
		// id: the caller's retry with the key stores it or finds it.
		return nil, nil, fmt.Errorf("create task run: %w", err)
	}
	run.Revision = rev
	s.recent.put(run, rev)
	// Queued in the outbox before the index shows the run pending, so an
	// offer finds its event on its way (see dispatch.go).
	created := s.announce(ctx, mesh.EventTaskRunCreated, run)
	s.runView.Apply(run.ID, headOf(run), rev)
	return created, nil, nil
}

// newRun validates a create request and builds the pending run.
func (s *Service) newRun(ctx context.Context, in *meshapi.CreateTaskRunRequest) (*mesh.TaskRun, error) {
	if err := s.checkAgent(ctx, in.TargetAgentID, "target_agent_id"); err != nil {
		return nil, err
	}
	if in.InitiatorAgentID != "" {
		if err := s.checkAgent(ctx, in.InitiatorAgentID, "initiator_agent_id"); err != nil {
			return nil, err
		}
	}
	if !isJSONObject(in.Input) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "input must be a JSON object, e.g. {\"text\": \"...\"}")
	}
	if in.TaskType == "" {
		in.TaskType = "chat"
	}
	if !taskTypePattern.MatchString(in.TaskType) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "task_type must be 1-64 lowercase letters, digits, '_', '.' or '-'")
	}
	if len(in.IdempotencyKey) > maxIdempotencyKeyLen {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "idempotency_key is longer than %d characters", maxIdempotencyKeyLen)
	}
	if in.MaxAttempts == 0 {
		in.MaxAttempts = 1
	}
	if in.MaxAttempts < 1 || in.MaxAttempts > meshapi.MaxAttemptsLimit {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "max_attempts must be between 1 and %d", meshapi.MaxAttemptsLimit)
	}
	if meta, _ := json.Marshal(in.Metadata); len(meta) > maxMetadataBytes {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "metadata is larger than %d bytes", maxMetadataBytes)
	}
	if err := checkLineage(in); err != nil {
		return nil, err
	}
	if in.Environment != nil && len(in.Environment.Variables) > 0 {
		// A run record is written to the store's files on disk, where a
		// value erased later keeps its bytes: secrets are never taken.
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "environment variables are not accepted: the platform never stores secrets for a host; set them in the environment of the agent's runtime")
	}
	if err := checkEnvironment(in.Environment); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	dl, err := deadline(in, now)
	if err != nil {
		return nil, err
	}
	run := &mesh.TaskRun{
		ID:               mesh.NewID(),
		TaskType:         in.TaskType,
		Input:            in.Input,
		InitiatorAgentID: in.InitiatorAgentID,
		TargetAgentID:    in.TargetAgentID,
		Region:           s.cfg.Region,
		Status:           mesh.StatusPending,
		MaxAttempts:      in.MaxAttempts,
		IdempotencyKey:   in.IdempotencyKey,
		Metadata:         in.Metadata,
		ParentTaskRunID:  in.ParentTaskRunID,
		DelegationChain:  in.DelegationChain,
		Environment:      in.Environment,
		TraceParent:      bus.TraceParent(ctx),
		Deadline:         dl,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	if in.ConversationID != "" {
		conv, err := s.findConversation(ctx, in.ConversationID)
		if err != nil {
			return nil, err
		}
		run.ConversationID, run.WorkspaceID = conv.ID, conv.WorkspaceID
	}
	return run, nil
}

// deadline reads a create request's deadline or timeout_seconds, at most
// mesh.MaxRunTimeout from now. The timeout is compared in seconds before it
// becomes a time.Duration, which would overflow past about 292 years.
func deadline(in *meshapi.CreateTaskRunRequest, now time.Time) (*time.Time, error) {
	maxSeconds := int64(mesh.MaxRunTimeout / time.Second)
	switch {
	case in.Deadline != nil && in.TimeoutSeconds != 0:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "give deadline or timeout_seconds, not both")
	case in.Deadline != nil:
		if !in.Deadline.After(now) {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "deadline is in the past")
		}
		if in.Deadline.After(now.Add(mesh.MaxRunTimeout)) {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "deadline is more than %d seconds (%s) from now", maxSeconds, mesh.MaxRunTimeout)
		}
		d := in.Deadline.UTC()
		return &d, nil
	case in.TimeoutSeconds < 0:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "timeout_seconds must be positive")
	case in.TimeoutSeconds > maxSeconds:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "timeout_seconds must be at most %d (%s)", maxSeconds, mesh.MaxRunTimeout)
	case in.TimeoutSeconds > 0:
		d := now.Add(time.Duration(in.TimeoutSeconds) * time.Second)
		return &d, nil
	}
	return nil, nil
}

func (s *Service) checkAgent(ctx context.Context, id, field string) error {
	if id == "" {
		return mesh.Errorf(mesh.CodeInvalidRequest, "%s is required", field)
	}
	if !mesh.ValidID(id) {
		return mesh.Errorf(mesh.CodeNotFound, "%s: agent %q not found", field, id)
	}
	if _, ok := s.agents.Get(id); ok {
		return nil
	}
	if _, _, err := s.agentStore.Get(ctx, id); errors.Is(err, mesh.ErrNotFound) {
		return mesh.Errorf(mesh.CodeNotFound, "%s: agent %s not found", field, id)
	} else if err != nil {
		return err
	}
	return nil
}

// idempotencyKey is the bucket key of a create request's idempotency key.
// Keys are scoped to the target agent and hashed: bucket keys have a
// restricted alphabet, and callers' keys may carry anything.
func idempotencyKey(in *meshapi.CreateTaskRunRequest) string {
	return secret.Hash(in.TargetAgentID + "\x00" + in.IdempotencyKey)
}

// claimIdempotencyKey records that the create request's key creates runID
// and returns runID. If the key was already used for the same request, it
// returns the run that use created or, when that run was never stored (its
// create failed or died), the id that use chose: whichever create stores
// that id first wins, so a key never creates two runs.
func (s *Service) claimIdempotencyKey(ctx context.Context, in *meshapi.CreateTaskRunRequest, runID string) (*mesh.TaskRun, string, error) {
	key := idempotencyKey(in)
	rec := &idempotencyRecord{TaskRunID: runID, Fingerprint: fingerprint(in), CreatedAt: time.Now().UTC()}
	for {
		_, err := s.idem.Create(ctx, key, rec)
		if err == nil {
			return nil, runID, nil
		}
		if !errors.Is(err, mesh.ErrConflict) {
			return nil, "", err
		}
		prev, _, err := s.idem.Get(ctx, key)
		if errors.Is(err, mesh.ErrNotFound) {
			continue // expired between the two calls
		}
		if err != nil {
			return nil, "", err
		}
		if prev.Fingerprint != "" && prev.Fingerprint != rec.Fingerprint {
			return nil, "", mesh.Errorf(mesh.CodeIdempotencyReplay, "idempotency key %q was already used for a different request to this agent", in.IdempotencyKey)
		}
		run, runRev, err := s.runs.Get(ctx, prev.TaskRunID)
		if errors.Is(err, mesh.ErrNotFound) {
			return nil, prev.TaskRunID, nil
		}
		if err != nil {
			return nil, "", err
		}
		run.Revision = runRev
		return run, "", nil
	}
}

// isJSONObject reports whether raw is one JSON object. It checks without
// decoding: an input may be a mebibyte, and a decode would copy it.
func isJSONObject(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}
