package a2aserver

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
)

// apiKeyRequest is the optional body of POST /a2a/{agentId}/api-keys.
type apiKeyRequest struct {
	Name   string   `json:"name,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
}

// serveAPIKeys manages an agent's API keys: POST creates one (the key is in
// this answer only), GET lists them by prefix, DELETE revokes one. The
// credential service keeps them, hashed. These are people's routes (see
// Route.People): the gateway has admitted the owner credential or a web
// sign-in session before the request gets here.
func (s *Server) serveAPIKeys(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agentId")
	switch r.Method {
	case http.MethodPost:
		var in apiKeyRequest
		if err := decodeStrict(w, r, &in); err != nil {
			s.cfg.WriteError(w, r, err)
			return
		}
		res, err := s.client.CreateA2AKey(r.Context(), meshapi.CreateA2AKeyRequest{AgentID: agentID, Name: in.Name, Scopes: in.Scopes})
		if err != nil {
			s.cfg.WriteError(w, r, err)
			return
		}
		// The key is a credential: never cache the answer that shows it.
		w.Header().Set("Cache-Control", "no-store")
		writeJSONBody(w, http.StatusCreated, res)
	case http.MethodGet:
		l, err := s.client.ListA2AKeys(r.Context(), agentID)
		if err != nil {
			s.cfg.WriteError(w, r, err)
			return
		}
		writeJSONBody(w, http.StatusOK, l)
	case http.MethodDelete:
		keyID := r.PathValue("keyId")
		if err := s.client.RevokeA2AKey(r.Context(), meshapi.RevokeA2AKeyRequest{AgentID: agentID, KeyID: keyID}); err != nil {
			s.cfg.WriteError(w, r, err)
			return
		}
		s.cfg.Admission.KeyRevoked(r.Context(), agentID, keyID)
		w.WriteHeader(http.StatusNoContent)
	}
}

// decodeStrict reads an optional JSON object body, refusing unknown fields
// (a typo in "scopes" must not create a key with every scope).
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, 64<<10)
	if err != nil {
		return mesh.Errorf(mesh.CodePayloadTooLarge, "request body is larger than 64 KiB")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !httpbody.IsJSON(r.Header.Get("Content-Type")) {
		return mesh.Errorf(mesh.CodeUnsupportedMedia, "request body must be application/json")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body: %v", err)
	}
	return nil
}
