package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/gatewayconf"
)

func newEmitCmd(a *app) *cobra.Command {
	var (
		out, processor, store string
		port                  int
		timeout               time.Duration
		only                  []string
		asJSON                bool
	)
	c := &cobra.Command{
		Use:   "emit [--out gateway.yaml]",
		Short: "Write the agentgateway configuration: a failClosed processor and an allow rule per approved tool",
		Long: `Write an agentgateway standalone configuration (to --out, else stdout) with one route per
catalog server (path /<server>/, target <server>), whose mcpGuardrails processor is
'toolwarrant serve' at --processor with failureMode: failClosed, methods tools/list:
response and tools/call: request, and a --timeout request timeout; and whose
mcpAuthorization allows exactly the approved tools by name (defence in depth: the gateway
itself drops anything else, even if the processor were misconfigured). A server with no
approved tool gets a rule that allows nothing. The output is deterministic; re-run emit
after every approval, rejection or rollback and reload the gateway.

Every route calls the one processor at --processor, so run one 'toolwarrant serve' there
for the same servers: without --server both cover every server in the catalog. To split
servers across processors, emit and serve each group with the same --server flags (one
gateway configuration per processor). The configuration is for agentgateway v1.4.1 or later
(docs/extmcp.md).` + exitCodes("written", ""),
		Example: "  toolwarrant emit --out gateway.yaml\n  toolwarrant emit --processor 127.0.0.1:9001 --port 3000 --timeout 2s --server weather --out weather.yaml",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if asJSON && (out == "" || out == "-") {
				return cli.Usage(cmd, "--json needs --out FILE: without it the configuration itself goes to stdout")
			}
			doc, err := a.readStore(ctx, cmd, store)
			if err != nil {
				return err
			}
			cfg := gatewayconf.Config{Port: port, Processor: processor, Timeout: timeout}
			for _, s := range doc.Servers {
				if len(only) > 0 && !slices.Contains(only, s.Name) {
					continue
				}
				cfg.Routes = append(cfg.Routes, gatewayconf.Route{Server: s.Name, URL: s.URL, Approved: s.Approved()})
			}
			for _, name := range only {
				if _, ok := doc.Server(name); !ok {
					return cli.Exit(cli.ExitUsage, fmt.Errorf("server %q is not in the catalog", name))
				}
			}
			if len(cfg.Routes) == 0 {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("the catalog has no server; add one with 'toolwarrant server add'"))
			}
			yaml, err := gatewayconf.Emit(cfg)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			if out == "" || out == "-" {
				_, err := a.env.Stdout.Write(yaml)
				return err
			}
			if err := writeFileAtomic(out, yaml, 0o644); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if asJSON {
				rep := emitJSON{Out: out, Processor: cfg.Processor, Servers: []string{}}
				for _, r := range cfg.Routes {
					rep.Servers = append(rep.Servers, r.Server)
					rep.AllowedTools += len(r.Approved)
				}
				if rep.Processor == "" {
					rep.Processor = gatewayconf.DefaultProcessor
				}
				return writeJSON(a.env.Stdout, rep)
			}
			fmt.Fprintf(a.env.Stdout, "wrote %s: %s to the processor at %s; serve them with 'toolwarrant serve --listen %s%s'\n",
				out, cli.Count(len(cfg.Routes), "route", ""), processor, processor, serverFlags(only))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "write to `FILE` (atomically) instead of stdout")
	f.StringVar(&processor, "processor", gatewayconf.DefaultProcessor, "host:port of 'toolwarrant serve' as the gateway reaches it")
	f.IntVar(&port, "port", gatewayconf.DefaultPort, "the gateway's listening port")
	f.DurationVar(&timeout, "timeout", gatewayconf.DefaultTimeout, "the gateway's request timeout for one processor call")
	f.StringArrayVar(&only, "server", nil, "emit only this server (repeatable; default every server); serve the same ones at --processor")
	f.BoolVar(&asJSON, "json", false, "with --out: print one JSON document: out, processor, servers, allowedTools (docs/extmcp.md)")
	f.StringVar(&store, "store", "catalog", storeHelp)
	f.StringVar(&a.flagBlobBucket, "blob-bucket", "", blobBucketHelp)
	return c
}

// emitJSON is what emit --out --json reports (docs/extmcp.md).
type emitJSON struct {
	Out       string   `json:"out"`
	Processor string   `json:"processor"`
	Servers   []string `json:"servers"`
	// AllowedTools counts the allow rules: the approved tools over every route.
	AllowedTools int `json:"allowedTools"`
}

// serverFlags is " --server A --server B", or "" for every server.
func serverFlags(names []string) string {
	s := ""
	for _, n := range names {
		s += " --server " + n
	}
	return s
}

// writeFileAtomic writes data to path through a temporary file in the same directory.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
