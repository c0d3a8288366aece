package runtimeengine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
)

// maxAttachmentBytes bounds the files passed inline to the adapter with one
// task, so a run-task request stays within what adapters accept.
const maxAttachmentBytes = 20 << 20

// AttachmentReader fetches a file the platform stored for a task's input
// (an A2A file part), with the runtime's own credential.
type AttachmentReader interface {
	ReadAttachment(ctx context.Context, artifactID string) ([]byte, error)
}

// withAttachments returns the run's input with every stored attachment's
// content inline (content_base64): the adapter never calls the platform, so
// the runtime fetches the files for it before dispatch.
func (e *Engine) withAttachments(ctx context.Context, run *mesh.TaskRun, input json.RawMessage) (json.RawMessage, error) {
	var in map[string]json.RawMessage
	if e.cfg.Attachments == nil || !mayHoldAttachments(input) || json.Unmarshal(input, &in) != nil || in["attachments"] == nil {
		return input, nil
	}
	var atts []adapterapi.Attachment
	if err := json.Unmarshal(in["attachments"], &atts); err != nil {
		return nil, fmt.Errorf("input.attachments is not a list of attachments: %w", err)
	}
	total := 0
	changed := false
	for i := range atts {
		a := &atts[i]
		if a.ArtifactID == "" || a.ContentBase64 != "" {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		b, err := e.cfg.Attachments.ReadAttachment(actx, a.ArtifactID)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("attachment %s of task run %s could not be fetched: %w", a.Name, run.ID, err)
		}
		if total += len(b); total > maxAttachmentBytes {
			return nil, fmt.Errorf("attachments of task run %s are larger than %d bytes together", run.ID, maxAttachmentBytes)
		}
		a.ContentBase64 = base64.StdEncoding.EncodeToString(b)
		a.Size = int64(len(b))
		changed = true
	}
	if !changed {
		return input, nil
	}
	raw, err := json.Marshal(atts)
	if err != nil {
		return nil, err
	}
	in["attachments"] = raw
	return json.Marshal(in)
}

// mayHoldAttachments reports whether input may have an "attachments" key:
// it holds the word, or an escape a key could be spelled with. Most inputs
// have neither, and go to the adapter without being decoded here.
func mayHoldAttachments(input json.RawMessage) bool {
	return bytes.Contains(input, []byte("attachments")) || bytes.IndexByte(input, '\\') >= 0
}
