package main

import (
	"testing"

	"github.com/a2amesh/a2amesh/internal/cliusage/cliusagetest"
)

// Every flag of every command of a2a-adapter has its A2A_MESH_ variable.
func TestCLI_EveryFlagOfEveryCommandHasItsVariable(t *testing.T) {
	if n := cliusagetest.EveryFlagHasItsVariable(t, newRootCommand()); n < 25 {
		t.Errorf("checked %d flags: the walk missed commands", n)
	}
}
