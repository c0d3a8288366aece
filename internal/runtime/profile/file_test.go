package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
)

func fileWith(active string, names ...string) *profile.File {
	f := &profile.File{ActiveProfile: active, Profiles: map[string]profile.Profile{}}
	for _, n := range names {
		agent, runtime, _ := strings.Cut(n, "/")
		f.Profiles[n] = profile.Profile{AgentID: agent, RuntimeID: runtime}
	}
	return f
}

func TestFileResolve(t *testing.T) {
	tests := []struct {
		name      string
		file      *profile.File
		explicit  string
		want      string
		wantErr   error
		errListed []string
	}{
		{name: "explicit wins over active", file: fileWith("a/1", "a/1", "b/2"), explicit: "b/2", want: "b/2"},
		{name: "active when no explicit", file: fileWith("b/2", "a/1", "b/2"), want: "b/2"},
		{name: "only profile", file: fileWith("", "a/1"), want: "a/1"},
		{name: "several without active lists names", file: fileWith("", "b/2", "a/1"),
			wantErr: profile.ErrAmbiguousProfile, errListed: []string{"a/1, b/2"}},
		{name: "unknown explicit lists names", file: fileWith("a/1", "a/1", "b/2"), explicit: "c/3",
			wantErr: profile.ErrProfileNotFound, errListed: []string{`"c/3"`, "a/1, b/2"}},
		{name: "dangling active is an error, not a guess", file: fileWith("gone/1", "a/1"),
			wantErr: profile.ErrProfileNotFound, errListed: []string{"active_profile", `"gone/1"`, "a/1"}},
		{name: "no profiles", file: fileWith(""), explicit: "a/1", wantErr: profile.ErrNoProfiles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.file.Resolve(tt.explicit)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				for _, s := range tt.errListed {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != tt.want {
				t.Fatalf("resolved %q, want %q", p.Name(), tt.want)
			}
			if p.LocalAgentEndpoint == "" {
				t.Fatal("resolved profile has no defaults applied")
			}
		})
	}
}

func TestStoreResolve_ErrorNamesFile(t *testing.T) {
	store := newStore(t)
	for _, id := range []string{"a", "b"} {
		if err := store.Put(sample(id, "r")); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Update(func(f *profile.File) error { f.ActiveProfile = ""; return nil }); err != nil {
		t.Fatal(err)
	}
	_, err := store.Resolve("")
	if !errors.Is(err, profile.ErrAmbiguousProfile) || !strings.Contains(err.Error(), store.Path()) {
		t.Fatalf("error = %v, want ErrAmbiguousProfile naming %s", err, store.Path())
	}
}
