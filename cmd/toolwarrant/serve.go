package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsbase"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// storeHelp documents the --store flag of serve, emit and verify-gateway: where
// approvals are read. "" or "catalog" is the SQLite catalog (--catalog);
// "dynamodb:TABLE" the DynamoDB catalog; "evidence:PATH" a JSON evidence file.
const storeHelp = "where approvals are read: `catalog` (the --catalog file, the default), dynamodb:TABLE (the catalog table on AWS) or evidence:PATH (a JSON evidence file, docs/extmcp.md)"

// blobBucketHelp documents --blob-bucket, the S3 bucket of the DynamoDB catalog's large
// objects.
const blobBucketHelp = "with --store dynamodb:TABLE, the S3 `BUCKET` holding the catalog's large objects (env CATALOG_BLOB_BUCKET; the stack's CatalogBlobBucketName)"

// evidenceStore is what serve, emit and verify-gateway read: the approved set and the
// servers' URLs, from the catalog or from an evidence file.
type evidenceStore struct {
	source enforce.Source
	// recorder receives the processor's observations and decisions the decision records
	// (nil: none is available).
	recorder  enforce.Recorder
	decisions enforce.DecisionRecorder
	// servers returns the servers with their URLs and tools.
	servers func(ctx context.Context) (*enforce.EvidenceDoc, error)
	// catalog is the catalog behind the store (nil for an evidence file).
	catalog warrant.Catalog
	close   func()
}

// openStore opens --store. writable asks for a store that can record observations: for the
// SQLite catalog that means opening it for writing, with the log key; otherwise it is opened
// read-only and needs neither write access nor the key.
func (a *app) openStore(ctx context.Context, cmd *cobra.Command, store string, writable bool) (*evidenceStore, error) {
	if path, ok := strings.CutPrefix(store, "evidence:"); ok {
		if path == "" {
			return nil, cli.Usage(cmd, "--store evidence:PATH needs a path")
		}
		f := &enforce.EvidenceFile{Path: path}
		return &evidenceStore{source: f, close: func() {}, servers: func(ctx context.Context) (*enforce.EvidenceDoc, error) {
			data, err := readFileLimited(path, 64<<20)
			if err != nil {
				return nil, err
			}
			return enforce.ParseEvidence(data)
		}}, nil
	}
	if table, ok := strings.CutPrefix(store, "dynamodb:"); ok {
		if table == "" {
			return nil, cli.Usage(cmd, "--store dynamodb:TABLE needs a table name")
		}
		cfg, err := config.LoadToolwarrant(a.env.Getenv)
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, err)
		}
		if cmd.Flags().Changed("blob-bucket") {
			cfg.CatalogBlobBucket = a.flagBlobBucket
		}
		// The SDK's default chain: AWS_REGION, the task role, AWS_ENDPOINT_URL for tests.
		awsCfg, err := awsbase.AWSConfig(ctx, config.AWS{MaxAttempts: 3})
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, err)
		}
		cat, err := awsapp.Catalog(ctx, awsCfg, awsapp.CatalogOptions{Table: table, BlobBucket: cfg.CatalogBlobBucket, S3PathStyle: cfg.S3PathStyle})
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("catalog table %s: %v", table, err))
		}
		return catalogStore(cat, func() {}), nil
	}
	if store != "" && store != "catalog" {
		return nil, cli.Usage(cmd, "--store %q: use catalog, evidence:PATH or dynamodb:TABLE", store)
	}
	// The processor reads approvals from the catalog and records what it observes through
	// the warrant service (ObserveGateway: a gateway crawl record and its audit entry,
	// signed with the log key like a crawl's), so the catalog is opened for writing, unless
	// the observations go elsewhere (serve --observations: a read-only mount works).
	cat, svc, _, err := a.open(ctx, cmd, !writable)
	if err != nil {
		return nil, err
	}
	st := catalogStore(cat, func() { cat.Close() })
	if writable {
		st.recorder = enforce.CatalogRecorder(svc)
		st.decisions = enforce.CatalogDecisions(svc)
	}
	return st, nil
}

var (
	_ enforce.GatewayObserver = (*warrant.Service)(nil)
	_ enforce.DecisionLog     = (*warrant.Service)(nil)
)

