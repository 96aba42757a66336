package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/gatewayconf"
)

func newVerifyGatewayCmd(a *app) *cobra.Command {
	var (
		gwURL, config, server, store string
		strict, asJSON               bool
		timeout                      time.Duration
	)
	c := &cobra.Command{
		Use:   "verify-gateway --url GATEWAY_MCP_URL [--config gateway.yaml] [--strict]",
		Short: "List tools through the live gateway and compare with the catalog and the gateway's configuration",
		Long: `The gateway canary. List every tool through the live gateway at --url with an MCP client,
digest each one as the processor does, and compare with the catalog's approved set and,
with --config, with the gateway's configuration (the file emit wrote and the gateway runs).
Every mismatch is reported:

  served_unapproved         the gateway serves a tool that has no approval
  served_drifted            ... or one whose definition is not the approved one
  approved_missing          an approved tool is not served (drifted upstream, or removed)
  served_not_allowed        a tool is served that the configuration does not allow
  route_missing             the configuration has no route for the server
  processor_missing         the route calls no mcpGuardrails processor
  processor_not_failclosed  a processor is not explicitly failureMode: failClosed
  processor_methods         no processor filters tools/list responses and gates tools/call
  allow_rule_missing        an approved tool has no mcpAuthorization allow rule
  allow_rule_unapproved     an allow rule names a tool that is not approved
  rule_unverifiable         an allow rule is not of the form emit writes

The server is --server, else the one whose route in --config matches the URL's path, else
the catalog's only server. --json prints one document: {server, url, listed, findings}.` +
			"\n\nExit codes:\n  0  no mismatch (or mismatches without --strict)\n  1  --strict and at least one mismatch\n  2  could not run: usage error, unreadable catalog or configuration, gateway unreachable",
		Example: "  toolwarrant verify-gateway --url http://127.0.0.1:3000/weather/mcp --config gateway.yaml --strict\n" +
			"  toolwarrant verify-gateway --url http://127.0.0.1:3000/weather/mcp --server weather --json",
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if gwURL == "" {
				return cli.Usage(cmd, "--url is required")
			}
			u, err := url.Parse(gwURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return cli.Usage(cmd, "--url %q is not an http(s) URL", gwURL)
			}
			var g *gatewayconf.Gateway
			if config != "" {
				data, err := readFileLimited(config, 16<<20)
				if err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				if g, err = gatewayconf.Parse(data); err != nil {
					return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %v", config, err))
				}
			}
			doc, err := a.readStore(ctx, cmd, store)
			if err != nil {
				return err
			}
			if server == "" && g != nil {
				for _, r := range g.Routes {
					for _, p := range r.Paths {
						if strings.HasPrefix(u.Path, p) && len(r.Targets) == 1 {
							server = r.Targets[0].Name
						}
					}
				}
			}
			if server == "" && len(doc.Servers) == 1 {
				server = doc.Servers[0].Name
			}
			if server == "" {
				return cli.Usage(cmd, "cannot tell which server %s fronts; pass --server", gwURL)
			}
			es, ok := doc.Server(server)
			if !ok {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("server %q is not in the catalog", server))
			}
			approved := map[string]string{}
			for _, t := range es.Tools {
				if t.Approved != "" {
					approved[t.Name] = t.Approved
				}
			}
			listed, err := gatewayconf.ListGateway(ctx, gwURL, nil, timeout)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("list tools through the gateway: %v", err))
			}
			findings := gatewayconf.Verify(gatewayconf.Expectation{Server: server, Approved: approved, Listed: listed, Config: g})
			if asJSON {
				if findings == nil {
					findings = []gatewayconf.Finding{}
				}
				if err := writeJSON(a.env.Stdout, map[string]any{"server": server, "url": gwURL, "listed": len(listed), "findings": findings}); err != nil {
					return err
				}
			} else if len(findings) == 0 {
				what := "the catalog"
				if g != nil {
					what += " and " + config
				}
				fmt.Fprintf(a.env.Stdout, "ok: %s serves exactly the %s of %s; it agrees with %s\n", gwURL, cli.Count(len(approved), "approved tool", ""), server, what)
			} else {
				tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "MISMATCH\tTOOL\tDETAIL")
				for _, f := range findings {
					tool := f.Tool
					if tool == "" {
						tool = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Kind, quoteVisible(tool), f.Detail)
				}
				_ = tw.Flush()
				fmt.Fprintf(a.env.Stdout, "%s between %s, the catalog", cli.Count(len(findings), "mismatch", "mismatches"), gwURL)
				if g != nil {
					fmt.Fprintf(a.env.Stdout, " and %s", config)
				}
				fmt.Fprintln(a.env.Stdout)
			}
			if len(findings) > 0 && strict {
				return cli.Found()
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&gwURL, "url", "", "the gateway's MCP `URL` for one server, e.g. http://127.0.0.1:3000/weather/mcp")
	f.StringVar(&config, "config", "", "the gateway's configuration `FILE` to check (as emit wrote it)")
	f.StringVar(&server, "server", "", "the catalog server the URL fronts")
	f.BoolVar(&strict, "strict", false, "exit 1 on any mismatch")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "bound the whole listing")
	f.StringVar(&store, "store", "catalog", storeHelp)
	f.StringVar(&a.flagBlobBucket, "blob-bucket", "", blobBucketHelp)
	return c
}

// quoteVisible shows invisible and control characters of a name as escapes.
func quoteVisible(s string) string {
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
