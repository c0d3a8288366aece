package credentials

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

func (s *Service) handleRevoke(ctx context.Context, in *meshapi.RevokeRuntimeRequest) (*mesh.Runtime, error) {
	if !mesh.ValidID(in.RuntimeID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "runtime %q not found", in.RuntimeID)
	}
	if in.AgentID != "" {
		rec, _, err := s.runtimes.Get(ctx, in.RuntimeID)
		if errors.Is(err, mesh.ErrNotFound) {
			return nil, mesh.Errorf(mesh.CodeNotFound, "runtime %s not found", in.RuntimeID)
		} else if err != nil {
			return nil, err
		}
		if rec.AgentID != in.AgentID {
			return nil, mesh.Errorf(mesh.CodeForbidden, "runtime belongs to another agent")
		}
	}
	return s.revoke(ctx, in.RuntimeID, mesh.RuntimeRevoked, "revoked")
}

// revoke ends a runtime's credential. Revoking a revoked runtime changes nothing.
func (s *Service) revoke(ctx context.Context, runtimeID string, state mesh.RuntimeState, reason string) (*mesh.Runtime, error) {
	var tokenHash string
	rec, rev, err := s.runtimes.Modify(ctx, runtimeID, func(r *runtimeRecord) error {
		if r.State != mesh.RuntimeActive {
			return bus.ErrSkip
		}
		now := time.Now().UTC()
		tokenHash = r.TokenHash
		r.State = state
		r.RevokedAt = &now
		r.TokenHash = ""
		return nil
	})
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "runtime %s not found", runtimeID)
	}
	if err != nil {
		return nil, err
	}
	rec.Revision = rev
	if tokenHash == "" {
		return &rec.Runtime, nil
	}
	if err := s.creds.Delete(ctx, tokenHash, 0); err != nil {
		s.cfg.Logger.Error().Ctx(ctx).Err(err).Str("runtime_id", runtimeID).Msg("credential not deleted")
	}
	s.disconnect(bus.AccountRuntimes, bus.RuntimeUserName(runtimeID))
	if state == mesh.RuntimeRevoked {
		s.clearActive(ctx, rec.AgentID, runtimeID)
	}
	s.publishRuntime(ctx, mesh.EventRuntimeRevoked, &rec.Runtime, reason)
	return &rec.Runtime, nil
}

// clearActive removes the agent's active pointer if it still names runtimeID.
func (s *Service) clearActive(ctx context.Context, agentID, runtimeID string) {
	key := bus.ActiveRuntimeKey(agentID)
	cur, rev, err := s.active.Latest(ctx, key)
	if err != nil || cur.RuntimeID != runtimeID {
		return
	}
	_ = s.active.Delete(ctx, key, rev)
}

func (s *Service) handleAuthenticate(ctx context.Context, in *meshapi.AuthenticateRequest) (*meshapi.Identity, error) {
	return s.authenticate(ctx, in.TokenHash)
}

// authenticate resolves a credential hash to an active runtime.
func (s *Service) authenticate(ctx context.Context, tokenHash string) (*meshapi.Identity, error) {
	if len(tokenHash) != 64 {
		return nil, mesh.Errorf(mesh.CodeUnauthorized, "invalid runtime token")
	}
	refused := mesh.Errorf(mesh.CodeUnauthorized, "invalid or revoked runtime token; pair the same agent again with a new pairing code")
	cred, _, err := s.creds.Get(ctx, tokenHash)
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	rec, rev, err := s.runtimes.Get(ctx, cred.RuntimeID)
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	if rec.State != mesh.RuntimeActive || rec.TokenHash != tokenHash {
		return nil, refused
	}
	return &meshapi.Identity{AgentID: rec.AgentID, RuntimeID: rec.ID, Revision: rev}, nil
}

// unlessUnreadable answers a failed credential lookup: refused when the
// record does not exist, the read's own error otherwise. A caller told its
// credential is refused stops for good (a runtime exits and asks to be
// paired again), so a record that cannot be read at the moment (a node
// lost, a region cut off) must be an error it retries.
func unlessUnreadable(err, refused error) error {
	if errors.Is(err, mesh.ErrNotFound) {
		return refused
	}
	return err
}
