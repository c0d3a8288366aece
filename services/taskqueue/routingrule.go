package taskqueue

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Routing rules: a task for an agent with a matching routing rule is not queued
// for the agent's runtime but delegated (docs/delegation.md). The task queue
// asks the delegation service, which owns the rules, at creation and when a
// run continues; with no delegation service running, nothing is delegated.

// matchTimeout bounds the question to the delegation service: it answers
// from memory, so only a stuck service takes long.
const matchTimeout = 2 * time.Second

// delegationFor asks the routing rules whether run is to be delegated, and
// says where.
func (s *Service) delegationFor(ctx context.Context, run *mesh.TaskRun) (*mesh.Delegation, error) {
	skill, _ := run.Metadata[meshapi.SkillKey].(string)
	mctx, cancel := context.WithTimeout(ctx, matchTimeout)
	defer cancel()
	res, err := s.client.MatchRoutingRule(mctx, meshapi.MatchRequest{AgentID: run.TargetAgentID, Text: run.InputText(), Skill: skill})
	if errors.Is(err, mesh.ErrUnavailable) {
		return nil, nil
	}
	if err != nil {
		// Queuing the task for the agent itself could hand it to a runtime
		// the owner meant to keep it from: refuse rather than guess.
		return nil, mesh.Errorf(mesh.CodeUnavailable, "routing rules could not be checked (%s); try again", mesh.AsError(err).Message)
	}
	if res.Rule == nil {
		return nil, nil
	}
	return &mesh.Delegation{RuleID: res.Rule.RuleID, AgentID: res.Rule.Target.AgentID, PartnerID: res.Rule.Target.PartnerID, URL: res.Rule.Target.URL}, nil
}

// maxChain bounds a delegation chain a create request may carry; the
// delegation service refuses chains longer than its (smaller) depth limit.
const maxChain = 32

// checkLineage checks the delegation link of a create request.
func checkLineage(in *meshapi.CreateTaskRunRequest) error {
	if in.ParentTaskRunID != "" && !mesh.ValidID(in.ParentTaskRunID) {
		return mesh.Errorf(mesh.CodeInvalidRequest, "parent_task_run_id is not a valid id")
	}
	if len(in.DelegationChain) > maxChain {
		return mesh.Errorf(mesh.CodeInvalidRequest, "delegation_chain is longer than %d agents", maxChain)
	}
	for _, id := range in.DelegationChain {
		if !mesh.ValidID(id) {
			return mesh.Errorf(mesh.CodeInvalidRequest, "delegation_chain holds an invalid agent id")
		}
	}
	return nil
}

// Limits of a host environment.
const (
	maxEnvVars      = 100
	maxEnvValue     = 32 << 10
	maxWorkingDir   = 4096
	maxEnvNameBytes = 256
	// maxSealedBytes bounds the sealed variables' box (base64): a request
	// body is at most 1 MiB.
	maxSealedBytes = 1 << 20
)

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnvironment checks what a caller asks the host's process to run
// with. Variables the platform sets itself (A2A_*) and those a host needs
// to find its tools and files (PATH, HOME) cannot be overridden. Messages
// never quote a value.
func checkEnvironment(env *mesh.HostEnvironment) error {
	if env == nil {
		return nil
	}
	if len(env.WorkingDirectory) > maxWorkingDir || strings.IndexByte(env.WorkingDirectory, 0) >= 0 {
		return mesh.Errorf(mesh.CodeInvalidRequest, "workingDirectory must be a path of at most %d bytes", maxWorkingDir)
	}
	if sv := env.Sealed; sv != nil && (len(sv.Box) > maxSealedBytes || sv.RuntimeID == "" || sv.Recipient == "" || sv.Sender == "") {
		return mesh.Errorf(mesh.CodeInvalidRequest, "sealed_variables must name its runtime, recipient and sender, with a box of at most %d bytes", maxSealedBytes)
	}
	if len(env.Variables) > maxEnvVars {
		return mesh.Errorf(mesh.CodeInvalidRequest, "at most %d environment variables", maxEnvVars)
	}
	for name, value := range env.Variables {
		switch {
		case len(name) > maxEnvNameBytes || !envNamePattern.MatchString(name):
			return mesh.Errorf(mesh.CodeInvalidRequest, "environment variable names are letters, digits and '_', not starting with a digit")
		case mesh.ReservedEnvName(name):
			return mesh.Errorf(mesh.CodeInvalidRequest, "environment variable %s is one the platform never passes to a host (docs/api.md)", name)
		case len(value) > maxEnvValue || strings.IndexByte(value, 0) >= 0:
			return mesh.Errorf(mesh.CodeInvalidRequest, "the value of environment variable %s is too long or holds a NUL byte", name)
		}
	}
	return nil
}
