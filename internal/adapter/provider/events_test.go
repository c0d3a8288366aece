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

// Gemini CLI's own words, as the real CLI prints them: its exit code names
// the reason, its coloured stderr message follows without colour codes, and
// its stderr retry notices are progress.
func TestGemini_UntrustedFolderAndRetriesInTheHostsWords(t *testing.T) {
	line := stripANSI("\x1b[31mGemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable\x1b[0m")
	p := newGeminiParser(func(string) {})
	_, err := p.outcome(&ExitError{Code: 55}, line)
	if err == nil || !strings.Contains(err.Error(), "gemini exited with status 55: does not trust the conversation folder: Gemini CLI is not running in a trusted directory") ||
		strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("err = %v", err)
	}
	for in, want := range map[string]string{
		"Attempt 1 failed with status 500. Retrying with backoff... ApiError: boom": "model API retry 1 (HTTP 500)",
		"Attempt 2 failed with 5xx error. Retrying with backoff...":                 "model API retry 2 (HTTP 5xx)",
		"Attempt 3 failed. Retrying with backoff...":                                "model API retry 3",
		"Ripgrep is not available. Falling back to GrepTool.":                       "",
	} {
		if got := geminiRetryProgress(in); got != want {
			t.Errorf("geminiRetryProgress(%q) = %q, want %q", in, got, want)
		}
	}
}