// catalogStore reads approvals, crawl results and server URLs from a catalog port.
func catalogStore(cat warrant.Catalog, closeFn func()) *evidenceStore {
	st := &evidenceStore{source: enforce.CatalogFeedSource{CatalogSource: enforce.CatalogSource{Catalog: cat}}, close: closeFn, catalog: cat}
	st.servers = func(ctx context.Context) (*enforce.EvidenceDoc, error) {
		servers, err := cat.Servers(ctx)
		if err != nil {
			return nil, err
		}
		tools, err := cat.Tools(ctx)
		if err != nil {
			return nil, err
		}
		doc := &enforce.EvidenceDoc{}
		for _, s := range servers {
			es := enforce.EvidenceServer{Name: s.Name, URL: s.URL}
			for _, t := range tools {
				if t.Server != s.Name {
					continue
				}
				et := enforce.EvidenceTool{Name: t.Tool, Approved: string(t.Approved)}
				if t.State() != warrant.StateRemoved {
					et.Crawled = string(t.Current)
				}
				es.Tools = append(es.Tools, et)
			}
			doc.Servers = append(doc.Servers, es)
		}
		return doc, nil
	}
	return st
}

func newServeCmd(a *app) *cobra.Command {
	var (
		ef                   enforceFlags
		listen, metrics      string
		maxMessage, maxReply int
		probe                bool
	)
	c := &cobra.Command{
		Use:   "serve [--server NAME...]",
		Short: "Run the fail-closed ExtMcp processor agentgateway calls on every tools/list and tools/call",
		Long: `Serve agentgateway's ExtMcp (mcpGuardrails) gRPC protocol on --listen (plaintext HTTP/2,
meant for localhost beside the gateway) for the upstream servers named by --server, or,
without --server, for every server in the catalog (or evidence file) when it starts: the
servers 'toolwarrant emit' routes to this processor when it is given the same --server
flags (or none). One process dispatches on the gateway's service_names. A server that is
not in the catalog is refused at start; one added later is served after a restart (and
denied until then, like any target this processor does not serve).

On every tools/list result it removes each tool whose live digest (RFC 8785 of the tool
object exactly as received) is not the approved digest, keeping every other byte of the
result; a tool it has never seen is dropped. Every tool it drops (new, drifted,
unapproved, refused) is recorded off the request path, in batches, as a gateway record of
the catalog with its signed audit entry (needs the log key), so 'toolwarrant list' shows
DRIFT and PENDING without a crawl; --observations FILE writes JSON lines instead, and the
catalog is then only read (a read-only mount, no log key: the container). On every
tools/call it passes only if the last listing it saw and the catalog's last observation
of the tool (a crawl's, or a gateway record's) both show the approved digest, and
otherwise denies with PERMISSION_DENIED naming that tool and its state. Anything it cannot
decide is denied: approvals older than --staleness, malformed JSON, a method it does not
decide, an oversized message or reply, a panic, a deadline. The rule is the one
'toolwarrant proxy' and the AgentCore interceptor apply (internal/enforce).

Every decision is counted per server, tool, method, live digest, outcome (allowed,
filtered, denied) and approval set, and written to the audit log as a signed
decisions_recorded entry every --record-every and on SIGTERM ('toolwarrant decisions'
lists them). --shadow decides and records as usual but lets everything through: what
would have been stopped is recorded as would-deny, for a rollout's first step.

Approvals are held in memory and re-read every --refresh: a re-approval, rejection or
rollback takes effect within one refresh interval. grpc.health.v1 reports SERVING while
every server's approvals are fresh. Prometheus metrics are served on --metrics at
/metrics. SIGTERM drains in-flight calls, then writes the queued observations and the
decision records.

--probe checks the health of a processor already running at --listen and exits (for
container health checks, where distroless images have no shell).` +
			"\n\nExit codes:\n  0  shut down cleanly on a signal (or, with --probe, SERVING)\n  1  with --probe: NOT_SERVING\n  2  could not start: usage error, unreadable catalog, address in use (or, with --probe, unreachable)",
		Example: "  toolwarrant serve --listen 127.0.0.1:9001      # every catalog server, as 'emit' routes them\n" +
			"  toolwarrant serve --server weather --listen 127.0.0.1:9001\n" +
			"  toolwarrant serve --server weather --server github --refresh 2s --staleness 20s --metrics 127.0.0.1:9464\n" +
			"  toolwarrant serve --probe --listen 127.0.0.1:9001",
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if probe {
				return probeHealth(ctx, a.env.Stdout, listen)
			}
			cfg := enforce.Config{Point: enforce.PointExtMcp, MaxMessageBytes: maxMessage, MaxReplyBytes: maxReply}
			st, log, err := ef.open(ctx, cmd, a, &cfg)
			if err != nil {
				return err
			}
			defer st.close()
			p, err := enforce.New(cfg)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("listen on %s: %v", listen, err))
			}
			if metrics != "" {
				ml, err := (&net.ListenConfig{}).Listen(ctx, "tcp", metrics)
				if err != nil {
					lis.Close()
					return cli.Exit(cli.ExitUsage, fmt.Errorf("metrics: listen on %s: %v", metrics, err))
				}
				mux := http.NewServeMux()
				mux.Handle("/metrics", p.Metrics().Handler())
				ms := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = ms.Serve(ml) }()
				defer ms.Close()
				log.InfoContext(ctx, "extmcp: metrics", slog.String("addr", ml.Addr().String()))
			}
			fmt.Fprintf(a.env.Stderr, "serving ExtMcp for %s on %s%s\n", strings.Join(cfg.Servers, ", "), lis.Addr(), shadowNote(cfg.Shadow))
			if err := extmcp.Serve(ctx, lis, p, extmcp.ServeOptions{}); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			return nil
		},
	}
	ef.register(c, a)
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9001", "gRPC listen `ADDRESS` (h2c)")
	f.StringVar(&metrics, "metrics", "", "serve Prometheus metrics at http://`ADDRESS`/metrics (off when empty)")
	f.IntVar(&maxMessage, "max-message-bytes", enforce.DefaultMaxMessageBytes, "deny messages larger than this")
	f.IntVar(&maxReply, "max-reply-bytes", enforce.DefaultMaxReplyBytes, "deny instead of replying with more than this (gateways before v1.4.1 refuse replies over 4 MiB)")
	f.BoolVar(&probe, "probe", false, "check the health of the processor at --listen and exit")
	return c
}

