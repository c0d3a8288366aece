package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
)

// artifactWrite is the body of POST /task-runs/{id}/artifacts: one artifact
// write request of seed 000, with the content as text or base64.
type artifactWrite struct {
	Attempt       int      `json:"attempt,omitempty"`
	ArtifactType  string   `json:"artifact_type,omitempty"`
	Filename      string   `json:"filename"`
	Title         string   `json:"title,omitempty"`
	Summary       string   `json:"summary,omitempty"`
	Keywords      []string `json:"keywords,omitempty"`
	MimeType      string   `json:"mime_type,omitempty"`
	ContentText   *string  `json:"content_text,omitempty"`
	ContentBase64 *string  `json:"content_base64,omitempty"`
}

// artifactRef is the part a runtime appends to output.parts (seed 000 step 4).
type artifactRef struct {
	Type       string `json:"type"`
	ArtifactID string `json:"artifact_id"`
	Filename   string `json:"filename"`
	Title      string `json:"title,omitempty"`
	MimeType   string `json:"mime_type"`
	Size       int64  `json:"size"`
	URI        string `json:"uri"`
}

type uploadResponse struct {
	Artifact    *mesh.Artifact `json:"artifact"`
	ArtifactRef artifactRef    `json:"artifact_ref"`
}

const maxMetaText = 4096

func (g *Gateway) uploadArtifact(w http.ResponseWriter, r *http.Request) {
	id := runtimeOf(r)
	runID := r.PathValue("taskRunId")
	// Refuse early, before reading a large body, when the run is not this
	// runtime's to write to.
	run, err := g.client.GetTaskRun(r.Context(), runID)
	if err == nil {
		err = sameAgent(id, run.TargetAgentID)
	}
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	// base64 grows content by 4/3; allow for it and for the metadata.
	limit := g.cfg.MaxArtifactBytes/3*4 + 64<<10
	body, err := readBody(w, r, limit)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	var in artifactWrite
	if err := decodeJSON(body, lenient, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	a, content, err := g.newArtifact(runID, &in)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if _, err := g.objects.Put(r.Context(), jetstream.ObjectMeta{Name: a.ID}, bytes.NewReader(content)); err != nil {
		g.writeError(w, r, fmt.Errorf("store artifact content: %w", err))
		return
	}
	stored, err := g.client.CommitArtifact(r.Context(), meshapi.CommitArtifactRequest{
		AgentID: id.AgentID, RuntimeID: id.RuntimeID, Attempt: in.Attempt, Artifact: *a,
	})
	if err != nil {
		// Content that was not committed is never reachable: remove it.
		_ = g.objects.Delete(context.WithoutCancel(r.Context()), a.ID)
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, uploadResponse{Artifact: stored, ArtifactRef: refOf(stored)})
}

// newArtifact validates a write request and returns the metadata and content.
func (g *Gateway) newArtifact(runID string, in *artifactWrite) (*mesh.Artifact, []byte, error) {
	name, err := mesh.NormalizeFilename(in.Filename)
	if err != nil {
		return nil, nil, err
	}
	for field, v := range map[string]string{"title": in.Title, "summary": in.Summary, "artifact_type": in.ArtifactType, "mime_type": in.MimeType} {
		if len(v) > maxMetaText {
			return nil, nil, mesh.Errorf(mesh.CodeInvalidRequest, "%s is longer than %d bytes", field, maxMetaText)
		}
	}
	if len(in.Keywords) > 50 {
		return nil, nil, mesh.Errorf(mesh.CodeInvalidRequest, "at most 50 keywords")
	}
	var content []byte
	switch {
	case in.ContentText != nil && in.ContentBase64 != nil:
		return nil, nil, mesh.Errorf(mesh.CodeInvalidRequest, "give content_text or content_base64, not both")
	case in.ContentText != nil:
		content = []byte(*in.ContentText)
	case in.ContentBase64 != nil:
		if content, err = base64.StdEncoding.DecodeString(*in.ContentBase64); err != nil {
			return nil, nil, mesh.Errorf(mesh.CodeInvalidRequest, "content_base64 is not valid base64")
		}
	default:
		return nil, nil, mesh.Errorf(mesh.CodeInvalidRequest, "content_text or content_base64 is required")
	}
	if int64(len(content)) > g.cfg.MaxArtifactBytes {
		return nil, nil, mesh.Errorf(mesh.CodePayloadTooLarge, "artifact %s is larger than %d bytes", name, g.cfg.MaxArtifactBytes)
	}
	mt := in.MimeType
	if mt != "" {
		if _, _, err := mime.ParseMediaType(mt); err != nil {
			return nil, nil, mesh.Errorf(mesh.CodeInvalidRequest, "mime_type %q is not a media type", mt)
		}
	} else {
		mt = guessMime(name, content, in.ContentText != nil)
	}
	return &mesh.Artifact{
		ID: mesh.NewID(), TaskRunID: runID, ArtifactType: in.ArtifactType, Filename: name,
		Title: in.Title, Summary: in.Summary, Keywords: in.Keywords, MimeType: mt,
		Size: int64(len(content)), SHA256: sha256hex(content), CreatedAt: time.Now().UTC(),
	}, content, nil
}

func guessMime(name string, content []byte, text bool) string {
	if mt := mime.TypeByExtension(path.Ext(name)); mt != "" {
		return mt
	}
	if text || utf8.Valid(content) {
		return "text/plain; charset=utf-8"
	}
	return http.DetectContentType(content)
}

func refOf(a *mesh.Artifact) artifactRef {
	return artifactRef{
		Type: "artifact_ref", ArtifactID: a.ID, Filename: a.Filename, Title: a.Title,
		MimeType: a.MimeType, Size: a.Size, URI: "/artifacts/" + a.ID + "/content",
	}
}

func (g *Gateway) listArtifacts(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("taskRunId")
	if _, err := g.client.GetTaskRun(r.Context(), runID); err != nil {
		g.writeError(w, r, err)
		return
	}
	l, err := g.client.ListArtifacts(r.Context(), runID)
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) getArtifact(w http.ResponseWriter, r *http.Request) {
	a, err := g.client.GetArtifact(r.Context(), r.PathValue("artifactId"))
	g.reply(w, r, http.StatusOK, a, err)
}

func (g *Gateway) downloadArtifact(w http.ResponseWriter, r *http.Request) {
	a, err := g.client.GetArtifact(r.Context(), r.PathValue("artifactId"))
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	obj, err := g.objects.Get(r.Context(), a.ID)
	if err != nil {
		g.writeError(w, r, fmt.Errorf("read artifact %s: %w", a.ID, err))
		return
	}
	defer obj.Close()
	w.Header().Set("Content-Type", a.MimeType)
	w.Header().Set("Content-Length", strconv.FormatInt(a.Size, 10))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(a.Filename)}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Artifacts are agent output: never let a browser run them as a page of this origin.
	w.Header().Set("Content-Security-Policy", "sandbox")
	w.Header().Set("ETag", `"`+a.SHA256+`"`)
	_, _ = io.Copy(w, obj)
}
