package runtimeengine_test

import (
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
)

// TestAdapterEnv_CarriesNoCredentialOfTheRuntimeUnderAnyName: the pairing
// code and the runtime token stay out of the adapter's environment under
// their current names and their former ones.
func TestAdapterEnv_CarriesNoCredentialOfTheRuntimeUnderAnyName(t *testing.T) {
	for _, name := range []string{"A2A_MESH_PAIRING_CODE", "A2A_PAIRING_CODE", "A2A_MESH_RUNTIME_TOKEN", "A2A_RUNTIME_TOKEN"} {
		t.Setenv(name, "secret-"+name)
	}
	t.Setenv("A2A_MESH_KEPT", "kept")
	env := strings.Join(runtimeengine.AdapterEnv(), "\n")
	if strings.Contains(env, "secret-") {
		t.Fatalf("the adapter's environment carries a credential of the runtime:\n%s", env)
	}
	if !strings.Contains(env, "A2A_MESH_KEPT=kept") {
		t.Fatal("the adapter's environment lost a variable that is not the runtime's")
	}
}
