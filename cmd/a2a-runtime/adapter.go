package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
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

// providerNames are the values of --adapter, in name order.
func providerNames() []string { return slices.Sorted(maps.Keys(adapterProviders)) }

// providerAlias lets --provider name --adapter, the word a2a-adapter uses
// for the same choice.
func providerAlias(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "provider" {
		name = "adapter"
	}
	return pflag.NormalizedName(name)
}

// adapterPathFlags are a2a-adapter's flags whose value is a file or a
// folder. --host-binary is one only when it holds a slash: a bare name is
// looked up on PATH.
var adapterPathFlags = map[string]bool{"workdir": true, "instruction-file": true, "auth-token-file": true, "state-dir": true, "host-binary": true}

// absoluteAdapterArgs returns the adapter's arguments with their relative
// paths made absolute against dir, the folder they were given in: the
// values of a2a-adapter's path flags and, after "--", the command provider's
// program when it is a path (./my-agent.sh, bin/agent; not a bare name
// looked up on PATH) and its arguments written ./… or ../…. The adapter
// runs each task in a folder of its own, and the runtime, or the service
// running it, starts in another folder than the one pair or install ran in.
func absoluteAdapterArgs(dir string, args []string) []string {
	out := slices.Clone(args)
	dash := slices.Index(out, "--")
	flags := out
	if dash >= 0 {
		flags = out[:dash]
	}
	for i := 0; i < len(flags); i++ {
		name, value, inline := strings.Cut(strings.TrimPrefix(flags[i], "--"), "=")
		if !strings.HasPrefix(flags[i], "--") || !adapterPathFlags[name] {
			continue
		}
		if !inline {
			if i+1 >= len(flags) {
				break
			}
			i++
			value = flags[i]
		}
		if name == "host-binary" && !strings.Contains(value, "/") {
			continue
		}
		if inline {
			flags[i] = "--" + name + "=" + absoluteIn(dir, value)
		} else {
			flags[i] = absoluteIn(dir, value)
		}
	}
	if dash < 0 || dash+1 >= len(out) {
		return out
	}
	command := out[dash+1:]
	if strings.Contains(command[0], "/") {
		command[0] = absoluteIn(dir, command[0])
	}
	for i := 1; i < len(command); i++ {
		if strings.HasPrefix(command[i], "./") || strings.HasPrefix(command[i], "../") {
			command[i] = absoluteIn(dir, command[i])
		}
	}
	return out
}

// absoluteIn is path made absolute against dir; empty stays empty.
func absoluteIn(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// supervisedAdapter is what pair stores for --adapter, --adapter-bin and
// the arguments after --, with their relative paths made absolute against
// dir.
func supervisedAdapter(dir, provider, bin string, args []string) (profile.SupervisedAdapter, error) {
	if _, ok := adapterProviders[provider]; !ok {
		return profile.SupervisedAdapter{}, fmt.Errorf("--adapter must be one of %s", strings.Join(providerNames(), ", "))
	}
	return profile.SupervisedAdapter{Provider: provider, Args: absoluteAdapterArgs(dir, args), Program: absoluteIn(dir, bin)}, nil
}

// commandLine is how the supervised adapter is run, for people to read.
func commandLine(a profile.SupervisedAdapter) string {
	program := "a2a-adapter"
	if a.Program != "" {
		program = a.Program
	}
	return strings.Join(append([]string{program, "--provider", a.Provider}, a.Args...), " ")
}
