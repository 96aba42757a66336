package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/mcpproxy"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func newProxyCmd(a *app) *cobra.Command {
	var (
		ef            enforceFlags
		listen, stdio string
		connect       string
		probe         time.Duration
		maxRequest    int64
		maxMessage    int
	)
	c := &cobra.Command{
		Use:   "proxy (--listen ADDRESS | --stdio SERVER)",
		Short: "An MCP proxy for Claude Code, VS Code or Cursor that serves only approved tool definitions",
		Long: `Serve every catalog server (or those named by --server) as an MCP endpoint at
http://ADDRESS/SERVER/mcp (Streamable HTTP, every MCP revision the client and the server
agree on, 2026-07-28 included), forwarding to the server's URL through the crawler's
SSRF-hardened client, with the catalog's --header-env headers. Point your MCP client at
these URLs instead of the servers'.

Every tools/list result loses each tool whose live digest (RFC 8785 of the tool object as
the server sent it) is not the approved digest; every other byte of it is kept. A
tools/call passes only if the tool's approved digest is what the proxy last saw listed and
what the catalog last observed, and is otherwise answered by the proxy with a JSON-RPC
error that names the tool and its state (unknown, unapproved, drifted, unlisted): the
server never sees it. Anything the proxy cannot decide is denied: approvals older than
--staleness, a message it cannot read exactly (a duplicate member, invalid UTF-8), a method
that is not MCP's, an Mcp-Method or Mcp-Name header that does not match the body, an answer
over --max-message-bytes. Other MCP methods (initialize, ping, resources, prompts, ...) and
the server's own requests and notifications pass unchanged. The rule is the one 'serve'
(ExtMcp) and the AgentCore interceptor apply.

Approvals are re-read every --refresh, and the proxy lists every server itself every
--probe, so a definition changed upstream is filtered and its calls refused within one
probe even if no client lists again. What the proxy filters is recorded in the catalog
(as 'serve' does: 'toolwarrant list' shows DRIFT and PENDING), and every decision is counted
and written to the audit log every --record-every and on SIGTERM ('toolwarrant
decisions'). --shadow passes everything and records what would have been stopped.

--stdio SERVER bridges an MCP client's stdin and stdout to the SERVER route, for a client
config entry with "command": "toolwarrant", "args": ["proxy", "--stdio", "SERVER"]: it
starts the proxy in this process on a loopback port, or, with --connect URL, uses a proxy
already running there. Logs go to stderr.

GET /healthz answers 200 while every server's approvals are fresh (503 otherwise), with
each server's approval set as JSON; GET /metrics the Prometheus metrics. The proxy refuses
requests whose Host is not loopback (DNS rebinding) and browser requests from other
origins. It does not forward the client's Authorization header.` +
			"\n\nExit codes:\n  0  shut down cleanly on a signal, or the --stdio client closed its input\n  2  could not start: usage error, unreadable catalog, a server not in the catalog, a header variable not set, address in use",
		Example: "  toolwarrant proxy --listen 127.0.0.1:8787\n" +
			"  toolwarrant proxy --listen 127.0.0.1:8787 --server weather --shadow\n" +
			"  toolwarrant proxy --stdio weather                     # in .mcp.json: {\"command\":\"toolwarrant\",\"args\":[\"proxy\",\"--stdio\",\"weather\"]}\n" +
			"  toolwarrant proxy --stdio weather --connect http://127.0.0.1:8787",
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			switch {
			case (listen == "") == (stdio == ""):
				return cli.Usage(cmd, "give exactly one of --listen ADDRESS (serve every route) and --stdio SERVER (bridge this process's stdio to one)")
			case connect != "" && stdio == "":
				return cli.Usage(cmd, "--connect URL goes with --stdio SERVER")
			case stdio != "" && warrant.ValidateServerName(stdio) != nil:
				return cli.Usage(cmd, "--stdio %q: %v", stdio, warrant.ValidateServerName(stdio))
			}
			if connect != "" {
				return a.bridge(ctx, strings.TrimRight(connect, "/")+"/"+stdio+"/mcp", maxMessage, nil)
			}
			if stdio != "" && len(ef.servers) == 0 {
				ef.servers = []string{stdio}
			}
			cfg := enforce.Config{Point: enforce.PointProxy, PassMethods: true, MaxMessageBytes: maxMessage}
			st, log, err := ef.open(ctx, cmd, a, &cfg)
			if err != nil {
				return err
			}
			defer st.close()
			ups, err := a.upstreams(ctx, st, cfg.Servers)
			if err != nil {
				return err
			}
			p, err := enforce.New(cfg)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			px, err := mcpproxy.New(mcpproxy.Config{Processor: p, Upstreams: ups, MaxRequestBytes: maxRequest, Probe: probe,
				Resolver: a.deps.crawl.Resolver, Dial: a.deps.crawl.Dial, TLSConfig: a.deps.crawl.TLSConfig, Logger: log})
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			addr := listen
			if stdio != "" {
				addr = "127.0.0.1:0"
			}
			lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("listen on %s: %v", addr, err))
			}
			p.Start(ctx)
			runCtx, stopProbe := context.WithCancel(ctx)
			probeDone := make(chan struct{})
			go func() { px.Run(runCtx); close(probeDone) }()
			srv := &http.Server{Handler: px.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(lis) }()
			base := "http://" + lis.Addr().String()
			var runErr error
			if stdio != "" {
				log.InfoContext(ctx, "proxy: bridging stdio", slog.String("route", base+"/"+stdio+"/mcp"), slog.Bool("shadow", cfg.Shadow))
				runErr = a.bridge(ctx, base+"/"+stdio+"/mcp", maxMessage, log)
			} else {
				for _, r := range px.Routes() {
					fmt.Fprintf(a.env.Stderr, "%s%s\n", base, r)
				}
				fmt.Fprintf(a.env.Stderr, "toolwarrant proxy: serving %d route(s) on %s%s; health at %s/healthz\n", len(px.Routes()), base, shadowNote(cfg.Shadow), base)
				select {
				case <-ctx.Done():
				case runErr = <-served:
				}
			}
			stopProbe()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-probeDone
			p.Close(sctx)
			log.InfoContext(sctx, "proxy: stopped")
			if runErr != nil && !errors.Is(runErr, http.ErrServerClosed) {
				return cli.Exit(cli.ExitUsage, runErr)
			}
			return nil
		},
	}
	ef.register(c, a)
	f := c.Flags()
	f.StringVar(&listen, "listen", "", "serve the routes on `ADDRESS` (keep it on loopback), e.g. 127.0.0.1:8787")
	f.StringVar(&stdio, "stdio", "", "bridge this process's stdin and stdout to the route of `SERVER`")
	f.StringVar(&connect, "connect", "", "with --stdio: the `URL` of a proxy already running (http://127.0.0.1:8787), instead of one in this process")
	f.DurationVar(&probe, "probe", mcpproxy.DefaultProbe, "list every server this often to catch a changed definition without a client listing (0: the default; negative: never)")
	f.Int64Var(&maxRequest, "max-request-bytes", mcpproxy.DefaultMaxRequestBytes, "refuse client requests larger than this (413)")
	f.IntVar(&maxMessage, "max-message-bytes", enforce.DefaultMaxMessageBytes, "deny a server answer (a JSON body or one event) larger than this")
	return c
}

