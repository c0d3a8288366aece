package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPairingCode carries the code when it must not appear in a process
// listing; no flag does. formerEnvPairingCode is its name before every
// variable began with A2A_MESH_, still read for one release.
const (
	envPairingCode       = cliusage.EnvPrefix + "PAIRING_CODE"
	formerEnvPairingCode = "A2A_PAIRING_CODE"
)

var executorTypes = []string{"claude_cli", "hermes", "openclaw", "cursor", "codex", "gemini", "custom"}

func newPair(g *globals) *cobra.Command {
	var req runtimeengine.PairRequest
	var adapterProvider, adapterBin string
	cmd := &cobra.Command{
		Use:   "pair [PAIRING_CODE|-] [-- adapter arguments]",
		Short: "Pair this machine with an agent using a one-time pairing code",
		Long: "Pair this machine with an agent using a one-time pairing code generated on the platform for that agent.\n" +
			"The code is read from standard input when it is not given, or given as - (echo <PAIRING_CODE> | a2a-runtime pair --api-base <URL> --adapter <provider>),\n" +
			"or from " + envPairingCode + ": either keeps it out of process listings.\n" +
			"With --adapter (or --provider), a2a-runtime start runs and supervises a2a-adapter with that provider\n" +
			"and the arguments after --, without being told again.",
		Args: func(cmd *cobra.Command, args []string) error {
			codes := len(args)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				codes = dash
				if adapterProvider == "" {
					return errors.New("arguments after -- go to the adapter chosen with --adapter; pair takes no others")
				}
			}
			if codes > 1 {
				return fmt.Errorf("pair takes one pairing code, got %d arguments before --", codes)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var adapterArgs []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args, adapterArgs = args[:dash], args[dash:]
			}
			code, err := pairingCode(args)
			if err != nil {
				return err
			}
			// Paths are stored absolute: start, and a service, run elsewhere.
			dir, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("the folder pair runs in, against which relative paths are taken: %w", err)
			}
			req.LocalExecutor = executorPaths(dir, req.LocalExecutor)
			var supervised profile.SupervisedAdapter
			if adapterProvider != "" {
				if supervised, err = supervisedAdapter(dir, adapterProvider, adapterBin, adapterArgs); err != nil {
					return err
				}
				if !cmd.Flags().Changed("local-executor-type") {
					req.LocalExecutor.Type = adapterProviders[adapterProvider]
				}
			}
			if !validExecutor(req.LocalExecutor.Type) {
				return fmt.Errorf("--local-executor-type must be one of %s", strings.Join(executorTypes, ", "))
			}
			if req.DeviceName == "" {
				req.DeviceName, _ = os.Hostname()
			}
			req.Code = code
			if origin, told := apiBaseOrigin(cmd.Flags().Lookup("api-base")); !told {
				fmt.Fprintf(os.Stderr, "Pairing with the platform at %s (%s; name another with --api-base).\n", req.APIBase, origin)
			}
			p, err := runtimeengine.Pair(cmd.Context(), req)
			if errors.Is(err, runtimeengine.ErrPlatformUnreachable) {
				return fmt.Errorf("%w: is the platform running there? Give the address of the platform that issued the pairing code with --api-base", err)
			}
			if err != nil {
				return err
			}
			p.SupervisedAdapter = supervised
			store := g.store()
			if err := store.Put(p); err != nil {
				return err
			}
			fmt.Printf("Paired.\n  agent id:      %s\n  runtime id:    %s\n  profile:       %s (active)\n  api base:      %s\n  local adapter: %s\n  profile file:  %s\n",
				p.AgentID, p.RuntimeID, p.Name(), p.APIBase, p.LocalAgentEndpoint, store.Path())
			if supervised.Provider != "" {
				fmt.Printf("  runs adapter:  %s\n", commandLine(supervised))
			}
			fmt.Printf("Start it with: a2a-runtime start\n")
			return nil
		},
	}
	f := cmd.Flags()
	f.SetNormalizeFunc(providerAlias)
	f.StringVar(&adapterProvider, "adapter", "", "a2a-adapter provider a2a-runtime start runs and supervises on the local agent endpoint's port (claude, codex, gemini, cursor, hermes, openclaw, command, echo; also --provider); arguments after -- are passed to it. Without it, run the adapter yourself")
	f.StringVar(&adapterBin, "adapter-bin", "", "the a2a-adapter program for --adapter (default: the one next to a2a-runtime, else a2a-adapter on PATH)")
	f.StringVar(&req.APIBase, "api-base", restclient.DefaultBase, "the platform's API base URL (where the pairing code was generated)")
	f.StringVar(&req.LocalAgentEndpoint, "local-agent-endpoint", profile.DefaultLocalAgentEndpoint, "the local adapter's run-task URL")
	f.StringVar(&req.LocalExecutor.Type, "local-executor-type", "custom", "agent host type: "+strings.Join(executorTypes, "|"))
	f.StringVar(&req.LocalExecutor.Ref, "local-executor-ref", "", "agent host reference name")
	f.StringVar(&req.LocalExecutor.Workspace, "workspace", "", "agent host workspace directory")
	f.StringVar(&req.LocalExecutor.Cwd, "cwd", "", "agent host working directory")
	f.StringVar(&req.LocalExecutor.InstructionFile, "instruction-file", "", "agent host instruction file")
	f.StringVar(&req.DeviceName, "device-name", "", "name shown on the platform (default: hostname)")
	cliusage.CompleteValues(cmd, "adapter", providerNames()...)
	cliusage.CompleteValues(cmd, "local-executor-type", executorTypes...)
	return cmd
}

