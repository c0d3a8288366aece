package credentials

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// A2A API keys let callers of one agent's A2A endpoint in. They live in their
// own bucket, under bus.A2AKeyKey and bus.A2AKeyHashKey.

// a2aKeyRecord is an API key as stored; only the hash of the key is kept.
type a2aKeyRecord struct {
	meshapi.A2AKey
	KeyHash string `json:"key_hash"`
}

// a2aKeyPrefixLen is how much of a key is kept to recognise it: the
// a2akey_ prefix and six characters, about 36 bits of 256, so the prefix
// says which key it is without weakening it.
const a2aKeyPrefixLen = len(secret.PrefixAPIKey) + 6

func (s *Service) handleA2AKeyCreate(ctx context.Context, in *meshapi.CreateA2AKeyRequest) (*meshapi.CreateA2AKeyResponse, error) {
	if err := s.checkAgent(ctx, in.AgentID); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.Name)
	if len(name) > 200 || !utf8.ValidString(name) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "name is at most 200 bytes of text")
	}
	scopes, err := a2aScopes(in.Scopes)
	if err != nil {
		return nil, err
	}
	key := secret.NewToken(secret.PrefixAPIKey)
	rec := &a2aKeyRecord{
		A2AKey: meshapi.A2AKey{
			KeyID: mesh.NewID(), AgentID: in.AgentID, Name: name, Prefix: key[:a2aKeyPrefixLen],
			Scopes: scopes, CreatedAt: time.Now().UTC(),
		},
		KeyHash: secret.Hash(key),
	}
	// The hash is written first: a listed key always works.
	if _, err := s.a2aKeys.Put(ctx, bus.A2AKeyHashKey(rec.KeyHash), &a2aKeyRecord{A2AKey: meshapi.A2AKey{KeyID: rec.KeyID, AgentID: rec.AgentID}}); err != nil {
		return nil, err
	}
	if _, err := s.a2aKeys.Create(ctx, bus.A2AKeyKey(rec.AgentID, rec.KeyID), rec); err != nil {
		return nil, err
	}
	return &meshapi.CreateA2AKeyResponse{A2AKey: rec.A2AKey, APIKey: key}, nil
}

// a2aScopes checks asked-for scopes; none asked for grants them all.
func a2aScopes(asked []string) ([]string, error) {
	if len(asked) == 0 {
		return meshapi.A2AScopes(), nil
	}
	var out []string
	for _, sc := range asked {
		if !meshapi.ValidA2AScope(sc) {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "unknown scope %q (known: %s)", sc, strings.Join(meshapi.A2AScopes(), ", "))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

func (s *Service) handleA2AKeyList(ctx context.Context, in *meshapi.ListA2AKeysRequest) (*meshapi.A2AKeyList, error) {
	if err := s.checkAgent(ctx, in.AgentID); err != nil {
		return nil, err
	}
	out := meshapi.A2AKeyList{Keys: []meshapi.A2AKey{}}
	lister, err := s.a2aKeys.KV().ListKeysFiltered(ctx, bus.A2AKeyKey(in.AgentID, "*"))
	if err != nil {
		return nil, err
	}
	for key := range lister.Keys() {
		rec, _, err := s.a2aKeys.Get(ctx, key)
		if err != nil {
			continue
		}
		out.Keys = append(out.Keys, rec.A2AKey)
	}
	sort.Slice(out.Keys, func(i, j int) bool { return out.Keys[i].KeyID < out.Keys[j].KeyID })
	return &out, nil
}

func (s *Service) handleA2AKeyRevoke(ctx context.Context, in *meshapi.RevokeA2AKeyRequest) (*meshapi.Empty, error) {
	if !mesh.ValidID(in.AgentID) || !mesh.ValidID(in.KeyID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "API key %q not found", in.KeyID)
	}
	rec, rev, err := s.a2aKeys.Latest(ctx, bus.A2AKeyKey(in.AgentID, in.KeyID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "API key %s not found", in.KeyID)
	}
	if err != nil {
		return nil, err
	}
	// The hash goes first: from then on the key is refused.
	if err := s.a2aKeys.Delete(ctx, bus.A2AKeyHashKey(rec.KeyHash), 0); err != nil {
		return nil, err
	}
	if err := s.a2aKeys.Delete(ctx, bus.A2AKeyKey(in.AgentID, in.KeyID), rev); err != nil && !errors.Is(err, mesh.ErrConflict) {
		return nil, err
	}
	return nil, nil
}

func (s *Service) handleA2AKeyAuthenticate(ctx context.Context, in *meshapi.AuthenticateA2AKeyRequest) (*meshapi.AdmittedA2AKey, error) {
	refused := mesh.Errorf(mesh.CodeUnauthorized, "invalid or revoked API key")
	ref, _, err := s.a2aKeys.Get(ctx, bus.A2AKeyHashKey(in.KeyHash))
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	if !mesh.ValidID(ref.AgentID) || !mesh.ValidID(ref.KeyID) {
		return nil, refused
	}
	rec, rev, err := s.a2aKeys.Get(ctx, bus.A2AKeyKey(ref.AgentID, ref.KeyID))
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	if !secret.Equal(rec.KeyHash, in.KeyHash) {
		return nil, refused
	}
	return &meshapi.AdmittedA2AKey{A2AKey: rec.A2AKey, Revision: rev}, nil
}
