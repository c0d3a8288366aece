package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
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

type uploadResponse struct {
	Artifact    *mesh.Artifact `json:"artifact"`
	ArtifactRef mesh.OutputRef `json:"artifact_ref"`
}

// uploadArtifact serves POST /task-runs/{id}/artifacts for an HTTP runtime:
// the artifact is written through the artifacts service, as a runtime on
// NATS writes it, with the content streamed from the body in chunks.
func (g *Gateway) uploadArtifact(w http.ResponseWriter, r *http.Request) {
	id := runtimeOf(r)
	// Opened before the body is read: a run this runtime does not hold is
	// refused before a large body is.
	var open meshapi.OpenArtifactRequest
	if err := meshapi.OpRuntimeArtifactOpen.REST.Bind(nil, r.PathValue, r.URL.Query(), &open); err != nil {
		g.writeError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "%v", err))
		return
	}
	up, err := g.client.Runtime(id.AgentID, id.RuntimeID).OpenArtifact(r.Context(), open)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if up.Stored != nil {
		// Its write key names an artifact already stored: the body is
		// that artifact's again, and is not read.
		writeJSON(w, http.StatusCreated, uploadResponse{Artifact: up.Stored, ArtifactRef: up.Stored.OutputRef()})
		return
	}
	if !httpbody.IsJSON(r.Header.Get("Content-Type")) {
		up.Abandon()
		g.writeError(w, r, mesh.Errorf(mesh.CodeUnsupportedMedia, "request body must be application/json"))
		return
	}
	// base64 grows content by 4/3; allow for it and for the metadata.
	limit := up.MaxBytes/3*4 + 64<<10
	in, err := receiveUpload(up, http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		up.Abandon()
		g.writeError(w, r, uploadError(err))
		return
	}
	stored, err := up.End(in.Attempt, mesh.Artifact{
		ArtifactType: in.ArtifactType, Filename: in.Filename, Title: in.Title,
		Summary: in.Summary, Keywords: in.Keywords, MimeType: in.MimeType,
	})
	if err != nil {
		g.writeError(w, r, uploadError(err))
		return
	}
	writeJSON(w, http.StatusCreated, uploadResponse{Artifact: stored, ArtifactRef: stored.OutputRef()})
}

// receiveUpload reads an upload body, streaming its content to the upload
// as it arrives: memory stays a few buffers whatever the size.
func receiveUpload(up *meshapi.ArtifactUpload, body io.Reader) (*artifactWrite, error) {
	var in artifactWrite
	stored := false
	meta := func(name string, raw json.RawMessage) error { return in.set(name, raw) }
	content := func(name string, r io.Reader) error {
		if stored {
			return mesh.Errorf(mesh.CodeInvalidRequest, "give content_text or content_base64, not both")
		}
		stored = true
		src := r
		if name != fieldContentText {
			src = &base64Reader{r: base64.NewDecoder(base64.StdEncoding, r)}
		}
		_, err := up.ReadFrom(src)
		return err
	}
	if err := newUploadReader(body).walk(meta, content); err != nil {
		return nil, err
	}
	if !stored {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "content_text or content_base64 is required")
	}
	return &in, nil
}

// uploadError is the error an upload is answered with: a body over its
// limit is 413.
func uploadError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return mesh.Errorf(mesh.CodePayloadTooLarge, "request body is larger than %d bytes", tooLarge.Limit)
	}
	var me *mesh.Error
	if errors.As(err, &me) {
		return me
	}
	return err
}

// set decodes one metadata field of an upload (unknown fields are ignored).
func (in *artifactWrite) set(name string, raw json.RawMessage) error {
	var dst any
	switch name {
	case "attempt":
		dst = &in.Attempt
	case "artifact_type":
		dst = &in.ArtifactType
	case "filename":
		dst = &in.Filename
	case "title":
		dst = &in.Title
	case "summary":
		dst = &in.Summary
	case "keywords":
		dst = &in.Keywords
	case "mime_type":
		dst = &in.MimeType
	default:
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return mesh.Errorf(mesh.CodeInvalidRequest, "%s has the wrong type", name)
	}
	return nil
}

// base64Reader reports malformed base64 as the client's mistake.
type base64Reader struct{ r io.Reader }

func (b *base64Reader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	var corrupt base64.CorruptInputError
	if errors.As(err, &corrupt) {
		return n, mesh.Errorf(mesh.CodeInvalidRequest, "content_base64 is not valid base64")
	}
	return n, err
}

func (g *Gateway) listArtifacts(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("taskRunId")
	run, err := g.client.GetTaskRun(r.Context(), runID)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	l, err := g.client.ListArtifacts(r.Context(), run)
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) downloadArtifact(w http.ResponseWriter, r *http.Request) {
	a, err := g.client.GetArtifact(r.Context(), r.PathValue("artifactId"))
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	content, err := g.client.ReadArtifact(r.Context(), meshapi.ReadArtifactRequest{ArtifactID: a.ID})
	if err != nil {
		g.writeError(w, r, fmt.Errorf("read artifact %s: %w", a.ID, err))
		return
	}
	a2aserver.WriteDownload(w, a, content)
}
