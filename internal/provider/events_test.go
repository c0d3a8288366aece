package provider

import (
	"strings"
	"testing"
)

// Lines as the real hosts print them. One field of a type the parser did not
// expect (Claude Code 2.1 prints retry_delay_ms as a fraction) must not cost
// the whole event.
func TestParsers_AFieldOfAnUnexpectedTypeDoesNotDropTheEvent(t *testing.T) {
	var got []string
	report := func(s string) { got = append(got, s) }
	p := newClaudeParser(report)
	_, _ = p.Write([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":567.2731,"error_status":401,"error":"authentication_failed","session_id":"s-1"}` + "\n"))
	_, _ = p.Write([]byte(`{"type":"system","subtype":"api_retry","attempt":"2","max_retries":10,"retry_delay_ms":1057,"error_status":401,"error":{"message":"bad key"},"session_id":"s-1"}` + "\n"))
	_, _ = p.Write([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1.0,"duration_ms":12.5,"session_id":"s-1"}` + "\n"))
	if len(got) != 2 || got[0] != "API retry 1/10 (authentication_failed HTTP 401), next in 0.6s" || !strings.HasPrefix(got[1], "API retry") {
		t.Fatalf("progress %q, want both retries", got)
	}
	out, err := p.outcome(nil, "")
	if err != nil || out.text != "done" || out.sessionID != "s-1" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if out.metadata["duration_ms"] != 12 {
		t.Errorf("duration_ms %v", out.metadata["duration_ms"])
	}
}
