package extmcp_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/gatewayconf"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// These tests check the processor's container files statically: non-root, digest-pinned
// images, the processor bound to localhost beside the gateway, and a least-privilege task
// role. test/containers runs the image under podman.

func readInfra(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var templateImage = regexp.MustCompile(`^\S+@sha256:(\$\{[A-Z_]+\}|[0-9a-f]{64})$`)

// TestProcessorDockerfile: the processor image runs `toolwarrant serve` on loopback by
// default, as a non-root user (test/infra checks the base pin and the copied binary;
// test/containers runs it).
func TestProcessorDockerfile(t *testing.T) {
	var users, cmds, entrypoints []string
	for _, line := range strings.Split(string(readInfra(t, "infra/extmcp/Dockerfile")), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "USER":
			users = append(users, f[1])
		case "CMD":
			cmds = append(cmds, line)
		case "ENTRYPOINT":
			entrypoints = append(entrypoints, line)
		}
	}
	if len(users) == 0 || users[len(users)-1] == "0" || strings.HasPrefix(users[len(users)-1], "root") || strings.HasPrefix(users[len(users)-1], "0:") {
		t.Errorf("final USER %v: the image must run as a non-root user", users)
	}
	if len(entrypoints) != 1 || !strings.Contains(entrypoints[0], `"/usr/local/bin/toolwarrant"`) {
		t.Errorf("ENTRYPOINT %v: want the toolwarrant binary", entrypoints)
	}
	if len(cmds) != 1 || !strings.Contains(cmds[0], `"serve"`) || !strings.Contains(cmds[0], `"127.0.0.1:9001"`) {
		t.Errorf("CMD %v: the processor must listen on loopback", cmds)
	}
}

