package containers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/gatewayconf"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/test/extmcp/standin"
)

// bigTools is how many tools the "big" upstream lists: enough for its index to exceed a
// DynamoDB item's share (32 KB), so on DynamoDB it is read from the blob bucket.
const bigTools = 300

// upstreams serves two MCP servers over Streamable HTTP on loopback: wx (a few tools) and
// big (bigTools tools with long names). It returns each one's URL.
func upstreams(t *testing.T) map[string]string {
	t.Helper()
	mux := http.NewServeMux()
	add := func(name string, tools []string) {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		for _, tool := range tools {
			s.AddTool(&mcp.Tool{Name: tool, Description: "The " + tool + " tool.", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool + " ok"}}}, nil
				})
		}
		mux.Handle("/"+name+"/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	}
	add("wx", []string{"get_alerts", "get_forecast", "now"})
	var big []string
	for i := range bigTools {
		big = append(big, fmt.Sprintf("tool_%03d_%s", i, strings.Repeat("x", 100)))
	}
	add("big", big)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return map[string]string{"wx": srv.URL + "/wx/mcp", "big": srv.URL + "/big/mcp"}
}

// approvals are what the tests approve, per server: the rest of each server's tools stay
// unapproved.
var approvals = map[string][]string{"wx": {"get_forecast", "now"}, "big": {fmt.Sprintf("tool_%03d_%s", 7, strings.Repeat("x", 100))}}

// seed records one crawl of each upstream in cat, listed as the crawler lists (each tool
// object's digest exactly as served), approves the tools in approvals and returns their
// approved digests per server.
func seed(t *testing.T, cat warrant.Catalog, urls map[string]string) map[string]map[string]string {
	t.Helper()
	ctx := t.Context()
	approved := map[string]map[string]string{}
	now := time.Now().UTC()
	for _, server := range slices.Sorted(maps.Keys(urls)) {
		l, err := mcpclient.ListTools(ctx, mcpclient.Server{Name: server, Transport: mcpclient.TransportHTTP, URL: urls[server]},
			mcpclient.Options{Timeout: 30 * time.Second, HTTPClient: &http.Client{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.AddServer(ctx, warrant.Server{Name: server, URL: urls[server], AllowPrivate: true, AddedAt: now, AddedBy: "ops"}, warrant.AuditAppend{}); err != nil {
			t.Fatal(err)
		}
		rec := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: server, Seq: 1, Source: warrant.SourceCrawl, StartedAt: now, FinishedAt: now, By: "crawler"}}
		for _, tool := range l.Tools {
			d, canon, err := warrant.DigestTool(tool.Raw)
			if err != nil {
				t.Fatal(err)
			}
			rec.Crawl.Observations = append(rec.Crawl.Observations, warrant.Observation{Tool: tool.Name, Digest: d})
			rec.Versions = append(rec.Versions, warrant.Version{Server: server, Tool: tool.Name, Digest: d, Canonical: canon, FirstSeenAt: now, FirstSeenBy: "crawler", FirstCrawl: 1})
		}
		sort.Slice(rec.Crawl.Observations, func(i, j int) bool { return rec.Crawl.Observations[i].Tool < rec.Crawl.Observations[j].Tool })
		if err := cat.RecordCrawl(ctx, rec, warrant.AuditAppend{}); err != nil {
			t.Fatal(err)
		}
		for _, v := range rec.Versions {
			if slices.Contains(approvals[server], v.Tool) {
				if err := cat.Decide(ctx, warrant.Decision{Server: server, Tool: v.Tool, Digest: v.Digest, Kind: warrant.DecisionApproved, Actor: "approver", At: now}, warrant.AuditAppend{}); err != nil {
					t.Fatal(err)
				}
				if approved[server] == nil {
					approved[server] = map[string]string{}
				}
				approved[server][v.Tool] = string(v.Digest)
			}
		}
	}
	return approved
}

// startProcessor runs the processor image on the host's network (as beside the gateway in
// one ECS task: they share localhost) with a read-only root, no capabilities and no
// writable directory but those in runArgs, serving wx and big on a free loopback port. It
// returns the address once grpc.health.v1 answers SERVING, and the time from `podman run`
// to then. env entries are passed by name (`--env NAME`), so no value is on a command line.
func (b *built) startProcessor(t *testing.T, env []string, runArgs []string, serveArgs ...string) (string, time.Duration) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	args := []string{"run", "--detach", "--network", "host", "--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges"}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		args = append(args, "--env", name)
	}
	args = append(append(args, runArgs...), processorImage, "serve", "--server", "wx", "--server", "big", "--listen", addr,
		"--refresh", "1s", "--staleness", "30s")
	args = append(args, serveArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := b.p.Command(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman run: %v %s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { b.remove(t, id) })
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, ccancel := context.WithTimeout(t.Context(), time.Second)
		res, err := health.Check(cctx, &healthpb.HealthCheckRequest{Service: extmcp.ServiceName})
		ccancel()
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the processor at %s is not SERVING after 60s (last: %v %v)", addr, res.GetStatus(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	pid := b.pid(t, id)
	if uid, _ := processUser(t, pid); uid != "65532" {
		t.Errorf("the processor runs as uid %s, want 65532", uid)
	}
	if !rootReadOnly(t, pid) {
		t.Error("the processor's root file system is writable")
	}
	return addr, took
}

