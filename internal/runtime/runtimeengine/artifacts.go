package runtimeengine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// ArtifactWriter materialises one artifact of a run and returns the
// artifact_ref part to append to the output (seed 000 steps 2, 4).
type ArtifactWriter interface {
	Write(ctx context.Context, runID string, attempt int, a ArtifactContent) (map[string]any, error)
}

// ArtifactContent is one artifact to store: an adapter's write request,
// its content decoded, and the key that has the platform store it once
// however often it is sent (meshapi.OpenArtifactRequest.WriteKey).
type ArtifactContent struct {
	// Write describes the artifact; its content fields are not used.
	Write   adapterapi.ArtifactWrite
	Content []byte
	Key     string
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

// describeOnly is w without its content.
func describeOnly(w adapterapi.ArtifactWrite) adapterapi.ArtifactWrite {
	w.ContentText, w.ContentBase64 = "", ""
	return w
}

// Write implements ArtifactWriter on NATS: the artifact goes to the
// artifacts service in chunks on the runtime's own subjects.
func (t *natsTransport) Write(ctx context.Context, runID string, attempt int, a ArtifactContent) (map[string]any, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dropped := t.disconnects()
	go func() {
		select {
		case <-dropped:
			cancel(errWriteDropped)
		case <-ctx.Done():
		}
	}()
	ref, err := t.write(ctx, runID, attempt, a)
	if err != nil && errors.Is(context.Cause(ctx), errWriteDropped) {
		return nil, fmt.Errorf("%w: %w", mesh.Errorf(mesh.CodeUnavailable, "the connection to the platform dropped while artifact %s was written", a.Write.Filename), err)
	}
	return ref, err
}

// errWriteDropped ends an artifact write whose connection dropped.
var errWriteDropped = errors.New("the connection dropped")

func (t *natsTransport) write(ctx context.Context, runID string, attempt int, a ArtifactContent) (map[string]any, error) {
	up, err := t.rc.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: runID, Attempt: attempt, Size: int64(len(a.Content)), WriteKey: a.Key})
	if err != nil {
		return nil, err
	}
	if up.Stored != nil {
		return refPart(up.Stored.OutputRef())
	}
	if _, err := up.ReadFrom(bytes.NewReader(a.Content)); err != nil {
		up.Abandon()
		return nil, err
	}
	w := a.Write
	stored, err := up.End(0, mesh.Artifact{
		ArtifactType: w.ArtifactType, Filename: w.Filename, Title: w.Title,
		Summary: w.Summary, Keywords: w.Keywords, MimeType: w.MimeType,
	})
	if err != nil {
		return nil, err
	}
	return refPart(stored.OutputRef())
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
	API *restclient.Client
}

// Write implements ArtifactWriter. Content that is UTF-8 text goes as
// content_text, any other as content_base64: the platform stores the same
// bytes either way.
func (h HTTPArtifacts) Write(ctx context.Context, runID string, attempt int, a ArtifactContent) (map[string]any, error) {
	w := a.Write
	body := map[string]any{
		"attempt": attempt, "artifact_type": w.ArtifactType, "filename": w.Filename, "title": w.Title,
		"summary": w.Summary, "keywords": w.Keywords, "mime_type": w.MimeType,
	}
	switch {
	case utf8.Valid(a.Content):
		body["content_text"] = string(a.Content)
	default:
		body["content_base64"] = base64.StdEncoding.EncodeToString(a.Content)
	}
	var res struct {
		ArtifactRef map[string]any `json:"artifact_ref"`
	}
	at := meshapi.OpenArtifactRequest{TaskRunID: runID, WriteKey: a.Key}
	if _, err := h.API.Route(ctx, meshapi.OpRuntimeArtifactOpen.OpInfo, at, body, &res); err != nil {
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
