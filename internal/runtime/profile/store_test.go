package profile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
)

const token = "rt_secret_token_9f8e7d6c5b4a"

// Environment of a re-executed test binary that acts as a second runtime
// process writing to the same profile file.
const (
	childPathEnv   = "PROFILE_TEST_CHILD_PATH"
	childPrefixEnv = "PROFILE_TEST_CHILD_PREFIX"
	childCountEnv  = "PROFILE_TEST_CHILD_COUNT"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childPathEnv); path != "" {
		os.Exit(runChild(path))
	}
	os.Exit(m.Run())
}

func runChild(path string) int {
	n, _ := strconv.Atoi(os.Getenv(childCountEnv))
	store := profile.NewStore(path)
	for i := range n {
		if err := store.Put(sample(os.Getenv(childPrefixEnv)+strconv.Itoa(i), "rt")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func sample(agentID, runtimeID string) profile.Profile {
	return profile.Profile{
		AgentID:            agentID,
		RuntimeID:          runtimeID,
		RuntimeToken:       token,
		APIBase:            "https://api.example.test",
		LocalAgentEndpoint: "http://localhost:18789/run-task",
		Adapter:            "http",
		LastHeartbeatAt:    time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC),
		HeartbeatTimeoutMS: 60000,
		LocalExecutor: profile.LocalExecutor{
			Type: "claude_cli", Ref: "main", Workspace: "/w", Cwd: "/w/src", InstructionFile: "/w/AGENT.md",
		},
		DeviceName: "laptop",
		PairedAt:   time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC),
		Platform:   adapterapi.Platform{Name: "A2A", Origin: "example.test"},
		NATS: profile.NATS{
			URL: "nats://bus.example.test:4222", WSURL: "wss://bus.example.test/ws",
			InboxPrefix: "_INBOX.agent",
		},
	}
}

func newStore(t *testing.T) *profile.Store {
	t.Helper()
	return profile.NewStore(profile.DefaultPath(t.TempDir()))
}

func TestDefaultPath(t *testing.T) {
	if got, want := profile.DefaultPath("/home/u"), filepath.Join("/home/u", ".a2a", "runtime.json"); got != want {
		t.Fatalf("DefaultPath = %q, want %q", got, want)
	}
}

func TestPut_RoundTripsEveryField(t *testing.T) {
	store := newStore(t)
	want := sample("agent-1", "rt-1")
	if err := store.Put(want); err != nil {
		t.Fatal(err)
	}
	got, err := store.Resolve("")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("round trip:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if got.RuntimeToken != token {
		t.Fatalf("token not stored")
	}
}

func TestPut_SetsActiveAndDefaults(t *testing.T) {
	store := newStore(t)
	for _, id := range []string{"a", "b"} {
		if err := store.Put(profile.Profile{AgentID: id, RuntimeID: "r", RuntimeToken: token}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if f.ActiveProfile != "b/r" {
		t.Fatalf("active_profile = %q, want the last paired b/r", f.ActiveProfile)
	}
	p := f.Profiles["b/r"]
	if p.LocalAgentEndpoint != "http://localhost:18789/run-task" || p.Adapter != "http" || p.HeartbeatTimeoutMS != 120000 {
		t.Fatalf("defaults not applied: %+v", p)
	}
	if p.HeartbeatTimeout() != 2*time.Minute {
		t.Fatalf("HeartbeatTimeout = %v", p.HeartbeatTimeout())
	}
}

func TestPut_RejectsProfileWithoutIdentity(t *testing.T) {
	store := newStore(t)
	for _, p := range []profile.Profile{
		{RuntimeID: "r"},
		{AgentID: "a"},
		{AgentID: "a/b", RuntimeID: "r"},
	} {
		if err := store.Put(p); !errors.Is(err, profile.ErrInvalidProfile) {
			t.Errorf("Put(%q) error = %v, want ErrInvalidProfile", p.Name(), err)
		}
	}
	if _, err := os.Stat(store.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed Put wrote the file: %v", err)
	}
}

func TestUpdate_WritesPrivateFileInPrivateDirAndNoTempFiles(t *testing.T) {
	store := newStore(t)
	for i := range 3 {
		if err := store.Put(sample("agent", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %04o, want 0600", info.Mode().Perm())
	}
	dirInfo, err := os.Stat(filepath.Dir(store.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if dirInfo.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %04o, want 0700", dirInfo.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Dir(store.Path()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"runtime.json", "runtime.json.lock"}; !slices.Equal(names, want) {
		t.Fatalf("directory holds %v, want %v (no temporary files left)", names, want)
	}
}

func TestUpdate_LeavesExistingDirectoryModeAlone(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".a2a")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := profile.NewStore(profile.DefaultPath(home)).Put(sample("a", "r")); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o750 {
		t.Fatalf("existing dir mode changed to %04o", info.Mode().Perm())
	}
}

func TestUpdate_FailingFuncWritesNothing(t *testing.T) {
	store := newStore(t)
	if err := store.Put(sample("a", "r")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(store.Path())
	boom := errors.New("boom")
	err := store.Update(func(f *profile.File) error {
		f.ActiveProfile = ""
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want the func's error", err)
	}
	after, _ := os.ReadFile(store.Path())
	if string(before) != string(after) {
		t.Fatal("file changed although the update failed")
	}
}

func TestLoad_WidePermissionsRefusedNamingFileAndFix(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			store := newStore(t)
			if err := store.Put(sample("a", "r")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(store.Path(), mode); err != nil {
				t.Fatal(err)
			}
			_, err := store.Resolve("")
			if !errors.Is(err, profile.ErrInsecureFile) {
				t.Fatalf("error = %v, want ErrInsecureFile", err)
			}
			if !strings.Contains(err.Error(), "chmod 600 "+store.Path()) {
				t.Fatalf("error %q does not name the file and the fix", err)
			}
			if err := store.Put(sample("b", "r")); !errors.Is(err, profile.ErrInsecureFile) {
				t.Fatalf("Put on an insecure file: error = %v, want ErrInsecureFile", err)
			}
		})
	}
}

func TestLoad_InvalidJSONNamesFile(t *testing.T) {
	store := newStore(t)
	if err := os.MkdirAll(filepath.Dir(store.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.Path(), []byte(`{"profiles": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.Resolve("")
	if !errors.Is(err, profile.ErrInvalidFile) {
		t.Fatalf("error = %v, want ErrInvalidFile", err)
	}
	if !strings.Contains(err.Error(), store.Path()) || !strings.Contains(err.Error(), "unexpected end of JSON input") {
		t.Fatalf("error %q does not name the file and the JSON error", err)
	}
	if err := store.Put(sample("a", "r")); !errors.Is(err, profile.ErrInvalidFile) {
		t.Fatalf("Put over a corrupt file: error = %v, want ErrInvalidFile (the file is not overwritten)", err)
	}
}

func TestLoad_MissingFileIsErrNoProfiles(t *testing.T) {
	store := newStore(t)
	if _, err := store.Resolve(""); !errors.Is(err, profile.ErrNoProfiles) {
		t.Fatalf("Resolve error = %v, want ErrNoProfiles", err)
	}
	if _, err := store.Load(); !errors.Is(err, profile.ErrNoProfiles) {
		t.Fatalf("Load error = %v, want ErrNoProfiles", err)
	}
	names, err := store.List()
	if err != nil || len(names) != 0 {
		t.Fatalf("List = %v, %v; want none", names, err)
	}
}

func TestLoad_KeepsUnknownFieldsAcrossRewrite(t *testing.T) {
	store := newStore(t)
	if err := os.MkdirAll(filepath.Dir(store.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	const original = `{
  "active_profile": "a/r",
  "future_top": {"x": 1},
  "profiles": {
    "a/r": {"agent_id": "a", "runtime_id": "r", "runtime_token": "t",
            "api_base": "https://api.example.test", "future_field": [1, 2]}
  }
}`
	if err := os.WriteFile(store.Path(), []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.RecordHeartbeat("a/r", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		FutureTop json.RawMessage `json:"future_top"`
		Profiles  map[string]struct {
			FutureField     json.RawMessage `json:"future_field"`
			LastHeartbeatAt string          `json:"last_heartbeat_at"`
		} `json:"profiles"`
	}
	data, _ := os.ReadFile(store.Path())
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if compact(t, raw.FutureTop) != `{"x":1}` || compact(t, raw.Profiles["a/r"].FutureField) != `[1,2]` {
		t.Fatalf("unknown fields lost:\n%s", data)
	}
	if raw.Profiles["a/r"].LastHeartbeatAt != "2025-01-02T03:04:05Z" {
		t.Fatalf("heartbeat not recorded:\n%s", data)
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestUseAndRemove(t *testing.T) {
	store := newStore(t)
	for _, id := range []string{"a", "b"} {
		if err := store.Put(sample(id, "r")); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Use("a/r"); err != nil {
		t.Fatal(err)
	}
	if p, err := store.Resolve(""); err != nil || p.Name() != "a/r" {
		t.Fatalf("after Use(a/r): Resolve = %v, %v", p.Name(), err)
	}
	if err := store.Use("zz/r"); !errors.Is(err, profile.ErrProfileNotFound) {
		t.Fatalf("Use(unknown) error = %v", err)
	}
	if err := store.Remove("a/r"); err != nil {
		t.Fatal(err)
	}
	f, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if f.ActiveProfile != "" || !slices.Equal(f.Names(), []string{"b/r"}) {
		t.Fatalf("after removing the active profile: active %q, names %v", f.ActiveProfile, f.Names())
	}
	if err := store.Remove("a/r"); !errors.Is(err, profile.ErrProfileNotFound) {
		t.Fatalf("Remove(unknown) error = %v", err)
	}
}

func TestUpdate_ConcurrentGoroutinesAndProcessesLoseNothing(t *testing.T) {
	store := newStore(t)
	const goroutines, perGoroutine, childPuts = 8, 5, 10

	children := make([]*exec.Cmd, 2)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			childPathEnv+"="+store.Path(),
			childPrefixEnv+"=child"+strconv.Itoa(i)+"-",
			childCountEnv+"="+strconv.Itoa(childPuts),
		)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = cmd
	}

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				errs <- store.Put(sample(fmt.Sprintf("g%d-%d", g, i), "rt"))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range children {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child process: %v", err)
		}
	}

	names, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	if want := goroutines*perGoroutine + len(children)*childPuts; len(names) != want {
		t.Fatalf("%d profiles survived, want %d", len(names), want)
	}
}
