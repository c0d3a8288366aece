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

// TestSecrets_MaskHidesEveryRecordedCredential: whatever a test recorded
// (a password, a pairing code) is hidden wherever it appears, and nothing
// else is touched.
func TestSecrets_MaskHidesEveryRecordedCredential(t *testing.T) {
	var s Secrets
	s.Add("hunter2", "")
	s.Add("ABCD-1234")
	got := s.Mask("password hunter2, code ABCD-1234, again hunter2")
	if want := "password [credential], code [credential], again [credential]"; got != want {
		t.Fatalf("masked %q, want %q", got, want)
	}
	if got := s.Mask("nothing secret"); got != "nothing secret" {
		t.Fatalf("masked %q, want it unchanged", got)
	}
}
