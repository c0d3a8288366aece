package mesh

import "testing"

// TestCanTransition_IsTheStateMachineOfDesign3 lists every allowed move; all
// other pairs of statuses must be refused.
func TestCanTransition_IsTheStateMachineOfDesign3(t *testing.T) {
	allowed := map[[2]Status]bool{
		{StatusPending, StatusRunning}:           true, // claim
		{StatusPending, StatusCanceled}:          true, // cancel before any runtime took it
		{StatusPending, StatusFailed}:            true, // deadline, or the platform gives up
		{StatusRunning, StatusCompleted}:         true,
		{StatusRunning, StatusFailed}:            true, // runtime reports failure, or RUNTIME_LOST
		{StatusRunning, StatusCanceled}:          true,
		{StatusRunning, StatusInputRequired}:     true, // multi-turn A2A
		{StatusRunning, StatusPending}:           true, // lease lost with attempts left
		{StatusInputRequired, StatusPending}:     true, // the caller answered
		{StatusInputRequired, StatusCanceled}:    true,
		{StatusInputRequired, StatusFailed}:      true,
		{StatusRunning, StatusApprovalRequired}:  true, // the host asks a person
		{StatusApprovalRequired, StatusRunning}:  true, // decided, or denied at the time limit
		{StatusApprovalRequired, StatusCanceled}: true,
		{StatusApprovalRequired, StatusFailed}:   true, // deadline, or its runtime lost
		{StatusApprovalRequired, StatusPending}:  true, // its runtime lost, with attempts left
	}
	for _, from := range AllStatuses() {
		for _, to := range AllStatuses() {
			if got := CanTransition(from, to); got != allowed[[2]Status{from, to}] {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, !got)
			}
		}
	}
	for _, s := range []Status{"", "unknown", "PENDING"} {
		for _, other := range AllStatuses() {
			if CanTransition(s, other) || CanTransition(other, s) {
				t.Errorf("a transition involving %q is allowed", s)
			}
		}
	}
}

func TestStatus_TerminalAndValid(t *testing.T) {
	terminal := map[Status]bool{StatusCompleted: true, StatusFailed: true, StatusCanceled: true}
	for _, s := range AllStatuses() {
		if !s.Valid() {
			t.Errorf("%s is not Valid", s)
		}
		if s.Terminal() != terminal[s] {
			t.Errorf("%s.Terminal() = %v", s, s.Terminal())
		}
		// A terminal status has no way out, and every other status has one.
		out := false
		for _, to := range AllStatuses() {
			out = out || CanTransition(s, to)
		}
		if out == s.Terminal() {
			t.Errorf("%s: terminal %v but has transitions out: %v", s, s.Terminal(), out)
		}
		if TaskRunEventType(s) == "" {
			t.Errorf("no event type announces %s", s)
		}
	}
	for _, s := range []Status{"", "done", "Running", "input_required"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q is Valid or Terminal", s)
		}
		if TaskRunEventType(s) != "" {
			t.Errorf("event type for unknown status %q", s)
		}
	}
	if len(AllStatuses()) != 7 {
		t.Errorf("AllStatuses lists %d statuses", len(AllStatuses()))
	}
}

// TestEventCatalog_CoversEveryTaskRunEvent keeps the catalog and the code in step.
func TestEventCatalog_CoversEveryTaskRunEvent(t *testing.T) {
	inCatalog := map[string]EventKind{}
	for _, e := range EventCatalog {
		if _, dup := inCatalog[e.Type]; dup {
			t.Errorf("%s is listed twice", e.Type)
		}
		inCatalog[e.Type] = e.Kind
		if e.Description == "" {
			t.Errorf("%s has no description", e.Type)
		}
	}
	for _, s := range AllStatuses() {
		if kind, ok := inCatalog[TaskRunEventType(s)]; !ok || kind != KindTaskRun {
			t.Errorf("event of status %s (%s) is not a task_run event of the catalog", s, TaskRunEventType(s))
		}
	}
}
