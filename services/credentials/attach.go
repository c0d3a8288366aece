package credentials

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/sealed"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

const maxFieldLen = 512

func (s *Service) handleAttach(ctx context.Context, in *meshapi.AttachRequest) (*meshapi.AttachResponse, error) {
	if strings.TrimSpace(in.PairingToken) == "" {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "pairing_token is required")
	}
	if err := validateAttach(in); err != nil {
		return nil, err
	}
	code, err := s.redeem(ctx, in.PairingToken)
	if err != nil {
		return nil, err
	}
	rt, token, err := s.attach(ctx, code.AgentID, in)
	if err != nil {
		return nil, err
	}
	home := ""
	if agent, _, err := s.agents.Get(ctx, code.AgentID); err == nil {
		home = agent.HomeRegion
	}
	nc, _ := s.natsConnection(ctx, home, rt.ID)
	s.publish(ctx, bus.Event{
		Type: mesh.EventPairingCodeRedeemed, Kind: mesh.KindPairingCode, AgentID: code.AgentID, Subject: code.CodeID,
		ID: code.CodeID + ".redeemed", Data: codeEventData{CodeID: code.CodeID, AgentID: code.AgentID, RuntimeID: rt.ID},
	})
	return &meshapi.AttachResponse{
		AgentID:            rt.AgentID,
		RuntimeID:          rt.ID,
		RuntimeToken:       token,
		HeartbeatTimeoutMS: s.cfg.HeartbeatTimeout.Milliseconds(),
		LeaseMS:            s.cfg.Lease.Milliseconds(),
		NATS:               nc,
		Platform:           s.cfg.Platform,
	}, nil
}

func validateAttach(in *meshapi.AttachRequest) error {
	fields := map[string]string{
		"device_name":                     in.DeviceName,
		"local_executor.type":             in.LocalExecutor.Type,
		"local_executor.ref":              in.LocalExecutor.Ref,
		"local_executor.workspace":        in.LocalExecutor.Workspace,
		"local_executor.cwd":              in.LocalExecutor.Cwd,
		"local_executor.instruction_file": in.LocalExecutor.InstructionFile,
	}
	if in.SealingKey != "" && !sealed.ValidPublicKey(in.SealingKey) {
		return mesh.Errorf(mesh.CodeInvalidRequest, "sealing_key must be a curve25519 public key (\"X…\")")
	}
	for name, v := range fields {
		if len(v) > maxFieldLen || !utf8.ValidString(v) {
			return mesh.Errorf(mesh.CodeInvalidRequest, "%s must be valid text of at most %d bytes", name, maxFieldLen)
		}
	}
	return nil
}

// attach creates (or re-keys) the runtime, makes it the agent's active
// runtime, and replaces the previous active one (one active runtime per agent,
// seed 001 §2.1). It returns the new credential.
func (s *Service) attach(ctx context.Context, agentID string, in *meshapi.AttachRequest) (*mesh.Runtime, string, error) {
	token := secret.NewToken(secret.PrefixRuntime)
	hash := secret.Hash(token)
	now := time.Now().UTC()
	rec := &runtimeRecord{
		Runtime: mesh.Runtime{
			ID:            mesh.NewID(),
			AgentID:       agentID,
			DeviceName:    in.DeviceName,
			LocalExecutor: in.LocalExecutor,
			State:         mesh.RuntimeActive,
			SealingKey:    in.SealingKey,
			AttachedAt:    now,
		},
		TokenHash: hash,
	}
	if reuse := s.reusable(ctx, agentID, in.RuntimeID); reuse != nil {
		rec.ID = reuse.ID
		if reuse.TokenHash != "" {
			_ = s.creds.Delete(ctx, reuse.TokenHash, 0)
		}
	}
	// The credential is written first: a runtime record is only ever active
	// when its credential exists.
	if _, err := s.creds.Put(ctx, hash, &credentialRecord{RuntimeID: rec.ID, AgentID: agentID}); err != nil {
		return nil, "", err
	}
	rev, err := s.runtimes.Put(ctx, rec.ID, rec)
	if err != nil {
		return nil, "", err
	}
	rec.Revision = rev
	previous, err := s.setActive(ctx, agentID, rec.ID)
	if err != nil {
		return nil, "", err
	}
	s.publishRuntime(ctx, mesh.EventRuntimeAttached, &rec.Runtime, "")
	if previous != "" && previous != rec.ID {
		if _, err := s.revoke(ctx, previous, mesh.RuntimeReplaced, "replaced by a new runtime paired to the same agent"); err != nil {
			s.cfg.Logger.Error().Ctx(ctx).Err(err).Str("runtime_id", previous).Msg("replaced runtime not revoked")
		}
	}
	return &rec.Runtime, token, nil
}