// shadowNote is what the start line adds in shadow mode.
func shadowNote(shadow bool) string {
	if shadow {
		return " (shadow mode: nothing is filtered or denied; what would be is recorded as would-deny)"
	}
	return ""
}

// readStore reads the servers and their evidence from --store (opened as by openStore, able
// to record observations), for emit and verify-gateway.
func (a *app) readStore(ctx context.Context, cmd *cobra.Command, store string) (*enforce.EvidenceDoc, error) {
	st, err := a.openStore(ctx, cmd, store, true)
	if err != nil {
		return nil, err
	}
	defer st.close()
	doc, err := st.servers(ctx)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("read the catalog: %v", err))
	}
	return doc, nil
}

// servedServers checks the --server names against the store's servers, or, when none is
// named, returns them all: what emit routes to one processor by default.
func servedServers(ctx context.Context, cmd *cobra.Command, st *evidenceStore, named []string) ([]string, error) {
	doc, err := st.servers(ctx)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read the servers to serve: %v", err))
	}
	var known []string
	for _, s := range doc.Servers {
		known = append(known, s.Name)
	}
	if len(named) == 0 {
		if len(known) == 0 {
			return nil, cli.Exit(cli.ExitUsage, errors.New("the catalog has no server to serve; add one with 'toolwarrant server add'"))
		}
		return known, nil
	}
	for _, n := range named {
		if !slices.Contains(known, n) {
			list := "none"
			if len(known) > 0 {
				list = strings.Join(known, ", ")
			}
			return nil, cli.Usage(cmd, "--server %q is not in the catalog (servers: %s): serving it would deny every call", n, list)
		}
	}
	return named, nil
}

// probeHealth asks grpc.health.v1 at addr for the ExtMcp service's status.
func probeHealth(ctx context.Context, w io.Writer, addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("probe %s: %v", addr, err))
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: extmcp.ServiceName})
	if err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("probe %s: %v", addr, err))
	}
	fmt.Fprintln(w, res.GetStatus().String())
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return cli.Found()
	}
	return nil
}

// readFileLimited reads a file of at most max bytes.
func readFileLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}
