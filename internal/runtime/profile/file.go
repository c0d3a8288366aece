package profile

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// File is the content of runtime.json: the profiles by name and the one a
// bare command uses.
type File struct {
	// ActiveProfile is the name of the profile used when --profile is
	// omitted; a successful pair sets it (seed 000).
	ActiveProfile string `json:"active_profile,omitempty"`
	// Profiles maps "{agent_id}/{runtime_id}" to the profile.
	Profiles map[string]Profile `json:"profiles"`

	extra map[string]json.RawMessage
}

// Names returns the profile names in sorted order.
func (f *File) Names() []string {
	return slices.Sorted(maps.Keys(f.Profiles))
}

// Resolve picks the profile to use, as seed 000 orders it: the explicit name,
// then active_profile, then the only profile. With several profiles and none
// active it fails rather than guess. The result has defaults applied.
func (f *File) Resolve(explicit string) (Profile, error) {
	switch {
	case len(f.Profiles) == 0:
		return Profile{}, ErrNoProfiles
	case explicit != "":
		return f.lookup(explicit, "profile")
	case f.ActiveProfile != "":
		return f.lookup(f.ActiveProfile, "active_profile")
	case len(f.Profiles) == 1:
		for _, p := range f.Profiles {
			return p.WithDefaults(), nil
		}
	}
	return Profile{}, fmt.Errorf("%w; choose one with --profile: %s", ErrAmbiguousProfile, f.nameList())
}

// Put adds or replaces p and makes it active, as a successful pair does.
func (f *File) Put(p Profile) error {
	if err := p.validate(); err != nil {
		return err
	}
	if f.Profiles == nil {
		f.Profiles = map[string]Profile{}
	}
	name := p.Name()
	f.Profiles[name] = p.WithDefaults()
	f.ActiveProfile = name
	return nil
}

// Use makes the named profile active.
func (f *File) Use(name string) error {
	if _, ok := f.Profiles[name]; !ok {
		return f.notFound(name, "profile")
	}
	f.ActiveProfile = name
	return nil
}

// Remove deletes the named profile, and clears active_profile if it named it.
func (f *File) Remove(name string) error {
	if _, ok := f.Profiles[name]; !ok {
		return f.notFound(name, "profile")
	}
	delete(f.Profiles, name)
	if f.ActiveProfile == name {
		f.ActiveProfile = ""
	}
	return nil
}

func (f *File) lookup(name, what string) (Profile, error) {
	p, ok := f.Profiles[name]
	if !ok {
		return Profile{}, f.notFound(name, what)
	}
	return p.WithDefaults(), nil
}

func (f *File) notFound(name, what string) error {
	return fmt.Errorf("%w: %s %q; known profiles: %s", ErrProfileNotFound, what, name, f.nameList())
}

func (f *File) nameList() string {
	names := f.Names()
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