// throughGateway runs the gateway stand-in in front of the upstreams with the configuration
// emit writes for the processor at addr, and checks what an agent sees through it: each
// server lists exactly its approved tools, an approved tool can be called, an unapproved
// one is denied by the processor naming its state, and verify-gateway finds nothing.
func throughGateway(t *testing.T, addr string, urls map[string]string, approved map[string]map[string]string) {
	t.Helper()
	var routes []gatewayconf.Route
	for _, server := range slices.Sorted(maps.Keys(urls)) {
		routes = append(routes, gatewayconf.Route{Server: server, URL: urls[server], Approved: approvals[server]})
	}
	config, err := gatewayconf.Emit(gatewayconf.Config{Processor: addr, Routes: routes})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(standin.New(t, config))
	t.Cleanup(gw.Close)
	parsed, err := gatewayconf.Parse(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, server := range slices.Sorted(maps.Keys(urls)) {
		url := gw.URL + gatewayconf.PathPrefix(server) + "mcp"
		c := mcp.NewClient(&mcp.Implementation{Name: "container-agent", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, tool := range res.Tools {
			listed = append(listed, tool.Name)
		}
		slices.Sort(listed)
		if want := slices.Sorted(slices.Values(approvals[server])); !slices.Equal(listed, want) {
			t.Errorf("%s through the gateway lists %d tools %.200v, want exactly the approved %v", server, len(listed), listed, want)
		}
		call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: approvals[server][0], Arguments: map[string]any{}})
		if err != nil || call.IsError {
			t.Errorf("%s: call of the approved %s: %v %+v", server, approvals[server][0], err, call)
		}
		unapproved := "get_alerts"
		if server == "big" {
			unapproved = fmt.Sprintf("tool_%03d_%s", 8, strings.Repeat("x", 100))
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: unapproved, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("tool %q is unapproved", unapproved)) {
			t.Errorf("%s: call of the unapproved %s: %v, want the processor's denial", server, unapproved, err)
		}
		cs.Close()
		live, err := gatewayconf.ListGateway(ctx, url, nil, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if f := gatewayconf.Verify(gatewayconf.Expectation{Server: server, Approved: approved[server], Listed: live, Config: parsed}); len(f) != 0 {
			t.Errorf("%s: verify-gateway findings: %+v", server, f)
		}
	}
}

// TestProcessorImageSQLite runs the processor image on a SQLite catalog mounted read-only
// (directory and file owned by the image's uid 65532, mode 0600, no log key: it is never
// written, observations go to a file on a tmpfs), with the gateway stand-in's checks
// through it.
func TestProcessorImageSQLite(t *testing.T) {
	b := images(t)
	img := b.images["toolwarrant"]
	if img.User != "65532:65532" || img.Files["/usr/local/bin/toolwarrant"].SHA256 != b.binaries["toolwarrant"] {
		t.Errorf("image: user %q, binary %+v", img.User, img.Files["/usr/local/bin/toolwarrant"])
	}
	if _, ok := img.Files["/bin/sh"]; ok {
		t.Error("the image has a shell")
	}
	urls := upstreams(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "toolwarrant.db")
	cat, err := sqlitestore.OpenCatalog(t.Context(), sqlitestore.CatalogConfig{Path: path, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	approved := seed(t, cat, urls)
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	chownTree(t, b, dir, 65532)
	addr, took := b.startProcessor(t, nil,
		[]string{"--volume", dir + ":/catalog:ro", "--tmpfs", "/tmp:size=8m,mode=1777"},
		"--catalog", "/catalog/toolwarrant.db", "--observations", "/tmp/observations.jsonl")
	throughGateway(t, addr, urls, approved)
	t.Logf("figures: toolwarrant image %s in the store, %s compressed layers; run to SERVING on a read-only SQLite catalog %s",
		mib(b.imageSize(t, processorImage)), mib(img.LayerBytes), took.Round(time.Millisecond))
}

// TestProcessorImageDynamoDB runs the processor image on the DynamoDB catalog (template.yaml's
// CatalogTable on moto, with IAM enforced) and its blob bucket, as the ECS task does:
// --store dynamodb:TABLE, CATALOG_BLOB_BUCKET, and a session of exactly the task role
// (infra/ecs/processor-task-role-policy.json). big's index lives in the bucket, so SERVING
// (every server's approvals fresh) needs the role's GetItem, Query and GetObject; then the
// gateway stand-in's checks pass through the container.
func TestProcessorImageDynamoDB(t *testing.T) {
	b := images(t)
	cfg := awstest.Config(t)
	table, bucket := awstest.CreateTable(t, cfg, "CatalogTable"), s3test.CreateVersionedBucket(t, cfg)
	writer, err := awsapp.Catalog(t.Context(), cfg, awsapp.CatalogOptions{Table: table, BlobBucket: bucket, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	urls := upstreams(t)
	approved := seed(t, writer, urls)
	objects, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).ListObjectsV2(t.Context(),
		&s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("catalog/")})
	if err != nil || len(objects.Contents) == 0 {
		t.Fatalf("big's index is not in the blob bucket (%v): the test would not exercise CATALOG_BLOB_BUCKET", err)
	}
	role := awstest.RoleWith(t, "ProcessorTaskRole", awstest.PolicyFile(t, "infra/ecs/processor-task-role-policy.json", map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCOUNT_ID": awstest.Account, "CATALOG_TABLE": table, "CATALOG_BLOB_BUCKET": bucket,
		"CONFIG_FILE_SYSTEM_ID": "fs-0", "CONFIG_ACCESS_POINT_ID": "fsap-0"}), nil)
	env := append(role.Env(t), "CATALOG_BLOB_BUCKET="+bucket, "TOOLWARRANT_S3_PATH_STYLE=1")
	addr, took := b.startProcessor(t, env, nil, "--store", "dynamodb:"+table)
	throughGateway(t, addr, urls, approved)
	t.Logf("figures: run to SERVING on the DynamoDB catalog (moto, task role) %s", took.Round(time.Millisecond))
}

// chownTree gives dir and everything in it to uid:uid (the image's user), as root directly,
// rootless inside podman's user namespace.
func chownTree(t *testing.T, b *built, dir string, uid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		b.podman(t, "unshare", "chown", "-R", fmt.Sprintf("%d:%d", uid, uid), dir)
		return
	}
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}
