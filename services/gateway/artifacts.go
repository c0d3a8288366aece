package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
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
	if !isJSONMedia(r.Header.Get("Content-Type")) {
		g.writeError(w, r, mesh.Errorf(mesh.CodeUnsupportedMedia, "request body must be application/json"))
		return
	}
	// base64 grows content by 4/3; allow for it and for the metadata.
	limit := g.cfg.MaxArtifactBytes/3*4 + 64<<10
	artifactID := mesh.NewID()
	up, err := g.receiveUpload(r.Context(), artifactID, http.MaxBytesReader(w, r.Body, limit))
	var a *mesh.Artifact
	if err == nil {
		a, err = g.newArtifact(runID, artifactID, up)
	}
	var stored *mesh.Artifact
	if err == nil {
		stored, err = g.client.CommitArtifact(r.Context(), meshapi.CommitArtifactRequest{
			AgentID: id.AgentID, RuntimeID: id.RuntimeID, Attempt: up.in.Attempt, Artifact: *a,
		})
	}
	if err != nil {
		// Content that was not committed is never reachable: remove it.
		if up != nil && up.stored {
			_ = g.objects.Delete(context.WithoutCancel(r.Context()), artifactID)
		}
		g.writeError(w, r, uploadError(err))
		return
	}
	writeJSON(w, http.StatusCreated, uploadResponse{Artifact: stored, ArtifactRef: refOf(stored)})
}

// upload is what receiveUpload read: the metadata, and what it measured of
// the content while it streamed it to the object store.
type upload struct {
	in     artifactWrite
	text   bool // the content was content_text
	stored bool // content reached the object store (wholly or in part)
	meter  contentMeter
}

// receiveUpload reads an upload body, streaming its content to the object
// store under artifactID as it arrives: memory stays a few buffers whatever
// the size, and content over MaxArtifactBytes stops the upload and leaves
// nothing stored.
func (g *Gateway) receiveUpload(ctx context.Context, artifactID string, body io.Reader) (*upload, error) {
	up := &upload{meter: contentMeter{limit: g.cfg.MaxArtifactBytes, sha: sha256.New()}}
	meta := func(name string, raw json.RawMessage) error { return up.in.set(name, raw) }
	content := func(name string, r io.Reader) error {
		if up.stored {
			return mesh.Errorf(mesh.CodeInvalidRequest, "give content_text or content_base64, not both")
		}
		up.stored, up.text = true, name == fieldContentText
		src := r
		if !up.text {
			src = &base64Reader{r: base64.NewDecoder(base64.StdEncoding, r)}
		}
		// The store writes a chunk per Read: fill each one.
		full := fullReader{io.TeeReader(src, &up.meter)}
		if _, err := g.objects.Put(ctx, jetstream.ObjectMeta{Name: artifactID}, full); err != nil {
			return fmt.Errorf("store artifact content: %w", err)
		}
		return nil
	}
	if err := newUploadReader(body).walk(meta, content); err != nil {
		return up, err
	}
	if !up.stored {
		return up, mesh.Errorf(mesh.CodeInvalidRequest, "content_text or content_base64 is required")
	}
	return up, nil
}

// uploadError is the error an upload is answered with: a body or a content
// over its limit is 413.
func uploadError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return mesh.Errorf(mesh.CodePayloadTooLarge, "request body is larger than %d bytes", tooLarge.Limit)
	case errors.Is(err, errContentTooLarge):
		return mesh.Errorf(mesh.CodePayloadTooLarge, "artifact content is larger than its limit")
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

// errContentTooLarge is content over MaxArtifactBytes.
var errContentTooLarge = errors.New("artifact content too large")

// contentMeter sees the content on its way to the store: it counts and
// hashes it, keeps its first bytes for a media type guess, tracks whether it
// is UTF-8, and fails the write past the limit (which fails the store's Put,
// and the Put removes what it wrote).
type contentMeter struct {
	limit   int64
	size    int64
	sha     hash.Hash
	head    []byte
	partial []byte // an incomplete UTF-8 sequence at the end of the last write
	invalid bool
}

func (m *contentMeter) Write(p []byte) (int, error) {
	m.size += int64(len(p))
	if m.size > m.limit {
		return 0, errContentTooLarge
	}
	m.sha.Write(p)
	if n := min(len(p), 512-len(m.head)); n > 0 {
		m.head = append(m.head, p[:n]...)
	}
	m.checkUTF8(p)
	return len(p), nil
}

// checkUTF8 validates UTF-8 across writes: a sequence cut by a write's end
// is completed by the next.
func (m *contentMeter) checkUTF8(p []byte) {
	if m.invalid {
		return
	}
	if len(m.partial) > 0 {
		take := min(len(p), utf8.UTFMax-len(m.partial))
		joined := append(append([]byte(nil), m.partial...), p[:take]...)
		r, size := utf8.DecodeRune(joined)
		if r == utf8.RuneError && size <= 1 && utf8.FullRune(joined) {
			m.invalid = true
			return
		}
		if !utf8.FullRune(joined) {
			m.partial = joined
			return
		}
		p = p[size-len(m.partial):]
		m.partial = nil
	}
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		m.invalid = true
		return
	}
	m.partial = append(m.partial[:0], p[cut:]...)
}

// utf8 reports whether the whole content was UTF-8.
func (m *contentMeter) utf8() bool { return !m.invalid && len(m.partial) == 0 }

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

// fullReader reads until p is full or the content ends.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return n, io.EOF
	}
	return n, err
}

// newArtifact validates an upload's metadata and returns the artifact.
func (g *Gateway) newArtifact(runID, artifactID string, up *upload) (*mesh.Artifact, error) {
	in := &up.in
	name, err := mesh.NormalizeFilename(in.Filename)
	if err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"title": in.Title, "summary": in.Summary, "artifact_type": in.ArtifactType, "mime_type": in.MimeType} {
		if len(v) > maxMetaText {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "%s is longer than %d bytes", field, maxMetaText)
		}
	}
	if len(in.Keywords) > 50 {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "at most 50 keywords")
	}
	mt := in.MimeType
	if mt != "" {
		if _, _, err := mime.ParseMediaType(mt); err != nil {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "mime_type %q is not a media type", mt)
		}
	} else {
		mt = guessMime(name, up.meter.head, up.text || up.meter.utf8())
	}
	return &mesh.Artifact{
		ID: artifactID, TaskRunID: runID, ArtifactType: in.ArtifactType, Filename: name,
		Title: in.Title, Summary: in.Summary, Keywords: in.Keywords, MimeType: mt,
		Size: up.meter.size, SHA256: hex.EncodeToString(up.meter.sha.Sum(nil)), CreatedAt: time.Now().UTC(),
	}, nil
}

// guessMime guesses a media type from the file name, else from whether the
// content is text, else from its first 512 bytes.
func guessMime(name string, head []byte, text bool) string {
	if mt := mime.TypeByExtension(path.Ext(name)); mt != "" {
		return mt
	}
	if text {
		return "text/plain; charset=utf-8"
	}
	return http.DetectContentType(head)
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