// reusable returns the runtime a re-pair asked to keep, if it belongs to agentID.
func (s *Service) reusable(ctx context.Context, agentID, runtimeID string) *runtimeRecord {
	if !mesh.ValidID(runtimeID) {
		return nil
	}
	rec, _, err := s.runtimes.Get(ctx, runtimeID)
	if err != nil || rec.AgentID != agentID {
		return nil
	}
	return rec
}

// homeOf is the home region of an agent ("" when it cannot be read: this
// region).
func (s *Service) homeOf(ctx context.Context, agentID string) string {
	a, _, err := s.agents.Get(ctx, agentID)
	if err != nil {
		return ""
	}
	return a.HomeRegion
}

// setActive points the agent at runtimeID and returns the runtime it replaced.
func (s *Service) setActive(ctx context.Context, agentID, runtimeID string) (string, error) {
	key := bus.ActiveRuntimeKey(agentID)
	for {
		cur, rev, err := s.active.Latest(ctx, key)
		if errors.Is(err, mesh.ErrNotFound) {
			// Kept by the agent's home region, so that two regions
			// attaching its first runtime at once meet in one bucket.
			if _, err := s.active.CreateIn(ctx, s.homeOf(ctx, agentID), key, &activeRecord{RuntimeID: runtimeID}); errors.Is(err, mesh.ErrConflict) {
				continue
			} else if err != nil {
				return "", err
			}
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if _, err := s.active.Update(ctx, key, &activeRecord{RuntimeID: runtimeID}, rev); errors.Is(err, mesh.ErrConflict) {
			continue
		} else if err != nil {
			return "", err
		}
		return cur.RuntimeID, nil
	}
}

// runtimeEventData is a runtime event's data: the public view plus why.
type runtimeEventData struct {
	mesh.RuntimeView
	Reason string `json:"reason,omitempty"`
}

func (s *Service) publishRuntime(ctx context.Context, typ string, rt *mesh.Runtime, reason string) {
	s.publish(ctx, bus.Event{
		Type: typ, Kind: mesh.KindRuntime, AgentID: rt.AgentID, Subject: rt.ID,
		ID:       rt.ID + "." + typ[len(mesh.EventTypePrefix):] + "." + rt.AttachedAt.Format("20060102T150405.000000000"),
		Sequence: rt.Revision,
		Data: runtimeEventData{
			RuntimeView: mesh.RuntimeView{
				RuntimeID: rt.ID, AgentID: rt.AgentID, DeviceName: rt.DeviceName,
				HostType: rt.LocalExecutor.Type, HostLabel: mesh.HostLabel(rt.LocalExecutor.Type),
				State: rt.State, Status: mesh.PresenceOffline, AttachedAt: rt.AttachedAt,
			},
			Reason: reason,
		},
	})
}

// handleSealingKey answers the public sealing key of an agent's active
// runtime: the key a caller's environment variables for the agent are
// sealed to. An agent without an active runtime, or whose runtime paired
// before runtimes had a key, has none (mesh.CodeNoSealingKey).
func (s *Service) handleSealingKey(ctx context.Context, in *meshapi.SealingKeyRequest) (*meshapi.SealingKey, error) {
	active, _, err := s.active.Latest(ctx, bus.ActiveRuntimeKey(in.AgentID))
	if errors.Is(err, mesh.ErrNotFound) || (err == nil && active.RuntimeID == "") {
		return nil, mesh.Errorf(mesh.CodeNoSealingKey, "agent %s has no active runtime to seal environment variables to: pair a runtime first", in.AgentID)
	}
	if err != nil {
		return nil, err
	}
	rec, _, err := s.runtimes.Latest(ctx, active.RuntimeID)
	if errors.Is(err, mesh.ErrNotFound) || (err == nil && (rec.State != mesh.RuntimeActive || rec.AgentID != in.AgentID)) {
		return nil, mesh.Errorf(mesh.CodeNoSealingKey, "agent %s has no active runtime to seal environment variables to: pair a runtime first", in.AgentID)
	}
	if err != nil {
		return nil, err
	}
	if rec.SealingKey == "" {
		return nil, mesh.Errorf(mesh.CodeNoSealingKey, "agent %s's runtime %s has no sealing key (it was paired by an older a2a-runtime): pair it again to take environment variables", in.AgentID, rec.ID)
	}
	return &meshapi.SealingKey{RuntimeID: rec.ID, SealingKey: rec.SealingKey}, nil
}
