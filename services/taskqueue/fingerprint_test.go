package taskqueue

import (
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/meshapi"
)

// TestFingerprint_StaysTheSameAcrossVersions: idempotency records outlive
// a process, so a retry after an upgrade must fingerprint as its first
// request did (the SHA-256 of json.Marshal of the request, with the input's
// keys in order and HTML escaped).
func TestFingerprint_StaysTheSameAcrossVersions(t *testing.T) {
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name string
		in   meshapi.CreateTaskRunRequest
		want string
	}{
		{"empty input", meshapi.CreateTaskRunRequest{Input: []byte(`{}`)}, "59a2013ce82c60c1d8a3f1854315f0a6940e84b42b7ce01da7926714df462c0d"},
		{"every field, newlines and HTML in strings, keys out of order", meshapi.CreateTaskRunRequest{
			Input:          []byte(`{"text":"<a & b>\n","data":{"z":1,"a":[true,null]}}`),
			ConversationID: "c", TaskType: "chat", InitiatorAgentID: "i", MaxAttempts: 2,
			Deadline: &deadline, TimeoutSeconds: 3, Metadata: map[string]any{"k": "v<"},
		}, "1fe741d98e062efe43170db354d7e64d60afc86633a766bd9a2c369d2459d17b"},
	} {
		if got := fingerprint(&c.in); got != c.want {
			t.Errorf("%s: fingerprint %s, want %s", c.name, got, c.want)
		}
	}
}
