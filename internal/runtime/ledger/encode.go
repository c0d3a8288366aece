package ledger

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/internal/jsontext"
)

// appendEntry appends e's line to b: exactly the bytes json.Marshal(e)
// gives, written without reflection, since every run writes three lines
// (pulled, started, and how it ended). A field that needs escaping, and an
// outbox entry's report, are encoded by encoding/json itself.
func appendEntry(b []byte, e *Entry) ([]byte, error) {
	b = append(b, `{"ts":"`...)
	b = e.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = jsontext.AppendString(b, string(e.Event))
	b = append(b, `,"agent_id":`...)
	b = jsontext.AppendString(b, e.AgentID)
	b = append(b, `,"runtime_id":`...)
	b = jsontext.AppendString(b, e.RuntimeID)
	if e.TaskRunID != "" {
		b = append(b, `,"task_run_id":`...)
		b = jsontext.AppendString(b, e.TaskRunID)
	}
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.Status != "" {
		b = append(b, `,"status":`...)
		b = jsontext.AppendString(b, e.Status)
	}
	if e.ErrorCode != "" {
		b = append(b, `,"error_code":`...)
		b = jsontext.AppendString(b, e.ErrorCode)
	}
	if e.Message != "" {
		b = append(b, `,"message":`...)
		b = jsontext.AppendString(b, e.Message)
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
