package main

import (
	"slices"
	"testing"
)

func TestAbsoluteAdapterArgs_MakesPathsAbsoluteAgainstTheFolderGiven(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"path flags, separate and inline",
			[]string{"--workdir", "./work", "--instruction-file=AGENTS.md", "--state-dir", "/var/a2a", "--model", "./not-a-path"},
			[]string{"--workdir", "/home/ana/proj/work", "--instruction-file=/home/ana/proj/AGENTS.md", "--state-dir", "/var/a2a", "--model", "./not-a-path"}},
		{"host binary: a path, or a name on PATH",
			[]string{"--host-binary", "bin/claude", "--host-binary=claude"},
			[]string{"--host-binary", "/home/ana/proj/bin/claude", "--host-binary=claude"}},
		{"the command and its ./ arguments",
			[]string{"--workdir", "w", "--", "./my-agent.sh", "./in.txt", "../up", "plain", "-x"},
			[]string{"--workdir", "/home/ana/proj/w", "--", "/home/ana/proj/my-agent.sh", "/home/ana/proj/in.txt", "/home/ana/up", "plain", "-x"}},
		{"a command on PATH stays a name",
			[]string{"--", "python3", "./agent.py"},
			[]string{"--", "python3", "/home/ana/proj/agent.py"}},
		{"a path flag without its value", []string{"--workdir"}, []string{"--workdir"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := absoluteAdapterArgs("/home/ana/proj", c.args)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
