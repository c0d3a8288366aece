package web_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestWeb_ConnectAnAgentAndWatchItWork is the page's main path, as a person
// walks it: sign in with a link from `a2a-platform login`, create an agent,
// generate a connection code, pair a real runtime with the command the
// page's instructions give, see the agent turn online without reloading,
// send a task from the chat, watch progress and the result arrive, download
// the artifact, create an A2A API key, call the agent with the page's curl
// command, revoke the key, and cancel a slow task from its page.
func TestWeb_ConnectAnAgentAndWatchItWork(t *testing.T) {
	p := startPlatform(t)
	script := agentScript(t)
	b := newBrowser(t)

	// Sign in: the link is redeemed, the session set, the code dropped from the URL.
	link := p.loginLink()
	b.open(link)
	b.waitText("main h1", "Agents")
	if loc := js[string](b, "location.href"); loc != p.APIBase+"/" {
		t.Fatalf("after sign-in the page is at %s, want %s/ (the code must leave the address bar)", loc, p.APIBase)
	}
	b.waitText("#live", "Live")
	b.shot("signed in")
	b.checkA11y("the agents list")

	// Create an agent.
	b.click(`button[aria-controls="new-agent"]`)
	b.typeInto("#new-agent input[name=name]", "Report writer")
	b.typeInto("#new-agent input[name=description]", "Writes the weekly report")
	b.shot("new agent form")
	b.click(`#new-agent button[type=submit]`)
	b.waitText("main h1", "Report writer")
	b.waitText(".agent-presence", "Not connected yet")
	b.shot("agent created")
	agentID := strings.TrimPrefix(js[string](b, "location.pathname"), "/agents/")
	if !mesh.ValidID(agentID) {
		t.Fatalf("the agent page is at /agents/%s", agentID)
	}

	// Generate a code for a custom agent host.
	b.setSelect("select[name=host_type]", "custom")
	b.click("#generate-code")
	b.waitJS("a pairing code", `() => /^[A-Z2-9]{5}(-[A-Z2-9]{5}){3}$/.test(document.querySelector('#pairing-code')?.textContent || '')`)
	code := b.textOf("#pairing-code")
	instructions := b.textOf("#instructions")
	for _, want := range []string{code, "--api-base " + p.APIBase, "curl -fsSL " + p.APIBase + "/install.sh | sh", "a2a-runtime pair", "a2a-runtime start", "--adapter command -- -- /path/to/your-agent-program",
		"--local-executor-type custom", "a2a-runtime status", "never create a new agent", "runtime token"} {
		if !strings.Contains(strings.ToLower(instructions), strings.ToLower(want)) {
			t.Errorf("the connection instructions lack %q:\n%s", want, instructions)
		}
	}
	// The steps work for an assistant: it installs before it runs
	// anything it installed, it is never told to run a command that does
	// not return, the one-time code stays out of the pair command's
	// arguments (and so out of ps), and a platform address only this
	// machine can reach is called out.
	if strings.Index(instructions, "install.sh") > strings.Index(instructions, "a2a-runtime status") {
		t.Errorf("the instructions run a2a-runtime status before they install it:\n%s", instructions)
	}
	for _, line := range strings.Split(instructions, "\n") {
		if strings.HasSuffix(strings.TrimSpace(strings.Trim(line, "`.")), "a2a-runtime start") && !strings.Contains(line, "&") {
			t.Errorf("the instructions run a2a-runtime start in the foreground, where it never returns: %q", line)
		}
		if strings.Contains(line, "a2a-runtime pair "+code) {
			t.Errorf("the pair command carries the code as an argument: %q", line)
		}
	}
	for _, want := range []string{"a2a-runtime service install", "only from the machine the platform runs on", "--public-url"} {
		if !strings.Contains(instructions, want) {
			t.Errorf("the connection instructions lack %q:\n%s", want, instructions)
		}
	}
	b.waitText(".countdown", "Expires in")
	b.shot("connection code and instructions")
	b.checkA11y("the agent page with a connection code")

	// Pair a real runtime the way the instructions say, with the agent's
	// program for the placeholder, and start it: it runs the adapter.
	js[bool](b, "(window.__sameDocument = true)")
	pairArgs, err := commandLine(instructions, "echo "+code+" | a2a-runtime pair ")
	if err != nil {
		t.Fatalf("no pair command reading the code from standard input in the instructions:\n%s", instructions)
	}
	pairArgs = pairArgs[3:] // after "echo CODE |": the code goes to standard input
	for i, a := range pairArgs {
		if a == "/path/to/your-agent-program" {
			pairArgs[i] = script
		}
	}
	m := newMachine(t)
	pairOutput := m.pairWithCode(code, pairArgs[1:], "http://"+meshtest.FreeAddr(t)+"/run-task")
	b.waitText("#code-status", "Code used")
	rt := m.start()

	// The page turns the agent online by itself.
	b.waitText(".agent-presence", "Online")
	b.waitText(".agent-presence", "running on web-test-laptop")
	b.waitText(".agent-presence", "Custom Agent")
	b.waitText("#code-status", "Connected")
	b.shot("agent online")
	if !js[bool](b, "window.__sameDocument === true") {
		t.Fatal("the page reloaded to show the agent online")
	}
	b.click(`nav a[href="/"]`)
	b.waitText(".cards", "Report writer")
	b.waitText(".cards", "Online")
	b.waitText(".cards", "running on web-test-laptop")
	b.waitText(".cards", "Last heartbeat")
	b.shot("agents list with the agent online")
	b.click(`.cards a[href="/agents/` + agentID + `"]`)
	b.waitText("main h1", "Report writer")

	// Send a task from the chat box; progress and the result arrive live.
	b.typeInto("textarea[name=input]", "Write the weekly report")
	b.click(".composer button[type=submit]")
	b.waitText(".msg.agent", "reading the request")
	b.shot("task progress")
	b.waitText(".msg.agent", "Done: Write the weekly report")
	b.waitText(".msg.agent .badge", "Completed")
	// The finished run's reply is its answer and files; its progress is on
	// the task page.
	reply := b.textOf(".msg.agent")
	for _, want := range []string{"report.md", "chart.png"} {
		if !strings.Contains(reply, want) {
			t.Errorf("the chat's reply lacks %q:\n%s", want, reply)
		}
	}
	if strings.Contains(reply, "reading the request") || js[bool](b, `!!document.querySelector('.msg.agent progress')`) {
		t.Errorf("the chat's reply to the finished run still shows its progress:\n%s", reply)
	}
	b.shot("task result in the chat")

	// The task page: status, every progress message, the answer, the artifact.
	b.click(`.msg.agent a[href^="/tasks/"]`)
	b.waitText("main h1", "Task")
	b.waitText("#task-status", "Completed")
	b.waitText("#task-progress", "report written")
	b.waitText("#task-result .artifact .markdown h2", "Report")
	b.waitText("#task-result .artifact .markdown strong", "first")
	b.waitJS("the chart shown", `() => { const img = document.querySelector('#task-result .artifact img'); return !!img && img.complete && img.naturalWidth === 4 && img.alt === 'chart.png'; }`)
	progress := b.textOf("#task-progress")
	for _, want := range []string{"reading the request", "writing the report", "report written"} {
		if !strings.Contains(progress, want) {
			t.Errorf("the task page's progress lacks %q:\n%s", want, progress)
		}
	}
	b.shot("task page with the rendered artifact")
	b.checkA11y("the task page")
	runID := strings.TrimPrefix(js[string](b, "location.pathname"), "/tasks/")
	run := p.GetTask(runID)
	if run.Status != mesh.StatusCompleted || len(run.Artifacts) != 2 {
		t.Fatalf("the platform has the run %s with %d artifacts", run.Status, len(run.Artifacts))
	}
	for _, a := range run.Artifacts {
		want := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + a.ArtifactID + "/content", Owner: true}).
			Expect(t, http.StatusOK).Body
		if a.Filename == "report.md" && !bytes.HasPrefix(want, []byte("# Report\n\nYou asked: Write the weekly report")) {
			t.Fatalf("the stored report is %q", want)
		}
		if got := b.download(`#task-result .artifact[data-artifact-id="` + a.ArtifactID + `"] a[download]`); !bytes.Equal(got, want) {
			t.Fatalf("downloaded %s: %q, want %q", a.Filename, got, want)
		}
	}

	// Its A2A details: the card, the endpoints, a key created (shown once),
	// used with the page's own curl command, then revoked.
	b.click(`a[href="/agents/` + agentID + `"]`)
	b.waitText("main h1", "Report writer")
	apiKey := a2aKeyWalk(t, b, p.APIBase, agentID)
	b.typeInto("textarea[name=input]", "a slow task")
	b.click(".composer button[type=submit]")
	b.waitJS("the slow task working", `() => [...document.querySelectorAll('.msg.agent')].some((m) => m.textContent.includes('thinking very slowly'))`)
	js[bool](b, `(() => { [...document.querySelectorAll('.msg.agent')].find((m) => m.textContent.includes('thinking very slowly')).querySelector('a[href^="/tasks/"]').click(); return true; })()`)
	b.waitText("#task-status", "Working")
	b.waitText("#task-progress", "thinking very slowly")
	b.shot("slow task working")
	b.click("#cancel-task")
	b.waitText("#task-status", "Canceled")
	b.waitJS("the cancel button gone", `() => document.querySelector('#cancel-task').offsetParent === null`)
	b.shot("slow task canceled")
	slowID := strings.TrimPrefix(js[string](b, "location.pathname"), "/tasks/")
	if got := p.GetTask(slowID); got.Status != mesh.StatusCanceled {
		t.Fatalf("the platform has the slow run %s", got.Status)
	}
	if !js[bool](b, "window.__sameDocument === true") {
		t.Fatal("the page reloaded during the walk")
	}

	// The sign-in code, the session, the connection code and the runtime's
	// credential appear in no log and nowhere on the page.
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{p.APIBase}})
	if err != nil || len(cookies.Cookies) != 1 {
		t.Fatalf("cookies: %v %+v", err, cookies)
	}
	u, _ := url.Parse(link)
	secrets := []string{u.Query().Get("code"), cookies.Cookies[0].Value, code, m.profileToken(), p.OwnerToken, apiKey}
	meshtest.AssertNoSecrets(t, secrets, map[string]string{
		"platform logs":  p.output(),
		"pair output":    pairOutput,
		"runtime output": rt.out.String(),
		"page text":      b.textOf("body"),
	})
}

