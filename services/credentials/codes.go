package credentials

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// codeEventData is what pairing-code events say: never the code itself.
type codeEventData struct {
	CodeID    string     `json:"code_id"`
	AgentID   string     `json:"agent_id"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RuntimeID string     `json:"runtime_id,omitempty"`
}

func (s *Service) handleIssue(ctx context.Context, in *meshapi.IssuePairingCodeRequest) (*meshapi.PairingCode, error) {
	if err := s.checkAgent(ctx, in.AgentID); err != nil {
		return nil, err
	}
	ttl := s.cfg.CodeTTL
	if in.TTL > 0 && in.TTL < ttl {
		ttl = in.TTL
	}
	code := secret.NewPairingCode()
	now := time.Now().UTC()
	rec := &codeRecord{CodeID: mesh.NewID(), AgentID: in.AgentID, IssuedAt: now, ExpiresAt: now.Add(ttl)}
	if _, err := s.codes.Create(ctx, secret.Hash(code), rec); err != nil {
		return nil, err
	}
	s.publish(ctx, bus.Event{
		Type: mesh.EventPairingCodeIssued, Kind: mesh.KindPairingCode, AgentID: rec.AgentID, Subject: rec.CodeID,
		ID: rec.CodeID + ".issued", Data: codeEventData{CodeID: rec.CodeID, AgentID: rec.AgentID, ExpiresAt: &rec.ExpiresAt},
	})
	return &meshapi.PairingCode{PairingToken: code, CodeID: rec.CodeID, AgentID: rec.AgentID, ExpiresAt: rec.ExpiresAt}, nil
}

func (s *Service) checkAgent(ctx context.Context, agentID string) error {
	_, err := s.findAgent(ctx, agentID)
	return err
}

// findAgent reads an agent, which must exist.
func (s *Service) findAgent(ctx context.Context, agentID string) (*mesh.Agent, error) {
	if !mesh.ValidID(agentID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %q not found", agentID)
	}
	a, _, err := s.agents.Get(ctx, agentID)
	if errors.Is(err, mesh.ErrNotFound) {
		// This region's copy may not hold an agent created elsewhere a
		// moment ago: the origin's says.
		a, _, err = s.agents.Latest(ctx, agentID)
	}
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %s not found", agentID)
	}
	return a, err
}

// errInvalidCode is the one answer for unknown, reused and malformed codes, so
// an attacker learns nothing from which it was.
func errInvalidCode() error {
	return mesh.Errorf(mesh.CodeInvalidPairing, "Invalid pairing token: it is unknown or was already used; generate a new pairing code for this agent on the platform that will run it")
}

// redeem consumes a pairing code exactly once: of any number of concurrent
// attempts, only the one whose conditional delete lands wins.
func (s *Service) redeem(ctx context.Context, code string) (*codeRecord, error) {
	key := secret.Hash(secret.NormalizePairingCode(code))
	rec, rev, err := s.codes.Latest(ctx, key)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, errInvalidCode()
	}
	if err != nil {
		return nil, err
	}
	if err := s.codes.Delete(ctx, key, rev); errors.Is(err, mesh.ErrConflict) {
		return nil, errInvalidCode()
	} else if err != nil {
		return nil, err
	}
	if time.Now().After(rec.ExpiresAt) {
		s.publishExpired(ctx, rec)
		return nil, mesh.Errorf(mesh.CodeInvalidPairing, "Invalid pairing token: the pairing code expired at %s; generate a new one for this agent", rec.ExpiresAt.Format(time.RFC3339))
	}
	return rec, nil
}

func (s *Service) publishExpired(ctx context.Context, rec *codeRecord) {
	s.publish(ctx, bus.Event{
		Type: mesh.EventPairingCodeExpired, Kind: mesh.KindPairingCode, AgentID: rec.AgentID, Subject: rec.CodeID,
		ID: rec.CodeID + ".expired", Data: codeEventData{CodeID: rec.CodeID, AgentID: rec.AgentID, ExpiresAt: &rec.ExpiresAt},
	})
}

// sweep removes expired codes and announces their expiry.
func (s *Service) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lister, err := s.codes.KV().ListKeys(ctx)
	if err != nil {
		return
	}
	now := time.Now()
	for key := range lister.Keys() {
		rec, rev, err := s.codes.Latest(ctx, key)
		if err != nil || now.Before(rec.ExpiresAt) {
			continue
		}
		if s.codes.Delete(ctx, key, rev) == nil {
			s.publishExpired(ctx, rec)
		}
	}
}
