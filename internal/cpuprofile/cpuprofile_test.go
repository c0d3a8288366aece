package cpuprofile

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestStart_WritesAProfileWhenStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := Start(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A profile is a gzipped protocol buffer.
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a profile: %v", err)
	}
	if body, err := io.ReadAll(zr); err != nil || len(body) == 0 {
		t.Fatalf("empty or torn profile: %d bytes, %v", len(body), err)
	}
}

func TestStart_EmptyPathProfilesNothing(t *testing.T) {
	stop, err := Start("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

func TestStart_UnwritablePathIsAnError(t *testing.T) {
	if _, err := Start(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Fatal("no error for a file that cannot be created")
	}
}
