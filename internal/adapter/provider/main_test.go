package provider

import (
	"os"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/keeper"
)

// TestMain lets this test program keep host processes the way a2a-adapter
// does: RunProcess starts it again as each host's keeper.
func TestMain(m *testing.M) {
	keeper.Init()
	os.Exit(m.Run())
}
