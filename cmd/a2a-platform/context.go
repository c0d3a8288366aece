package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/spf13/cobra"
)

// An admin context names a platform the admin verbs talk to: its API and
// the file of its owner credential, so that they need neither flag each
// time (as nats context and gh auth do). The contexts live in
// contexts.json in the data directory, readable by its owner only; the
// file holds the credential's path, never the credential.

// contextsFile is the contexts' file in a data directory.
const contextsFile = "contexts.json"

// adminContext is one platform the admin verbs may talk to.
type adminContext struct {
	APIBase        string `json:"api_base"`
	OwnerTokenFile string `json:"owner_token_file,omitempty"`
}

// contexts is the contexts' file: every context, and the current one.
type contexts struct {
	Current  string                  `json:"current,omitempty"`
	Contexts map[string]adminContext `json:"contexts"`
}

func (g *globals) contextsPath() string { return filepath.Join(g.dataDir, contextsFile) }

// loadContexts reads the contexts; none when the file does not exist.
func (g *globals) loadContexts() (*contexts, error) {
	c := &contexts{Contexts: map[string]adminContext{}}
	b, err := os.ReadFile(g.contextsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", g.contextsPath(), err)
	}
	if c.Contexts == nil {
		c.Contexts = map[string]adminContext{}
	}
	return c, nil
}

// saveContexts writes the contexts, readable by their owner only, whole
// or not at all.
func (g *globals) saveContexts(c *contexts) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(g.dataDir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(g.dataDir, contextsFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), g.contextsPath())
}

// unknownContext is the error for a context name the file does not hold.
func unknownContext(c *contexts, name string) error {
	known := "there are none: add one with a2a-platform context add"
	if names := c.names(); len(names) > 0 {
		known = "known: " + strings.Join(names, ", ")
	}
	return &notFoundError{fmt.Errorf("no admin context %q (%s)", name, known)}
}

func (c *contexts) names() []string {
	names := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// target is the platform API and owner credential file the admin verbs
// use: a flag (or its variable) wins; else the context of --context, else
// the current one; else the defaults (an empty file: <data-dir>/owner.token).
func (g *globals) target() (apiBase, ownerFile string, err error) {
	apiBase, ownerFile = g.apiBase, g.ownerFile
	flags := g.cmd.Flags()
	baseGiven, fileGiven := flags.Changed("api-base"), flags.Changed("owner-token-file")
	if baseGiven && fileGiven {
		return apiBase, ownerFile, nil
	}
	name := g.context
	c, err := g.loadContexts()
	if err != nil {
		if name == "" {
			return apiBase, ownerFile, nil // a broken file does not stop verbs that name no context
		}
		return "", "", err
	}
	if name == "" {
		name = c.Current
	}
	if name == "" {
		return apiBase, ownerFile, nil
	}
	ctx, ok := c.Contexts[name]
	if !ok {
		return "", "", unknownContext(c, name)
	}
	if !baseGiven {
		apiBase = ctx.APIBase
	}
	if !fileGiven {
		ownerFile = ctx.OwnerTokenFile
	}
	return apiBase, ownerFile, nil
}

func newContext(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "context", Short: "Name the platforms the admin verbs talk to, and choose one"}
	add := &cobra.Command{
		Use:   "add <name> --api-base <url> [--owner-token-file <file>]",
		Short: "Add (or replace) a context: a platform's API and its owner credential file",
		Long: "Add (or replace) a context: a platform's API and the file of its owner credential (default then:\n" +
			"<data-dir>/owner.token). The first context added becomes the current one. The contexts live in\n" +
			contextsFile + " in the data directory, readable by you only; they hold the file's path, not the credential.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("api-base") {
				return cliusage.Usage(fmt.Errorf("context add needs --api-base\nRun '%s --help' for its flags", cmd.CommandPath()))
			}
			file := g.ownerFile
			if file != "" {
				abs, err := filepath.Abs(file)
				if err != nil {
					return err
				}
				file = abs
			}
			c, err := g.loadContexts()
			if err != nil {
				return err
			}
			c.Contexts[args[0]] = adminContext{APIBase: g.apiBase, OwnerTokenFile: file}
			if c.Current == "" {
				c.Current = args[0]
			}
			if err := g.saveContexts(c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "context %s added (current: %s)\n", args[0], c.Current)
			return nil
		},
	}
	use := &cobra.Command{
		Use: "use <name>", Short: "Make a context the current one", Args: cobra.ExactArgs(1),
		ValidArgsFunction: g.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.changeContext(args[0], func(c *contexts) { c.Current = args[0] }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "current context: %s\n", args[0])
			return nil
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List the contexts (the current one is marked)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.loadContexts()
			if err != nil {
				return err
			}
			type row struct {
				Name           string `json:"name"`
				Current        bool   `json:"current"`
				APIBase        string `json:"api_base"`
				OwnerTokenFile string `json:"owner_token_file"`
			}
			rows := []row{}
			for _, n := range c.names() {
				ctx := c.Contexts[n]
				rows = append(rows, row{Name: n, Current: n == c.Current, APIBase: ctx.APIBase, OwnerTokenFile: ctx.OwnerTokenFile})
			}
			return g.print(map[string]any{"contexts": rows})
		},
	}
	remove := &cobra.Command{
		Use: "remove <name>", Short: "Remove a context", Args: cobra.ExactArgs(1),
		ValidArgsFunction: g.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := g.changeContext(args[0], func(c *contexts) {
				delete(c.Contexts, args[0])
				if c.Current == args[0] {
					c.Current = ""
				}
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "context %s removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, use, list, remove)
	return cmd
}

// changeContext applies change to the stored contexts, which must hold
// name, and stores them.
func (g *globals) changeContext(name string, change func(*contexts)) error {
	c, err := g.loadContexts()
	if err != nil {
		return err
	}
	if _, ok := c.Contexts[name]; !ok {
		return unknownContext(c, name)
	}
	change(c)
	return g.saveContexts(c)
}

// completeContexts offers the contexts' names.
func (g *globals) completeContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	c, err := g.loadContexts()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.names(), cobra.ShellCompDirectiveNoFileComp
}
