package serviceunit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/serviceunit"
)

func environmentSpec() serviceunit.Spec {
	return serviceunit.Spec{
		Executable:       "/usr/local/bin/a2a-runtime",
		Profile:          "agent-1/rt-1",
		WorkingDirectory: "/home/ana/100% done",
		Path:             `/home/ana/.local/bin:/opt/odd "dir"\x:/usr/bin`,
	}
}

func TestSystemdUnit_RunsInTheWorkingDirectoryWithThePath(t *testing.T) {
	got, err := serviceunit.SystemdUnit(environmentSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"WorkingDirectory=/home/ana/100%% done\n",
		`Environment="PATH=/home/ana/.local/bin:/opt/odd \"dir\"\\x:/usr/bin"` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("unit lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "Environment=") > strings.Index(got, "ExecStart=") {
		t.Errorf("the environment comes after ExecStart:\n%s", got)
	}
}

func TestLaunchdPlist_RunsInTheWorkingDirectoryWithThePath(t *testing.T) {
	got, err := serviceunit.LaunchdPlist(environmentSpec(), "dev.a2amesh.runtime.agent1-rt1", "/home/ana/.a2a/logs")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\t<key>WorkingDirectory</key>\n\t<string>/home/ana/100% done</string>\n",
		"\t<key>EnvironmentVariables</key>\n\t<dict>\n\t\t<key>PATH</key>\n\t\t<string>/home/ana/.local/bin:/opt/odd &#34;dir&#34;\\x:/usr/bin</string>\n\t</dict>\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plist lacks %q:\n%s", want, got)
		}
	}
}

func TestSpec_RelativeWorkingDirectoryOrPathEntryIsRefused(t *testing.T) {
	for name, change := range map[string]func(*serviceunit.Spec){
		"working directory": func(s *serviceunit.Spec) { s.WorkingDirectory = "work" },
		"path entry":        func(s *serviceunit.Spec) { s.Path = "/usr/bin:bin" },
		"control character": func(s *serviceunit.Spec) { s.Path = "/usr/bin\n/x" },
	} {
		t.Run(name, func(t *testing.T) {
			s := environmentSpec()
			change(&s)
			if _, err := serviceunit.SystemdUnit(s); !errors.Is(err, serviceunit.ErrInvalidSpec) {
				t.Errorf("SystemdUnit: %v, want ErrInvalidSpec", err)
			}
		})
	}
}

func TestServicePath_KeepsTheShellsAbsoluteFoldersOnceInOrder(t *testing.T) {
	got := serviceunit.ServicePath("/home/ana/.local/bin::.:bin:/usr/bin:/home/ana/.local/bin:/bin")
	if want := "/home/ana/.local/bin:/usr/bin:/bin"; got != want {
		t.Errorf("ServicePath = %q, want %q", got, want)
	}
}
