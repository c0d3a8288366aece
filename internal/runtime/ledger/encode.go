package ledger

import (
	"encoding/json"
	"strconv"
	"time"
)

// appendEntry appends e's line to b: exactly the bytes json.Marshal(e)
// gives, written without reflection, since every run writes three lines
// (pulled, started, and how it ended). A field that needs escaping, and an
// outbox entry's report, are encoded by encoding/json itself.
func appendEntry(b []byte, e *Entry) ([]byte, error) {
	b = append(b, `{"ts":"`...)
	b = e.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = appendString(b, string(e.Event))
	b = append(b, `,"agent_id":`...)
	b = appendString(b, e.AgentID)
	b = append(b, `,"runtime_id":`...)
	b = appendString(b, e.RuntimeID)
	if e.TaskRunID != "" {
		b = append(b, `,"task_run_id":`...)
		b = appendString(b, e.TaskRunID)
	}
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.Status != "" {
		b = append(b, `,"status":`...)
		b = appendString(b, e.Status)
	}
	if e.ErrorCode != "" {
		b = append(b, `,"error_code":`...)
		b = appendString(b, e.ErrorCode)
	}
	if e.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, e.Message)
	}
	if e.Report != nil {
		report, err := json.Marshal(e.Report)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"report":`...), report...)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string. Printable ASCII other than the
// characters encoding/json escapes goes as it is; anything else is left to
// encoding/json, so the line is the same as json.Marshal's.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