// pairingCode takes the code from the environment, standard input ("-",
// or no argument when standard input is not a terminal: echo <code> |
// a2a-runtime pair ...), or the argument. A code given as an argument is
// moved into the environment and the process re-executes itself without
// it, so it is visible in a process listing for an instant at most; on
// standard input it never is.
func pairingCode(args []string) (string, error) {
	if code := strings.TrimSpace(os.Getenv(envPairingCode)); code != "" {
		return code, nil
	}
	if code := strings.TrimSpace(os.Getenv(formerEnvPairingCode)); code != "" {
		fmt.Fprintf(os.Stderr, "a2a-runtime: %s is deprecated and will stop working in the next release: set %s instead\n", formerEnvPairingCode, envPairingCode)
		return code, nil
	}
	stdinTerminal := isatty.IsTerminal(os.Stdin.Fd()) || isatty.IsCygwinTerminal(os.Stdin.Fd())
	if len(args) == 0 && stdinTerminal {
		return "", fmt.Errorf("give the pairing code on standard input (echo <PAIRING_CODE> | a2a-runtime pair ..., or a2a-runtime pair - to type it), or in %s", envPairingCode)
	}
	if len(args) == 0 || args[0] == "-" {
		if stdinTerminal {
			fmt.Fprint(os.Stderr, "Pairing code: ")
		}
		return readPairingCode(os.Stdin)
	}
	self, err := os.Executable()
	if err == nil {
		argv := make([]string, 0, len(os.Args))
		for _, a := range os.Args {
			if a != args[0] {
				argv = append(argv, a)
			}
		}
		env := append(os.Environ(), envPairingCode+"="+args[0])
		if _, lookErr := exec.LookPath(self); lookErr == nil || strings.Contains(self, "/") {
			_ = syscall.Exec(self, argv, env)
		}
	}
	// Re-executing failed: carry on with the argument.
	return strings.TrimSpace(args[0]), nil
}

// readPairingCode reads the code from the first line of r.
func readPairingCode(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if code := strings.TrimSpace(line); code != "" {
		return code, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return "", errors.New("no pairing code on standard input: give it there (echo <PAIRING_CODE> | a2a-runtime pair ...) or in " + envPairingCode)
	}
	return "", fmt.Errorf("read the pairing code from standard input: %w", err)
}

// apiBaseOrigin says where the platform address pair uses comes from,
// and whether the command line told it.
func apiBaseOrigin(f *pflag.Flag) (origin string, told bool) {
	if variable, ok := cliusage.FromEnv(f); ok {
		return "from " + variable, false
	}
	return "the default", f.Changed
}

// executorPaths is e with its relative paths made absolute against dir.
func executorPaths(dir string, e profile.LocalExecutor) profile.LocalExecutor {
	e.Workspace = absoluteIn(dir, e.Workspace)
	e.Cwd = absoluteIn(dir, e.Cwd)
	e.InstructionFile = absoluteIn(dir, e.InstructionFile)
	return e
}

func validExecutor(t string) bool {
	for _, e := range executorTypes {
		if t == e {
			return true
		}
	}
	return false
}
