package provider

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// a2aMessage is input.message as the A2A endpoint builds it: a text part,
// a data part and a file given by URL.
const a2aMessage = `{"message_id": "m-1", "role": "user", "parts": [
	{"kind": "text", "text": "book it"},
	{"kind": "data", "data": {"city": "Lyon", "nights": 2}},
	{"kind": "file", "name": "brief.pdf", "mime_type": "application/pdf", "uri": "https://files.example.com/in/brief.pdf?sig=a%2Fb"}]}`

// withMessage gives task the A2A message above in its input, as the
// adapter decodes a request that carries one.
func withMessage(t *testing.T, task *Task) *Task {
	t.Helper()
	var in map[string]any
	if err := json.Unmarshal(task.Request.Input, &in); err != nil {
		t.Fatal(err)
	}
	var msg any
	if err := json.Unmarshal([]byte(a2aMessage), &msg); err != nil {
		t.Fatal(err)
	}
	in["message"] = msg
	req := task.Request
	req.Input, _ = json.Marshal(in)
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(task.Workdir)
	return NewTask(req, raw, root, task.Instructions)
}

func TestCommand_MessageReachesTheHostAsMessageJSON(t *testing.T) {
	dir := t.TempDir()
	c := newTestCommand(t, CommandConfig{Argv: []string{writeScript(t, dir, "msg.sh", `cat "$A2A_MESSAGE_FILE"`)}})
	res, err := runCommand(t, c, withMessage(t, newTestTask(t, dir, "conv-1", "run-1", "book it")))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := res.Output["text"].(string)
	var got, want any
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("message.json is not JSON: %q", text)
	}
	_ = json.Unmarshal([]byte(a2aMessage), &want)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("message.json\n got %s\nwant %s", g, w)
	}
}

func TestHosts_DataPartsAndFilesByURLAreInThePrompt(t *testing.T) {
	for _, h := range cliHosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			root, record := t.TempDir(), t.TempDir()
			p := h.make(t, HostConfig{Env: fakeEnv(record)})
			task := withMessage(t, hostTask(t, root, "conv", "book it"))
			if _, err, _ := runHost(t, p, task); err != nil {
				t.Fatal(err)
			}
			call := onlyCall(t, record)
			prompt := call.stdin + "\x00" + strings.Join(call.argv, "\x00")
			for _, want := range []string{
				"book it",
				`"city": "Lyon"`,
				`"nights": 2`,
				"https://files.example.com/in/brief.pdf?sig=a%2Fb",
				filepath.Join(task.RunDir, "message.json"),
			} {
				if !strings.Contains(prompt, want) {
					t.Errorf("the prompt lacks %s:\nstdin %q\nargv %q", want, call.stdin, call.argv)
				}
			}
		})
	}
}

func TestHosts_TaskWithoutAMessageKeepsItsPrompt(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	p := cliHosts[0].make(t, HostConfig{Env: fakeEnv(record)}) // claude: the prompt alone on stdin
	if _, err, _ := runHost(t, p, hostTask(t, root, "conv", "just text")); err != nil {
		t.Fatal(err)
	}
	if got := onlyCall(t, record).stdin; got != "just text" {
		t.Errorf("stdin %q, want the task text alone", got)
	}
}
