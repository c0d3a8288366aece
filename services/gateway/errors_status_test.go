package gateway

import (
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

func TestHTTPStatus_RefusedDelegationIsForbidden(t *testing.T) {
	if got := httpStatus(mesh.CodeDelegationNotAllowed); got != http.StatusForbidden {
		t.Fatalf("DELEGATION_NOT_ALLOWED answers %d, want 403", got)
	}
}
