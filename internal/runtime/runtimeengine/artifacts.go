package runtimeengine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/apiclient"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// ArtifactWriter materialises one artifact write request for a run and
// returns the artifact_ref part to append to the output (seed 000 steps 2, 4).
type ArtifactWriter interface {
	Write(ctx context.Context, runID string, attempt int, w adapterapi.ArtifactWrite) (map[string]any, error)
}

// content is an artifact write request's body.
func content(w adapterapi.ArtifactWrite) ([]byte, error) {
	if w.ContentBase64 == "" {
		return []byte(w.ContentText), nil
	}
	b, err := base64.StdEncoding.DecodeString(w.ContentBase64)
	if err != nil {
		return nil, fmt.Errorf("content_base64 is not valid base64: %w", err)
	}
	return b, nil
}

// Write implements ArtifactWriter on NATS: the artifact goes to the
// artifacts service in chunks on the runtime's own subjects.
func (t *natsTransport) Write(ctx context.Context, runID string, attempt int, w adapterapi.ArtifactWrite) (map[string]any, error) {
	body, err := content(w)
	if err != nil {
		return nil, err
	}
	up, err := t.rc.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: runID, Attempt: attempt, Size: int64(len(body))})
	if err != nil {
		return nil, err
	}
	if _, err := up.ReadFrom(bytes.NewReader(body)); err != nil {
		up.Abandon()
		return nil, err
	}
	a, err := up.End(0, mesh.Artifact{
		ArtifactType: w.ArtifactType, Filename: w.Filename, Title: w.Title,
		Summary: w.Summary, Keywords: w.Keywords, MimeType: w.MimeType,
	})
	if err != nil {
		return nil, err
	}
	return refPart(a.OutputRef())
}

// refPart is an output part as the adapter contract carries it.
func refPart(ref mesh.OutputRef) (map[string]any, error) {
	b, err := json.Marshal(ref)
	if err != nil {
		return nil, err
	}
	var part map[string]any
	return part, json.Unmarshal(b, &part)
}

// HTTPArtifacts writes artifacts through POST /task-runs/{id}/artifacts with
// the runtime's own credential (the adapter never calls the platform).
type HTTPArtifacts struct {
	API *apiclient.Client
}

// Write implements ArtifactWriter.
func (h HTTPArtifacts) Write(ctx context.Context, runID string, attempt int, w adapterapi.ArtifactWrite) (map[string]any, error) {
	body := map[string]any{
		"attempt": attempt, "artifact_type": w.ArtifactType, "filename": w.Filename, "title": w.Title,
		"summary": w.Summary, "keywords": w.Keywords, "mime_type": w.MimeType,
	}
	switch {
	case w.ContentBase64 != "":
		body["content_base64"] = w.ContentBase64
	default:
		body["content_text"] = w.ContentText
	}
	var res struct {
		ArtifactRef map[string]any `json:"artifact_ref"`
	}
	upload := meshapi.OpRuntimeArtifactOpen.REST
	path, err := upload.PathOf(map[string]string{"task_run_id": runID})
	if err != nil {
		return nil, err
	}
	if _, err := h.API.Do(ctx, upload.Method, path, nil, body, &res); err != nil {
		return nil, err
	}
	return res.ArtifactRef, nil
}

// ReadAttachment implements AttachmentReader: GET
// /agent-runtimes/runtime/artifacts/{id}/content, which serves only files of
// the runtime's own agent.
func (h HTTPArtifacts) ReadAttachment(ctx context.Context, artifactID string) ([]byte, error) {
	resp, err := h.API.Send(ctx, http.MethodGet, "/agent-runtimes/runtime/artifacts/"+url.PathEscape(artifactID)+"/content", nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAttachmentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAttachmentBytes {
		return nil, fmt.Errorf("attachment %s is larger than %d bytes", artifactID, maxAttachmentBytes)
	}
	return b, nil
}
