package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestExampleConfig: mcp_config.example.json is a valid MCP client configuration whose
// lockermcp entry starts this command with a LOCKER_URL lockermcp accepts.
func TestExampleConfig(t *testing.T) {
	cfg, err := mcpclient.LoadConfig(filepath.Join(testenv.RepoRoot(t), "mcp_config.example.json"), mcpclient.ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := cfg.Server("lockermcp")
	if !ok || s.Transport != mcpclient.TransportStdio || s.Command != "lockermcp" || len(s.Args) != 0 || !slices.Equal(cfg.Names(), []string{"lockermcp"}) {
		t.Fatalf("server = %+v", s)
	}
	if _, err := config.LoadLockerMCP(func(k string) string { return s.Env[k] }); err != nil {
		t.Fatalf("env %v: %v", s.Env, err)
	}
}
