package ledger_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
)

// completion is a pending completion that stores three artifacts, the
// first already stored.
func completion(id string) (ledger.Report, [][]byte) {
	r := report(id, "tr-"+id, 1, ledger.ReportComplete)
	r.Artifacts = []ledger.KeptArtifact{
		{Index: 0, Write: json.RawMessage(`{"filename":"a.txt"}`), Ref: json.RawMessage(`{"type":"artifact_ref","artifact_id":"art-a"}`)},
		{Index: 1, Write: json.RawMessage(`{"filename":"b.bin"}`)},
		{Index: 2, Write: json.RawMessage(`{"filename":"c.txt"}`)},
	}
	return r, [][]byte{nil, {0, 1, 2, 0xff}, []byte("third")}
}

func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != ledger.FileName {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A completion kept with its artifacts: their content is in private files
// beside the ledger, not in its line; a stored artifact's ref survives a
// restart and its content goes; the report's close removes the rest.
func TestOutbox_ACompletionIsKeptWithItsArtifactsContentBesideTheLedger(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir)
	r, contents := completion("r1")
	if err := l.AppendPending(r, contents...); err != nil {
		t.Fatal(err)
	}
	if got := filesUnder(t, dir); !slices.Equal(got, []string{agentID + "/outbox/r1/1", agentID + "/outbox/r1/2"}) {
		t.Fatalf("kept files %v", got)
	}
	for _, path := range []string{filepath.Join(dir, agentID, "outbox", "r1", "1"), filepath.Join(dir, agentID, "outbox", "r1")} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", path, info.Mode().Perm(), want)
		}
	}
	line, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(line), "third") {
		t.Fatalf("the ledger line carries content: %s", line)
	}
	for i, want := range contents {
		if want == nil {
			continue
		}
		got, err := l.KeptContent("r1", i)
		if err != nil || string(got) != string(want) {
			t.Fatalf("kept content %d: %q, %v; want %q", i, got, err, want)
		}
	}

	if err := l.MarkArtifactWritten("r1", 1, json.RawMessage(`{"type":"artifact_ref","artifact_id":"art-b"}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir)
	pending, err := l.Pending()
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending after a restart: %+v, %v", pending, err)
	}
	var refs []string
	for _, a := range pending[0].Artifacts {
		refs = append(refs, string(a.Ref))
	}
	if want := []string{`{"type":"artifact_ref","artifact_id":"art-a"}`, `{"type":"artifact_ref","artifact_id":"art-b"}`, ""}; !slices.Equal(refs, want) {
		t.Fatalf("refs after a restart %q, want %q", refs, want)
	}
	if got := filesUnder(t, dir); !slices.Equal(got, []string{agentID + "/outbox/r1/2"}) {
		t.Fatalf("kept files once b is stored: %v", got)
	}
	if err := l.MarkArtifactWritten("r1", 3, json.RawMessage(`{}`)); !errors.Is(err, ledger.ErrInvalidEntry) {
		t.Fatalf("an artifact the report has not: %v, want ErrInvalidEntry", err)
	}

	if err := l.MarkDelivered("r1"); err != nil {
		t.Fatal(err)
	}
	if got := filesUnder(t, dir); len(got) != 0 {
		t.Fatalf("kept files after delivery: %v", got)
	}
	if err := l.MarkArtifactWritten("r1", 2, json.RawMessage(`{}`)); !errors.Is(err, ledger.ErrNotPending) {
		t.Fatalf("an artifact of a delivered report: %v, want ErrNotPending", err)
	}
}

// A content holding a registered secret is refused as a line is: nothing
// is kept, neither line nor file.
func TestOutbox_AKeptArtifactHoldingASecretIsRefused(t *testing.T) {
	const token = "rt_secret_token"
	dir := t.TempDir()
	l := open(t, dir, ledger.WithSecrets(token))
	r, contents := completion("r1")
	contents[2] = []byte("the token is " + token)
	if err := l.AppendPending(r, contents...); !errors.Is(err, ledger.ErrSecret) {
		t.Fatalf("error = %v, want ErrSecret", err)
	}
	if n, _ := l.Backlog(); n != 0 {
		t.Fatalf("backlog %d, want nothing kept", n)
	}
	if got := filesUnder(t, dir); len(got) != 0 {
		t.Fatalf("files kept: %v", got)
	}
}

// Content no pending report names (left by a process that stopped between
// keeping it and writing the report's line) is removed by PruneKept; that
// of pending reports stays.
func TestPruneKept_RemovesOnlyContentNoPendingReportNames(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir)
	r, contents := completion("r1")
	if err := l.AppendPending(r, contents...); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, agentID, "outbox", "rep_gone")
	if err := os.MkdirAll(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "0"), []byte("left"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.PruneKept(); err != nil {
		t.Fatal(err)
	}
	if got := filesUnder(t, dir); !slices.Equal(got, []string{agentID + "/outbox/r1/1", agentID + "/outbox/r1/2"}) {
		t.Fatalf("kept files after pruning %v", got)
	}
}

func TestAppendPending_ValidatesKeptArtifacts(t *testing.T) {
	l := open(t, t.TempDir())
	broken := map[string]func(*ledger.Report, *[][]byte){
		"report id not one path element": func(r *ledger.Report, _ *[][]byte) { r.ID = "../r" },
		"contents missing":               func(_ *ledger.Report, c *[][]byte) { *c = (*c)[:2] },
		"index out of place":             func(r *ledger.Report, _ *[][]byte) { r.Artifacts[1].Index = 2 },
		"no description":                 func(r *ledger.Report, _ *[][]byte) { r.Artifacts[2].Write = nil },
		"a failure with artifacts":       func(r *ledger.Report, _ *[][]byte) { r.Kind = ledger.ReportFail },
		"a stored one with content":      func(_ *ledger.Report, c *[][]byte) { (*c)[0] = []byte("x") },
	}
	for name, breakIt := range broken {
		r, contents := completion("r1")
		breakIt(&r, &contents)
		if err := l.AppendPending(r, contents...); !errors.Is(err, ledger.ErrInvalidEntry) {
			t.Errorf("%s: error = %v, want ErrInvalidEntry", name, err)
		}
	}
	if n, _ := l.Backlog(); n != 0 {
		t.Fatalf("invalid reports were queued: backlog %d", n)
	}
}