type container struct {
	Name                   string   `json:"name"`
	Image                  string   `json:"image"`
	User                   string   `json:"user"`
	ReadonlyRootFilesystem bool     `json:"readonlyRootFilesystem"`
	Command                []string `json:"command"`
	PortMappings           []struct {
		ContainerPort int `json:"containerPort"`
	} `json:"portMappings"`
	LinuxParameters struct {
		Capabilities struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"linuxParameters"`
	HealthCheck *struct {
		Command []string `json:"command"`
	} `json:"healthCheck"`
	Environment []struct {
		Name, Value string
	} `json:"environment"`
	DependsOn []struct {
		ContainerName, Condition string
	} `json:"dependsOn"`
	MountPoints []struct {
		ReadOnly bool `json:"readOnly"`
	} `json:"mountPoints"`
}

func TestECSTaskDefinition(t *testing.T) {
	var td struct {
		NetworkMode          string      `json:"networkMode"`
		TaskRoleArn          string      `json:"taskRoleArn"`
		ContainerDefinitions []container `json:"containerDefinitions"`
	}
	if err := json.Unmarshal(readInfra(t, "infra/ecs/task-definition.json"), &td); err != nil {
		t.Fatal(err)
	}
	if td.NetworkMode != "awsvpc" {
		t.Errorf("networkMode %q: the sidecars share localhost only in awsvpc mode", td.NetworkMode)
	}
	if !strings.HasSuffix(td.TaskRoleArn, ":role/toolwarrant-processor") {
		t.Errorf("task role %q", td.TaskRoleArn)
	}
	byName := map[string]container{}
	for _, c := range td.ContainerDefinitions {
		byName[c.Name] = c
		if !templateImage.MatchString(c.Image) {
			t.Errorf("%s: image %q is not pinned by digest", c.Name, c.Image)
		}
		if c.User == "" || c.User == "0" || strings.HasPrefix(c.User, "0:") || strings.HasPrefix(c.User, "root") {
			t.Errorf("%s: user %q is not non-root", c.Name, c.User)
		}
		if !c.ReadonlyRootFilesystem || !slices.Contains(c.LinuxParameters.Capabilities.Drop, "ALL") {
			t.Errorf("%s: want a read-only root file system and every capability dropped", c.Name)
		}
		for _, m := range c.MountPoints {
			if !m.ReadOnly {
				t.Errorf("%s: a writable mount", c.Name)
			}
		}
	}
	p, g := byName["toolwarrant"], byName["agentgateway"]
	if len(p.PortMappings) != 0 {
		t.Errorf("the processor publishes ports %v; it must be reachable on localhost only", p.PortMappings)
	}
	if i := slices.Index(p.Command, "--listen"); i < 0 || p.Command[i+1] != "127.0.0.1:9001" || p.Command[0] != "serve" {
		t.Errorf("processor command %v: want serve --listen 127.0.0.1:9001", p.Command)
	}
	env := map[string]string{}
	for _, e := range p.Environment {
		env[e.Name] = e.Value
	}
	// The bucket of the catalog's large objects, and one P: the task has half a vCPU, and
	// Go's default there is at least 2 (it rounds a container's limit up to 2, and does not
	// see a limit set on the task's cgroup alone); at 1 the processor spends about a quarter
	// less CPU per decision (scripts/extmcp-load -server-procs, make bench).
	if want := map[string]string{"CATALOG_BLOB_BUCKET": "${CATALOG_BLOB_BUCKET}", "GOMAXPROCS": "1"}; !maps.Equal(env, want) {
		t.Errorf("processor environment %v: want %v", env, want)
	}
	if p.HealthCheck == nil || !slices.Contains(p.HealthCheck.Command, "--probe") {
		t.Errorf("processor health check %+v: want serve --probe", p.HealthCheck)
	}
	if len(g.DependsOn) != 1 || g.DependsOn[0].ContainerName != "toolwarrant" || g.DependsOn[0].Condition != "HEALTHY" {
		t.Errorf("agentgateway dependsOn %+v: want the processor HEALTHY first", g.DependsOn)
	}
	// The gateway configuration the task runs points at the sidecar, failClosed.
	cfg, err := gatewayconf.Parse(readInfra(t, "infra/agentgateway/config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cfg.Routes {
		for _, pr := range r.Processors {
			if pr.Host != "127.0.0.1:9001" || pr.FailureMode != "failClosed" {
				t.Errorf("route %s: processor %+v, want 127.0.0.1:9001 failClosed", r.Name, pr)
			}
		}
	}
}

func TestProcessorRoleIsLeastPrivilege(t *testing.T) {
	var pol struct {
		Statement []struct {
			Effect    string          `json:"Effect"`
			Action    []string        `json:"Action"`
			Resource  json.RawMessage `json:"Resource"`
			Condition json.RawMessage `json:"Condition"`
		} `json:"Statement"`
	}
	if err := json.Unmarshal(readInfra(t, "infra/ecs/processor-task-role-policy.json"), &pol); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"dynamodb:GetItem": true, "dynamodb:Query": true, "s3:GetObject": true, "elasticfilesystem:ClientMount": true}
	for _, s := range pol.Statement {
		if s.Effect != "Allow" {
			continue
		}
		for _, a := range s.Action {
			if !allowed[a] || strings.Contains(a, "*") {
				t.Errorf("action %q: the processor only reads the catalog and mounts its config read-only", a)
			}
			if a == "s3:GetObject" && string(s.Resource) != `"arn:aws:s3:::${CATALOG_BLOB_BUCKET}/catalog/*"` {
				t.Errorf("s3:GetObject on %s: only the catalog's objects", s.Resource)
			}
		}
		if strings.Contains(string(s.Resource), `"*"`) || strings.Contains(string(s.Resource), ":*") {
			t.Errorf("resource %s is a wildcard", s.Resource)
		}
		if slices.Contains(s.Action, "elasticfilesystem:ClientMount") && len(s.Condition) == 0 {
			t.Error("the EFS mount is not limited to the configuration's access point")
		}
	}
}