// a2aKeyWalk checks the agent page's A2A section: the card URL and the
// endpoint of each version; a key created there is shown once, works with
// the page's curl example (run in a shell), is listed by its
// prefix only, and no longer works once revoked there. It returns the key.
func a2aKeyWalk(t *testing.T, b *browserT, apiBase, agentID string) string {
	t.Helper()
	agentURL := apiBase + "/a2a/" + agentID
	b.waitText("#a2a-card-url", agentURL+"/.well-known/agent-card.json")
	endpoints := b.textOf("#a2a table.endpoints tbody")
	for _, want := range []string{"1.0", "0.3", "JSON-RPC", "HTTP+JSON", agentURL} {
		if !strings.Contains(endpoints, want) {
			t.Errorf("the endpoints table lacks %q:\n%s", want, endpoints)
		}
	}
	b.waitText("#a2a-capabilities", "Streams its progress")
	b.waitText("#api-keys", "No API keys yet")
	curl := b.textOf("#a2a-curl")
	m := regexp.MustCompile(`(?s)curl -sS -X POST '([^']+)'.*-H "X-API-Key: \$A2A_API_KEY".*-d '(\{.*\})'`).FindStringSubmatch(curl)
	if m == nil || m[1] != agentURL || !strings.Contains(m[2], `"message/send"`) {
		t.Fatalf("the curl example does not send message/send to %s:\n%s", agentURL, curl)
	}
	b.checkA11y("the agent page's A2A section")

	b.typeInto("#new-api-key input[name=key_name]", "CI pipeline")
	b.click("#new-api-key button[type=submit]")
	b.waitJS("the new key shown once", `() => /^a2akey_/.test(document.querySelector('#new-api-key-value')?.textContent || '')`)
	key := b.textOf("#new-api-key-value")
	b.waitText("#api-keys", "CI pipeline")
	listed := b.textOf("#api-keys")
	if strings.Contains(listed, key) || !strings.Contains(listed, key[:len("a2akey_")+6]) {
		t.Fatalf("the key list should show the key's prefix only:\n%s", listed)
	}
	b.shot("API key created, shown once")

	// The page's own example, run in a shell with the key, gets the agent's answer.
	if status, body := runCurlExample(t, curl, key, curlExampleText); status != http.StatusOK || !strings.Contains(body, `"state":"completed"`) || !strings.Contains(body, "Done: "+curlExampleText) {
		t.Fatalf("the curl example with the new key: %d %s", status, body)
	}

	b.click("#api-key-once button.small:last-child")
	b.waitJS("the key hidden", `() => !document.querySelector('#new-api-key-value')`)
	b.click(`#api-keys li[data-key-id] button.danger`)
	b.waitText(`#api-keys li[data-key-id] button.danger`, "Click again to revoke")
	b.click(`#api-keys li[data-key-id] button.danger`)
	b.waitText("#api-keys", "No API keys yet")
	b.shot("API key revoked")
	if status, body := runCurlExample(t, curl, key, curlExampleText); status != http.StatusUnauthorized {
		t.Fatalf("the revoked key still works: %d %s", status, body)
	}
	return key
}
