package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSessionStore_RemembersPerConversation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := OpenSessionStore(dir, "claude")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("conv-a"); err != nil || got != "" {
		t.Fatalf("empty store: %q, %v", got, err)
	}
	for conv, id := range map[string]string{"conv-a": "sess-1", "conv-b": "sess-2"} {
		if err := s.Put(conv, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put("conv-a", "sess-3"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget("conv-b"); err != nil {
		t.Fatal(err)
	}
	// A second store on the same file, as another adapter process would open.
	again, err := OpenSessionStore(dir, "claude")
	if err != nil {
		t.Fatal(err)
	}
	for conv, want := range map[string]string{"conv-a": "sess-3", "conv-b": ""} {
		if got, err := again.Get(conv); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", conv, got, err, want)
		}
	}
	other, _ := OpenSessionStore(dir, "codex")
	if got, _ := other.Get("conv-a"); got != "" {
		t.Errorf("another provider's store sees %q", got)
	}
	if s.Path() != filepath.Join(dir, "sessions-claude.json") {
		t.Errorf("path %q", s.Path())
	}
}

func TestSessionStore_FileIsPrivateAndReplacedWhole(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSessionStore(dir, "gemini")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("conv", "sess"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestSessionStore_ConcurrentWritersLoseNothing(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for w := range 4 {
		// Separate stores share only the file and its lock, like adapters.
		s, err := OpenSessionStore(dir, "cursor")
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range 25 {
				if err := s.Put(fmt.Sprintf("conv-%d-%d", w, i), "sess"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	s, _ := OpenSessionStore(dir, "cursor")
	for w := range 4 {
		for i := range 25 {
			if got, _ := s.Get(fmt.Sprintf("conv-%d-%d", w, i)); got != "sess" {
				t.Fatalf("conv-%d-%d lost", w, i)
			}
		}
	}
}

func TestSessionStore_CorruptFileSaysHowToRecover(t *testing.T) {
	dir := t.TempDir()
	s, _ := OpenSessionStore(dir, "claude")
	if err := os.WriteFile(s.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get("conv")
	wantError(t, err, s.Path(), "delete it")
}
