package gateway

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// FuzzParseEventID checks the reader of Last-Event-ID: it never panics,
// it fails only with INVALID_REQUEST, and what it accepts is exactly the
// id GET /events would send for that region and sequence.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"1842", "0", "west:1842", "eu-west-1:7", "west:", ":5", "West:5", "west:-1", "west:1:2",
		"18446744073709551615", "18446744073709551616", "a-:1", "w\x00:1", " 5", "west:05", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		region, seq, err := parseEventID(id)
		if err != nil {
			if !errors.Is(err, mesh.ErrInvalidRequest) {
				t.Fatalf("%q: %v, want INVALID_REQUEST", id, err)
			}
			return
		}
		if region != "" && bus.ValidRegion(region) != nil {
			t.Fatalf("%q: accepted region %q", id, region)
		}
		again := strconv.FormatUint(seq, 10)
		if region != "" {
			again = region + ":" + again
		}
		if r2, s2, err := parseEventID(again); err != nil || r2 != region || s2 != seq {
			t.Fatalf("%q read as %q, %d; its own id %q reads as %q, %d, %v", id, region, seq, again, r2, s2, err)
		}
	})
}

// TestParseEventID: ids of the origin's log and of a region's stream are
// read; anything else is refused with INVALID_REQUEST.
func TestParseEventID(t *testing.T) {
	for id, want := range map[string]struct {
		region string
		seq    uint64
	}{"1842": {"", 1842}, "west:7": {"west", 7}, "eu-west-1:0": {"eu-west-1", 0}} {
		region, seq, err := parseEventID(id)
		if err != nil || region != want.region || seq != want.seq {
			t.Errorf("%q: %q, %d, %v; want %q, %d", id, region, seq, err, want.region, want.seq)
		}
	}
	for _, id := range []string{"", "west:", ":5", "West:5", "west:-1", "west:1:2", "x", "18446744073709551616", "-west:1"} {
		if _, _, err := parseEventID(id); !errors.Is(err, mesh.ErrInvalidRequest) {
			t.Errorf("%q: %v, want INVALID_REQUEST", id, err)
		}
	}
}

// FuzzParseRegionsEventID checks the reader of the ids of a stream of every
// region: it never panics, it fails only with INVALID_REQUEST, and what it
// accepts is exactly what the id the stream would send for those
// positions reads as.
func FuzzParseRegionsEventID(f *testing.F) {
	for _, s := range []string{"west:1842", "east:1200,south:88,west:1842", "east:1,east:2", "east:1,", ",east:1", "1842",
		"east:18446744073709551616", "East:1", "east:1,west", "eu-west-1:0,a:1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		pos, err := parseRegionsEventID(id)
		if err != nil {
			if !errors.Is(err, mesh.ErrInvalidRequest) {
				t.Fatalf("%q: %v, want INVALID_REQUEST", id, err)
			}
			return
		}
		if len(pos) == 0 || len(pos) > maxIDRegions {
			t.Fatalf("%q: accepted %d regions", id, len(pos))
		}
		for region := range pos {
			if bus.ValidRegion(region) != nil {
				t.Fatalf("%q: accepted region %q", id, region)
			}
		}
		again := regionsEventID(pos)
		if p2, err := parseRegionsEventID(again); err != nil || regionsEventID(p2) != again {
			t.Fatalf("%q read as %v; its own id %q reads as %v, %v", id, pos, again, p2, err)
		}
	})
}

// TestRegionsEventID: the id of a stream of every region names each
// region's position, sorted by region, and reads back as it was made.
func TestRegionsEventID(t *testing.T) {
	id := regionsEventID(map[string]uint64{"west": 1842, "east": 1200, "south": 88})
	if id != "east:1200,south:88,west:1842" {
		t.Fatalf("id %q", id)
	}
	pos, err := parseRegionsEventID(id)
	if err != nil || len(pos) != 3 || pos["west"] != 1842 || pos["east"] != 1200 || pos["south"] != 88 {
		t.Fatalf("%q read as %v, %v", id, pos, err)
	}
	for _, bad := range []string{"east:1,east:2", "1842", "east:1,", "East:1", strings.Repeat("a:1,", maxIDRegions) + "b:1"} {
		if _, err := parseRegionsEventID(bad); !errors.Is(err, mesh.ErrInvalidRequest) {
			t.Errorf("%q: %v, want INVALID_REQUEST", bad, err)
		}
	}
}
