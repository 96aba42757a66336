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
after every approval, rejection or rollback and reload the gateway.` + exitCodes("written", ""),
		Example: "  toolwarrant emit --out gateway.yaml\n  toolwarrant emit --processor 127.0.0.1:9001 --port 3000 --timeout 2s --server weather",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := a.openStore(ctx, cmd, store)
			if err != nil {
				return err
			}
			defer st.close()
			doc, err := st.servers(ctx)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("read the catalog: %v", err))
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
			fmt.Fprintf(a.env.Stdout, "wrote %s: %d route(s)\n", out, len(cfg.Routes))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "write to `FILE` (atomically) instead of stdout")
	f.StringVar(&processor, "processor", gatewayconf.DefaultProcessor, "host:port of 'toolwarrant serve' as the gateway reaches it")
	f.IntVar(&port, "port", gatewayconf.DefaultPort, "the gateway's listening port")
	f.DurationVar(&timeout, "timeout", gatewayconf.DefaultTimeout, "the gateway's request timeout for one processor call")
	f.StringArrayVar(&only, "server", nil, "emit only this server (repeatable; default every server)")
	f.StringVar(&store, "store", "catalog", storeHelp)
	f.StringVar(&a.flagBlobBucket, "blob-bucket", "", blobBucketHelp)
	return c
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
