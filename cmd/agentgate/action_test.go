package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// action is the part of action.yml this test reads.
type action struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			Name  string            `yaml:"name"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

var exprRE = regexp.MustCompile(`\$\{\{\s*inputs\.([a-z-]+)\s*\}\}`)

// TestGitHubAction runs the "agentgate ci" step of action.yml as the runner would (bash,
// its env with the inputs substituted, agentgate on PATH) against a lockfile whose server
// has since rug-pulled: the step fails with ci's exit code 1, writes SARIF and sets the
// sarif output. It also checks every input the step uses exists with a default.
func TestGitHubAction(t *testing.T) {
	root := testenv.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q", a.Runs.Using)
	}
	for _, in := range []string{"version", "working-directory", "config", "lockfile", "fail-on", "sarif", "timeout"} {
		if _, ok := a.Inputs[in]; !ok {
			t.Errorf("action.yml has no input %q", in)
		}
	}
	var step *struct {
		ID    string            `yaml:"id"`
		Name  string            `yaml:"name"`
		Shell string            `yaml:"shell"`
		Env   map[string]string `yaml:"env"`
		Run   string            `yaml:"run"`
	}
	for i := range a.Runs.Steps {
		if a.Runs.Steps[i].ID == "ci" {
			step = &a.Runs.Steps[i]
		}
	}
	if step == nil || step.Shell != "bash" || !strings.Contains(step.Run, "agentgate \"${args[@]}\"") {
		t.Fatalf("no bash step with id ci running agentgate: %+v", step)
	}

	// The project: the rug-pull fixture, locked (version 2) before its rug pull.
	bin := rugpull(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"weather": {"command": %s, "args": ["-state", %s]}}}`,
		jsonStr(bin), jsonStr(filepath.Join(dir, "state"))))
	if r := runCLI(t, testDeps(dir), nil, "lock"); r.code != 0 {
		t.Fatalf("lock = %+v", r)
	}
	agentgate := filepath.Join(t.TempDir(), "agentgate")
	build := exec.Command(testenv.LookPath(t, "go"), "build", "-o", agentgate, "./cmd/agentgate")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	inputs := map[string]string{}
	for k, v := range a.Inputs {
		inputs[k] = v.Default
	}
	inputs["fail-on"], inputs["sarif"], inputs["markdown"] = "critical", "agentgate.sarif", "drift.md"
	output := filepath.Join(t.TempDir(), "github_output")
	home := t.TempDir()
	run := func(run string, stepEnv map[string]string) ([]byte, error) {
		env := []string{"PATH=" + filepath.Dir(agentgate) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home,
			"GITHUB_OUTPUT=" + output, "GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		for k, v := range stepEnv {
			env = append(env, k+"="+exprRE.ReplaceAllStringFunc(v, func(m string) string { return inputs[exprRE.FindStringSubmatch(m)[1]] }))
		}
		cmd := exec.CommandContext(t.Context(), testenv.LookPath(t, "bash"), "-e", "-c", run)
		cmd.Dir = dir
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	// The project is a clone with an origin, as actions/checkout leaves it, for the re-lock.
	origin := filepath.Join(t.TempDir(), "origin.git")
	gitSetup := "git init -q --bare " + origin + " && git init -q -b main . && git -c user.name=t -c user.email=t@example.com add -A && " +
		"git -c user.name=t -c user.email=t@example.com commit -q -m locked && git remote add origin " + origin + " && git push -q origin main"
	if out, err := run(gitSetup, nil); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	out, err := run(step.Run, step.Env)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the ci step: %v, want exit 1 (drift)\n%s", err, out)
	}
	if !strings.Contains(string(out), `CRITICAL server "weather" (generic) tool "get_forecast": changed: description-changed /description`) ||
		!strings.Contains(string(out), "::error file=agentgate.lock,line=") {
		t.Errorf("step output:\n%s", out)
	}
	var log sarifLog
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "agentgate.sarif"))), &log); err != nil || len(log.Runs[0].Results) == 0 {
		t.Errorf("sarif: %v %+v", err, log)
	}
	if got := readFile(t, output); got != "sarif=agentgate.sarif\nmarkdown=drift.md\nexit-code=1\n" {
		t.Errorf("GITHUB_OUTPUT = %q", got)
	}
	if md := readFile(t, filepath.Join(dir, "drift.md")); !strings.Contains(md, "| CRITICAL | `weather` | `generic` | tool `get_forecast` |") {
		t.Errorf("drift.md:\n%s", md)
	}

	// The re-lock step: with relock-branch set and ci's exit code 1, it pushes one commit
	// holding the new lockfile and snapshot to that branch of origin.
	var relock *struct {
		ID    string            `yaml:"id"`
		Name  string            `yaml:"name"`
		Shell string            `yaml:"shell"`
		Env   map[string]string `yaml:"env"`
		Run   string            `yaml:"run"`
	}
	for i := range a.Runs.Steps {
		if a.Runs.Steps[i].ID == "relock" {
			relock = &a.Runs.Steps[i]
		}
	}
	if relock == nil {
		t.Fatal("action.yml has no step with id relock")
	}
	inputs["relock-branch"] = "agentgate/relock"
	if out, err := run(relock.Run, relock.Env); err != nil {
		t.Fatalf("the relock step: %v\n%s", err, out)
	}
	show, err := run("git --git-dir="+origin+" log -1 --format=%s%n%b --name-only agentgate/relock", nil)
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, show)
	}
	for _, want := range []string{"agentgate: re-lock the MCP tool surface", "**CRITICAL**", "agentgate.lock", "agentgate.snapshot.json"} {
		if !strings.Contains(string(show), want) {
			t.Errorf("the pushed commit lacks %q:\n%s", want, show)
		}
	}
	if got, err := run("git --git-dir="+origin+" show agentgate/relock:agentgate.lock", nil); err != nil || string(got) != readFile(t, filepath.Join(dir, "agentgate.lock")) {
		t.Errorf("the branch's lockfile is not the re-locked one (%v)", err)
	}
	if !strings.Contains(readFile(t, output), "branch=agentgate/relock\n") {
		t.Errorf("GITHUB_OUTPUT = %q", readFile(t, output))
	}
	// A branch name git refuses is an error before anything runs.
	inputs["relock-branch"] = "bad..name"
	if out, err := run(relock.Run, relock.Env); err == nil {
		t.Errorf("relock-branch bad..name: %s", out)
	}
}
