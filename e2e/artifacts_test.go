package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Seed 000 "Artifact Write Requests": files the host writes to
// $A2A_OUTPUT_DIR, text and binary, are stored on the platform by the
// runtime; the completed output refers to them with artifact_ref parts and
// carries no file body.
func TestArtifacts_HostOutputFilesAreMaterialisedOnThePlatform(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	dir := t.TempDir()
	report := "# Result\n\nAll green.\n"
	binary := []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0x00, 0x01, 0xfe, 0xff, 0x80}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), binary, 0o600); err != nil {
		t.Fatal(err)
	}
	host := script(t, `
mkdir -p "$A2A_OUTPUT_DIR/reports"
cp '`+dir+`/report.md' "$A2A_OUTPUT_DIR/reports/result.md"
cp '`+dir+`/chart.png' "$A2A_OUTPUT_DIR/chart.png"
echo "two files written"
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	run := waitEnded(t, p.Platform, c.task("make the report").ID, mesh.StatusCompleted, waitStart)

	var list struct {
		Artifacts []mesh.Artifact `json:"artifacts"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + run.ID + "/artifacts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	want := map[string][]byte{"reports/result.md": []byte(report), "chart.png": binary}
	if len(list.Artifacts) != len(want) {
		t.Fatalf("%d artifacts stored, want %d: %+v", len(list.Artifacts), len(want), list.Artifacts)
	}
	ids := map[string]string{}
	for _, a := range list.Artifacts {
		content, ok := want[a.Filename]
		if !ok {
			t.Errorf("unexpected artifact %q", a.Filename)
			continue
		}
		ids[a.ID] = a.Filename
		got := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + a.ID + "/content", Owner: true}).Expect(t, http.StatusOK).Body
		if !bytes.Equal(got, content) {
			t.Errorf("artifact %s content %q, want %q", a.Filename, got, content)
		}
		if a.TaskRunID != run.ID || a.Size != int64(len(content)) {
			t.Errorf("artifact %s: task run %s size %d", a.Filename, a.TaskRunID, a.Size)
		}
	}
	if len(run.Artifacts) != len(want) {
		t.Errorf("the run lists %d artifacts, want %d", len(run.Artifacts), len(want))
	}

	out := outputOf(t, run)
	if out["text"] != "two files written" {
		t.Errorf("output.text = %v", out["text"])
	}
	parts, _ := out["parts"].([]any)
	var refs []string
	for _, part := range parts {
		m, _ := part.(map[string]any)
		if m["type"] == "artifact_ref" {
			refs = append(refs, ids[m["artifact_id"].(string)])
		}
	}
	slices.Sort(refs)
	if !slices.Equal(refs, []string{"chart.png", "reports/result.md"}) {
		t.Errorf("output.parts artifact_refs name %v, want both stored artifacts; parts %v", refs, parts)
	}
	raw := string(rawTask(t, p.Platform, run.ID))
	for _, field := range []string{"content_text", "content_base64", `"artifacts":[{"artifact_type"`, "artifact_writes", "All green"} {
		if strings.Contains(string(run.Output), field) {
			t.Errorf("the stored output still carries %q: %s", field, run.Output)
		}
	}
	if strings.Contains(raw, "content_text") {
		t.Errorf("the stored run carries content_text: %s", raw)
	}
	if ledger := meshtest.ReadFile(c.m.ledgerPath(c.AgentID)); strings.Count(ledger, `"artifact_written"`) != 2 {
		t.Errorf("the ledger does not record both artifacts:\n%s", ledger)
	}
}

// Seed 000 step 6: an artifact the platform refuses (here: too large) fails
// the run with ARTIFACT_WRITE_FAILED; it is never completed.
func TestArtifacts_RefusedArtifactFailsRunWithArtifactWriteFailed(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{maxArtifactBytes: 1024})
	host := script(t, `
head -c 4096 /dev/zero | tr '\0' 'x' > "$A2A_OUTPUT_DIR/big.txt"
echo "small summary"
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	run := waitEnded(t, p.Platform, c.task("too big").ID, mesh.StatusFailed, waitStart)
	wantError(t, run, "ARTIFACT_WRITE_FAILED", "big.txt")
	if len(run.Artifacts) != 0 {
		t.Errorf("a refused artifact is listed on the run: %+v", run.Artifacts)
	}
	evs := events(t, p.Platform, nil)
	if n := countEvents(evs, mesh.EventTaskRunCompleted, run.ID); n != 0 {
		t.Errorf("the run was completed %d times before it failed", n)
	}
	failed := c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == run.ID && e.Event == "task_failed" })
	if failed.ErrorCode != "ARTIFACT_WRITE_FAILED" {
		t.Errorf("ledger task_failed code %q", failed.ErrorCode)
	}
	if got := ledgerEvents(c.m.ledger(c.AgentID), run.ID); slices.Contains(got, "task_completed") {
		t.Errorf("the ledger records the run completed: %v", got)
	}
	if strings.Contains(string(run.Output), "xxxxxxxx") {
		t.Errorf("the failed output carries the file body")
	}
}
