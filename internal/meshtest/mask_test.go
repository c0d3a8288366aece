package meshtest

import (
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/secret"
)

// TestMaskCredentials_HidesEveryKindOfCredential: every credential the
// platform issues is masked in failure messages.
func TestMaskCredentials_HidesEveryKindOfCredential(t *testing.T) {
	for _, prefix := range []string{secret.PrefixRuntime, secret.PrefixOwner, secret.PrefixConsumer, secret.PrefixAPIKey,
		secret.PrefixSignIn, secret.PrefixWebSession, secret.PrefixPartnerSecret} {
		token := secret.NewToken(prefix)
		got := MaskCredentials(`{"runtime_token":"` + token + `","agent_id":"a"}`)
		if strings.Contains(got, token[len(prefix):]) || !strings.Contains(got, `"agent_id":"a"`) {
			t.Errorf("%s credential: %s", prefix, got)
		}
	}
}
