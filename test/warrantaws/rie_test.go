package warrantaws_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/rietest"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// invoke posts an event and decodes the function's result into out, retrying while the
// emulator starts (bounded).
func invoke(t *testing.T, emu *rietest.Emulator, event any, out any) {
	t.Helper()
	body, _ := json.Marshal(event)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	raw, err := emu.FirstInvoke(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("invoke: result %s: %v", raw, err)
	}
}

// TestEndToEndUnderRIE runs the four built bootstraps under aws-lambda-rie against moto
// and KMS: the dispatcher queues the fixture server, the crawl function crawls it from the
// queue's message (handed over as Lambda's event source does, as the crawl role), approve
// through the approvals API with an IAM principal, checkpoint, then verify the log offline
// against the KMS public key and the checkpoint in S3.
func TestEndToEndUnderRIE(t *testing.T) {
	bin := rietest.Find(t)
	s := newStack(t)
	boot := map[string]string{}
	for _, fn := range []string{"crawldispatch", "crawl", "approvals", "checkpoint"} {
		boot[fn] = rietest.Build(t, fn)
	}
	servers, _ := json.Marshal([]map[string]any{{"name": "weather", "url": s.mcpURL, "allowPrivate": true}})
	// Each function runs as its template role: the credentials of its assumed session, and
	// the environment template.yaml gives it (the catalog bucket for crawl and approvals).
	env := func(role string) []string {
		e := append(append(s.dep.Roles[role].Env(t), kmstest.Env(t)...),
			"CATALOG_TABLE="+s.c.CatalogTable, "AUDIT_KMS_KEY="+s.c.LogKey, "CRAWL_ROLE_ARN="+crawlRole, "CHECKPOINT_BUCKET="+s.c.CheckpointBucket,
			"CHECKPOINT_S3_PATH_STYLE=1", "TOOLWARRANT_SERVERS="+string(servers), "CRAWL_DEADLINE_MARGIN=2s")
		if role != "CheckpointRole" {
			e = append(e, "CATALOG_BLOB_BUCKET="+s.c.CatalogBlobBucket)
		}
		return e
	}
	dispatchFn := rietest.Start(t, bin, boot["crawldispatch"], append(s.dep.Roles["CrawlDispatchRole"].Env(t),
		"CATALOG_TABLE="+s.c.CatalogTable, "CRAWL_QUEUE_URL="+s.dep.CrawlQueue, "TOOLWARRANT_SERVERS="+string(servers)))
	crawlFn := rietest.Start(t, bin, boot["crawl"], env("CrawlRole"))
	apiFn := rietest.Start(t, bin, boot["approvals"], env("ApprovalsRole"))
	cpFn := rietest.Start(t, bin, boot["checkpoint"], env("CheckpointRole"))

	var dres awsapp.DispatchResult
	invoke(t, dispatchFn, json.RawMessage(testenv.Event(t, "crawl-scheduled.json")), &dres)
	if dres.Servers != 1 || dres.Messages != 1 {
		t.Fatalf("dispatch under RIE: %+v", dres)
	}
	qctx, qcancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer qcancel()
	calls, err := awstest.SQSEventSource{Config: s.dep.Config(t, "CrawlRole"), QueueURL: s.dep.CrawlQueue, BatchSize: 5, Concurrency: 1, Timeout: time.Minute,
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			body, _ := json.Marshal(ev)
			raw, err := crawlFn.FirstInvoke(ctx, body)
			var resp events.SQSEventResponse
			if err == nil {
				err = json.Unmarshal(raw, &resp)
			}
			return resp, err
		}}.Run(qctx)
	if err != nil || len(calls) != 1 || calls[0].Err != nil || calls[0].Failed != 0 {
		t.Fatalf("crawl from the queue under RIE: %+v, %v", calls, err)
	}
	cat0, err := awsapp.Catalog(t.Context(), s.cfg, awsapp.CatalogOptions{Table: s.c.CatalogTable})
	if err != nil {
		t.Fatal(err)
	}
	if srv, err := cat0.Server(t.Context(), "weather"); err != nil || srv.LastCrawl != 1 {
		t.Fatalf("after the queued crawl: %+v, %v", srv, err)
	}
	var resp events.APIGatewayV2HTTPResponse
	invoke(t, apiFn, apiEvent(t, "approvals-proposals.json", alice, "", "", nil), &resp)
	var props map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &props); err != nil || resp.StatusCode != 200 {
		t.Fatalf("proposals: %d %s", resp.StatusCode, resp.Body)
	}
	head := headOf(props)
	digest := ""
	for _, p := range props["proposals"].([]any) {
		if row := p.(map[string]any); row["tool"] == "get_forecast" {
			digest = row["current"].(string)
		}
	}
	invoke(t, apiFn, apiEvent(t, "approvals-decide.json", alice, "weather", "get_forecast",
		map[string]any{"decision": "approved", "digest": digest, "auditHead": head, "note": "rie"}), &resp)
	if resp.StatusCode != 201 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	var cp checkpoint.Result
	invoke(t, cpFn, json.RawMessage(testenv.Event(t, "checkpoint-scheduled.json")), &cp)
	if !cp.Written || cp.Head.Seq != head.Seq+1 {
		t.Fatalf("checkpoint under RIE: %+v (approval at %d)", cp, head.Seq+1)
	}

	// Offline: the public key (one GetPublicKey), the records, the checkpoints.
	ctx := t.Context()
	sig, err := kmssigner.New(ctx, kmssigner.Config{Client: kms.NewFromConfig(s.cfg, kmstest.Options(t)), KeyID: s.c.LogKey})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(s.cfg), Table: s.c.CatalogTable})
	if err != nil {
		t.Fatal(err)
	}
	blobs, _ := s3blob.New(s3blob.Config{Client: s3test.Client(s.cfg), Bucket: s.c.CheckpointBucket})
	rep, n, err := checkpoint.Verify(ctx, records(ctx, cat), checkpoint.Store{Blobs: blobs, Name: "s3://" + s.c.CheckpointBucket},
		audit.Options{Keys: checkpoint.Keys(sig.KeyID(), sig.Public()), Check: iamattest.Checker(nil, crawlRole)})
	if err != nil || !rep.OK() || n != 1 || rep.Head != cp.Head {
		t.Fatalf("audit verify --checkpoints: %+v, %d checkpoints, %v", rep, n, err)
	}
	t.Logf("verified %d entries against checkpoint %d", rep.Entries, cp.Head.Seq)

}
