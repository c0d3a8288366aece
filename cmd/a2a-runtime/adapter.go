package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/internal/profile"
	"github.com/spf13/pflag"
)

// noAdapter given to start's --adapter runs no adapter, whatever pairing chose.
const noAdapter = "none"

// adapterProviders are a2a-adapter's providers, each with the local executor
// type the platform shows for it.
var adapterProviders = map[string]string{
	"echo": "custom", "command": "custom",
	"claude": "claude_cli", "codex": "codex", "gemini": "gemini", "cursor": "cursor", "hermes": "hermes", "openclaw": "openclaw",
}

// providerAlias lets --provider name --adapter, the word a2a-adapter uses
// for the same choice.
func providerAlias(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "provider" {
		name = "adapter"
	}
	return pflag.NormalizedName(name)
}

// supervisedAdapter is what pair stores for --adapter, --adapter-bin and
// the arguments after --.
func supervisedAdapter(provider, bin string, args []string) (profile.SupervisedAdapter, error) {
	if _, ok := adapterProviders[provider]; !ok {
		return profile.SupervisedAdapter{}, fmt.Errorf("--adapter must be one of %s", strings.Join(slices.Sorted(maps.Keys(adapterProviders)), ", "))
	}
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return profile.SupervisedAdapter{}, err
		}
		bin = abs
	}
	return profile.SupervisedAdapter{Provider: provider, Args: args, Program: bin}, nil
}

// commandLine is how the supervised adapter is run, for people to read.
func commandLine(a profile.SupervisedAdapter) string {
	program := "a2a-adapter"
	if a.Program != "" {
		program = a.Program
	}
	return strings.Join(append([]string{program, "--provider", a.Provider}, a.Args...), " ")
}
