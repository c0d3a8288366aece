package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

const testMaxArtifactBytes = 4096

type uploaded struct {
	Artifact    mesh.Artifact `json:"artifact"`
	ArtifactRef struct {
		Type       string `json:"type"`
		ArtifactID string `json:"artifact_id"`
		Filename   string `json:"filename"`
		MimeType   string `json:"mime_type"`
		Size       int64  `json:"size"`
		URI        string `json:"uri"`
	} `json:"artifact_ref"`
}

func upload(t *testing.T, p *meshtest.Platform, runID, token string, body any) *meshtest.Response {
	t.Helper()
	return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runID + "/artifacts", RuntimeToken: token, JSON: body})
}

// TestArtifacts_UploadListAndDownload stores a text and a binary artifact for
// a running run and reads them back through every people route.
func TestArtifacts_UploadListAndDownload(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.MaxArtifactBytes = testMaxArtifactBytes })
	agent := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, agent.ID, "write a report")
	events := p.StreamEvents(t, url.Values{"task_run_id": {run.ID}})

	var text uploaded
	upload(t, p, run.ID, rt.RuntimeToken, map[string]any{
		"filename": "reports/r.md", "mime_type": "text/markdown", "content_text": "# hi", "title": "Report",
	}).Expect(t, http.StatusCreated).Decode(t, &text)
	ref := text.ArtifactRef
	if ref.Type != "artifact_ref" || !mesh.ValidID(ref.ArtifactID) || ref.Filename != "reports/r.md" || ref.MimeType != "text/markdown" ||
		ref.Size != 4 || ref.URI != "/artifacts/"+ref.ArtifactID+"/content" {
		t.Fatalf("artifact_ref: %+v", ref)
	}
	if ev := events.Next(t, 5*time.Second); ev.Type != mesh.EventArtifactCreated || ev.Subject != ref.ArtifactID {
		t.Fatalf("event after upload: %s about %s, want artifact.created about %s", ev.Type, ev.Subject, ref.ArtifactID)
	}

	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	random := make([]byte, 1000)
	_, _ = rand.Read(random)
	binary = append(binary, random...)
	var bin uploaded
	upload(t, p, run.ID, rt.RuntimeToken, map[string]any{
		"filename": "./out//data.bin", "mime_type": "application/octet-stream", "content_base64": base64.StdEncoding.EncodeToString(binary),
	}).Expect(t, http.StatusCreated).Decode(t, &bin)
	if bin.ArtifactRef.Filename != "out/data.bin" || bin.ArtifactRef.Size != int64(len(binary)) {
		t.Fatalf("binary artifact_ref: %+v, want the cleaned name out/data.bin and size %d", bin.ArtifactRef, len(binary))
	}

	// The run lists both, oldest first, and carries their refs.
	var list struct {
		Artifacts []mesh.Artifact `json:"artifacts"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + run.ID + "/artifacts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Artifacts) != 2 || list.Artifacts[0].ID != ref.ArtifactID || list.Artifacts[1].ID != bin.ArtifactRef.ArtifactID {
		t.Fatalf("run's artifacts: %+v", list.Artifacts)
	}
	if got := p.GetTask(run.ID); len(got.Artifacts) != 2 || got.Artifacts[0].ArtifactID != ref.ArtifactID {
		t.Fatalf("run record's artifact refs: %+v", got.Artifacts)
	}

	var meta mesh.Artifact
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + ref.ArtifactID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &meta)
	sum := sha256.Sum256([]byte("# hi"))
	if meta.TaskRunID != run.ID || meta.AgentID != agent.ID || meta.ConversationID != run.ConversationID || meta.WorkspaceID != run.WorkspaceID ||
		meta.Title != "Report" || meta.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("artifact metadata: %+v", meta)
	}

	for _, c := range []struct {
		id, mime string
		want     []byte
	}{
		{ref.ArtifactID, "text/markdown", []byte("# hi")},
		{bin.ArtifactRef.ArtifactID, "application/octet-stream", binary},
	} {
		resp := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + c.id + "/content", Owner: true}).Expect(t, http.StatusOK)
		if !bytes.Equal(resp.Body, c.want) {
			t.Errorf("content of %s: %d bytes differ from the %d uploaded", c.id, len(resp.Body), len(c.want))
		}
		if ct := resp.Header.Get("Content-Type"); ct != c.mime {
			t.Errorf("content of %s: Content-Type %q, want %q", c.id, ct, c.mime)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Security-Policy") != "sandbox" {
			t.Errorf("content of %s is served without nosniff and a sandbox policy: %v", c.id, resp.Header)
		}
	}
	// Completing with the refs keeps them on the run.
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "done", "artifact_refs": []any{ref}}}).Expect(t, http.StatusOK)
	if got := p.GetTask(run.ID); len(got.Artifacts) != 2 || !strings.Contains(string(got.Output), ref.ArtifactID) {
		t.Fatalf("completed run lost its artifacts: %+v / %s", got.Artifacts, got.Output)
	}
}

// TestArtifacts_BadUploadsAreRefusedAndStoreNothing covers names that would
// escape the workspace, bodies that are too large, and runs the runtime does
// not hold; none of them leaves content behind in the object store.
func TestArtifacts_BadUploadsAreRefusedAndStoreNothing(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.MaxArtifactBytes = testMaxArtifactBytes })
	agent := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, agent.ID, "running")
	pending := p.CreateTask(agent.ID, "pending")
	done := p.CreateTask(agent.ID, "done")
	other := p.OnlineRuntime(t, p.CreateAgent("other").ID)

	for _, name := range []string{"../x", "/etc/passwd", "a/../../b", "..", "a/..", "", ".", "./", `C:\x`, `a\b`, "c:x", "a\x00b", "a\nb", "//", strings.Repeat("n", 513)} {
		e := upload(t, p, run.ID, rt.RuntimeToken, map[string]any{"filename": name, "content_text": "x"}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
		if !strings.Contains(e.Error.Message, "filename") && !strings.Contains(e.Error.Message, "'..'") {
			t.Errorf("filename %q: message %q does not say the name is the problem", name, e.Error.Message)
		}
	}
	bad := []struct {
		name   string
		body   map[string]any
		status int
		code   mesh.Code
	}{
		{"text over the limit", map[string]any{"filename": "big.txt", "content_text": strings.Repeat("x", testMaxArtifactBytes+1)}, http.StatusRequestEntityTooLarge, mesh.CodePayloadTooLarge},
		{"base64 over the limit", map[string]any{"filename": "big.bin", "content_base64": base64.StdEncoding.EncodeToString(make([]byte, testMaxArtifactBytes+1))}, http.StatusRequestEntityTooLarge, mesh.CodePayloadTooLarge},
		{"body far over the limit", map[string]any{"filename": "huge.txt", "content_text": strings.Repeat("x", 200<<10)}, http.StatusRequestEntityTooLarge, mesh.CodePayloadTooLarge},
		{"both contents", map[string]any{"filename": "a.txt", "content_text": "x", "content_base64": "eA=="}, http.StatusBadRequest, mesh.CodeInvalidRequest},
		{"no content", map[string]any{"filename": "a.txt"}, http.StatusBadRequest, mesh.CodeInvalidRequest},
		{"bad base64", map[string]any{"filename": "a.bin", "content_base64": "not base64!"}, http.StatusBadRequest, mesh.CodeInvalidRequest},
		{"bad mime type", map[string]any{"filename": "a.txt", "content_text": "x", "mime_type": "text/"}, http.StatusBadRequest, mesh.CodeInvalidRequest},
		{"long title", map[string]any{"filename": "a.txt", "content_text": "x", "title": strings.Repeat("t", 4097)}, http.StatusBadRequest, mesh.CodeInvalidRequest},
	}
	for _, b := range bad {
		resp := upload(t, p, run.ID, rt.RuntimeToken, b.body)
		if resp.Status != b.status {
			t.Errorf("%s: HTTP %d, want %d: %s", b.name, resp.Status, b.status, resp.Body)
			continue
		}
		if e := resp.Err(t); e.Error.Code != string(b.code) {
			t.Errorf("%s: code %s, want %s", b.name, e.Error.Code, b.code)
		}
	}
	// Exactly at the limit is fine.
	upload(t, p, run.ID, rt.RuntimeToken, map[string]any{"filename": "edge.txt", "content_text": strings.Repeat("x", testMaxArtifactBytes)}).
		Expect(t, http.StatusCreated)

	// Runs this runtime does not hold.
	upload(t, p, pending.ID, rt.RuntimeToken, map[string]any{"filename": "a.txt", "content_text": "x"}).
		ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
	p.PullRun(t, agent.ID, rt.RuntimeToken) // pending
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != done.ID {
		t.Fatalf("pulled %s, want %s", got.ID, done.ID)
	}
	p.Report(t, done.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{}}).Expect(t, http.StatusOK)
	e := upload(t, p, done.ID, rt.RuntimeToken, map[string]any{"filename": "late.txt", "content_text": "x"}).
		ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
	if e.Error.Status != string(mesh.StatusCompleted) {
		t.Errorf("upload to a completed run: error.status %q, want completed", e.Error.Status)
	}
	upload(t, p, run.ID, other.RuntimeToken, map[string]any{"filename": "a.txt", "content_text": "x"}).
		ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)

	// Only the one accepted upload left content behind.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, err := p.Conn().JS.ObjectStore(ctx, bus.ObjectArtifacts)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := store.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Fatal(err)
	}
	if len(objects) != 1 {
		names := make([]string, len(objects))
		for i, o := range objects {
			names[i] = o.Name
		}
		t.Fatalf("object store holds %d objects (%v), want only the accepted upload", len(objects), names)
	}
	for _, id := range []string{run.ID, pending.ID, done.ID} {
		var list struct {
			Artifacts []mesh.Artifact `json:"artifacts"`
		}
		p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + id + "/artifacts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
		want := 0
		if id == run.ID {
			want = 1
		}
		if len(list.Artifacts) != want {
			t.Errorf("run %s lists %d artifacts, want %d", id, len(list.Artifacts), want)
		}
	}
}

// TestArtifacts_AnUploadSentAgainWithItsWriteKeyIsStoredOnce: an HTTP
// runtime's upload sent again with the same ?write_key (its answer was
// lost) is answered with the artifact already stored, and the run lists
// it once; a key out of bounds is refused with 400.
func TestArtifacts_AnUploadSentAgainWithItsWriteKeyIsStoredOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.MaxArtifactBytes = testMaxArtifactBytes })
	agent := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, agent.ID, "write once")
	body := map[string]any{"filename": "out.txt", "content_text": "once"}
	path := "/task-runs/" + run.ID + "/artifacts?write_key=rep_H.0"
	var first, again uploaded
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, RuntimeToken: rt.RuntimeToken, JSON: body}).Expect(t, http.StatusCreated).Decode(t, &first)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, RuntimeToken: rt.RuntimeToken, JSON: body}).Expect(t, http.StatusCreated).Decode(t, &again)
	if again.Artifact.ID != first.Artifact.ID || again.ArtifactRef.ArtifactID != first.ArtifactRef.ArtifactID || again.ArtifactRef.Size != 4 {
		t.Fatalf("sent again: %+v, want artifact %s as stored", again, first.Artifact.ID)
	}
	if got := p.GetTask(run.ID); len(got.Artifacts) != 1 || got.Artifacts[0].ArtifactID != first.Artifact.ID {
		t.Fatalf("the run lists %+v, want only %s", got.Artifacts, first.Artifact.ID)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/artifacts?write_key=" + url.QueryEscape("a key"), RuntimeToken: rt.RuntimeToken, JSON: body}).
		ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
}
