package envelope_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestEnvelope_ExecutionsAskForACredential: the execution history without
// any credential is 401 with a challenge, like every other route that
// needs one; a credential that is not the owner's is 403; a wrong one 401.
func TestEnvelope_ExecutionsAskForACredential(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t)
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		code   mesh.Code
	}{
		{"no credential", nil, http.StatusUnauthorized, mesh.CodeUnauthorized},
		{"unknown API key", http.Header{"X-Api-Key": {"a2akey_" + strings.Repeat("x", 43)}}, http.StatusUnauthorized, mesh.CodeUnauthorized},
		{"agent API key", http.Header{"X-Api-Key": {d.key}}, http.StatusForbidden, mesh.CodeForbidden},
	} {
		r := d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions", Header: tc.header})
		e := r.ExpectError(t, tc.status, tc.code)
		challenge := r.Header.Get("WWW-Authenticate")
		if tc.status == http.StatusUnauthorized && !strings.Contains(challenge, "Bearer") {
			t.Errorf("%s: 401 without a WWW-Authenticate challenge (%q)", tc.name, challenge)
		}
		if e.Error.Message == "" {
			t.Errorf("%s: no message", tc.name)
		}
	}
}
