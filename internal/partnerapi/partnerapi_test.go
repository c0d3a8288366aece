package partnerapi

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// TestCanTransition_IsSeed003sStateMachineExactly lists every allowed move;
// every other pair of states is refused.
func TestCanTransition_IsSeed003sStateMachineExactly(t *testing.T) {
	allowed := map[[2]State]bool{
		{StateSubmitted, StateWorking}: true, {StateSubmitted, StateCanceled}: true, {StateSubmitted, StateFailed}: true,
		{StateWorking, StateCompleted}: true, {StateWorking, StateFailed}: true, {StateWorking, StateInputRequired}: true, {StateWorking, StateCanceled}: true,
		{StateInputRequired, StateWorking}: true, {StateInputRequired, StateCanceled}: true, {StateInputRequired, StateFailed}: true,
	}
	all := []State{StateSubmitted, StateWorking, StateInputRequired, StateCompleted, StateFailed, StateCanceled}
	for _, from := range all {
		for _, to := range all {
			if got := CanTransition(from, to); got != allowed[[2]State{from, to}] {
				t.Errorf("CanTransition(%s, %s) = %v", from, to, got)
			}
		}
		if !from.Valid() || from.Terminal() != (from == StateCompleted || from == StateFailed || from == StateCanceled) {
			t.Errorf("%s: valid %v, terminal %v", from, from.Valid(), from.Terminal())
		}
	}
	if State("done").Valid() || CanTransition("", StateWorking) {
		t.Error("an unknown state is accepted")
	}
}

// TestVerify_AcceptsOnlyTheSecretsFreshSignature: a callback verifies with
// the secret it was signed with, within the tolerance, and with nothing else.
func TestVerify_AcceptsOnlyTheSecretsFreshSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"taskId":"t","state":"working"}`)
	sig := Sign("shared-secret-0123456789", ts, body)
	if err := Verify("shared-secret-0123456789", ts, sig, body, time.Minute, now.Add(30*time.Second)); err != nil {
		t.Fatalf("a good signature was refused: %v", err)
	}
	for name, c := range map[string]struct {
		secret, ts, sig string
		body            []byte
		at              time.Time
	}{
		"other secret":    {"another-secret-012345678", ts, sig, body, now},
		"changed body":    {"shared-secret-0123456789", ts, sig, []byte(`{"taskId":"t","state":"completed"}`), now},
		"other time":      {"shared-secret-0123456789", strconv.FormatInt(now.Unix()+1, 10), sig, body, now},
		"stale":           {"shared-secret-0123456789", ts, sig, body, now.Add(2 * time.Minute)},
		"not a number":    {"shared-secret-0123456789", "soon", sig, body, now},
		"bare hex":        {"shared-secret-0123456789", ts, sig[len("sha256="):], body, now},
		"empty signature": {"shared-secret-0123456789", ts, "", body, now},
	} {
		if err := Verify(c.secret, c.ts, c.sig, c.body, time.Minute, c.at); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