// upstreams reads the served servers' URLs and headers from the catalog, resolving each
// header's value from its environment variable now.
func (a *app) upstreams(ctx context.Context, st *evidenceStore, names []string) ([]mcpproxy.Upstream, error) {
	if st.catalog == nil {
		return nil, cli.Exit(cli.ExitUsage, errors.New("the proxy needs the catalog (--store catalog or dynamodb:TABLE): an evidence file holds no server URLs it may connect to"))
	}
	all, err := st.catalog.Servers(ctx)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("read the catalog's servers: %v", err))
	}
	var ups []mcpproxy.Upstream
	var errs []error
	for _, s := range all {
		if !slices.Contains(names, s.Name) {
			continue
		}
		h, err := config.ResolveHeaders(ctx, a.env.Getenv, nil, s.Name, s.Headers)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ups = append(ups, mcpproxy.Upstream{Name: s.Name, URL: s.URL, AllowPrivate: s.AllowPrivate, Headers: h})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	return ups, nil
}

// bridge relays this process's stdio to route until the client closes its input.
func (a *app) bridge(ctx context.Context, route string, maxMessage int, log *slog.Logger) error {
	b := &mcpproxy.Bridge{URL: route, In: a.env.Stdin, Out: a.env.Stdout, MaxMessageBytes: maxMessage, Logger: log}
	if err := b.Run(ctx); err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	return nil
}
