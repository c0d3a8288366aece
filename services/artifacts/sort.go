package artifacts

import (
	"sort"

	"github.com/a2amesh/a2amesh/mesh"
)

// sortByID orders artifacts oldest first (ids are time-ordered).
func sortByID(as []mesh.Artifact) {
	sort.Slice(as, func(i, j int) bool { return as[i].ID < as[j].ID })
}
