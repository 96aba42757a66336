package awswarrant_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/mod/sumdb/note"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/app/awswarrant"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/tiles/s3tiles"
	"github.com/agentgate-dev/agentgate/internal/tiles/tilestest"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// TestCheckpointFunctionPublishesTiles: with TOOLWARRANT_TILES_BUCKET set (template.yaml's
// TilesBucket, prefix tlog/), the checkpoint function (as its role, as the template grants
// it) publishes
// each run's KMS-signed note with the tiles and entry bundles the log gained. A client
// with only HTTP GETs and golang.org/x/mod — the verifier key made from KMS's public key
// alone — opens the checkpoint, rebuilds its root from the tiles and proves the approval.
func TestCheckpointFunctionPublishesTiles(t *testing.T) {
	ctx := t.Context()
	d := awsapptest.Deploy(t)
	d.Seed(t, "weather", []string{awsapptest.ForecastTool, awsapptest.AlertsTool}, "get_forecast")
	admin := awstest.Config(t)
	// TilesBucket, and CheckpointRole exactly as template.yaml grants it: without its
	// PublishTiles or ListTiles statement the run fails with AccessDenied.
	bucket := d.TilesBucket
	role := d.Roles["CheckpointRole"]

	env := d.FunctionEnv(t)
	if env["TOOLWARRANT_TILES_BUCKET"] != bucket || env["TOOLWARRANT_TILES_PREFIX"] != "tlog/" {
		t.Fatalf("the checkpoint function's environment: %v", env)
	}
	c, err := config.LoadWarrantAWS(func(k string) string { return env[k] }, config.WarrantAWSNeeds{Bucket: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := awswarrant.New(ctx, role.Config(t), c, "checkpoint", slog.New(slog.DiscardHandler), awswarrant.Options{KMS: []func(*kms.Options){kmstest.Options(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Tiles == nil || w.Tiles.Bucket != bucket {
		t.Fatalf("Warrant.Tiles = %+v", w.Tiles)
	}
	run, err := awsapp.CheckpointHandler(w, nil, awsapp.Metrics{})
	if err != nil {
		t.Fatal(err)
	}

	pk, err := kms.NewFromConfig(kmstest.Config(t), kmstest.Options(t)).GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(d.CheckpointKey)})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(pk.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := note.NewEd25519VerifierKey(d.Origin, pub.(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	store, _ := s3tiles.New(s3test.Client(admin), bucket, "tlog/")
	ps := s3.NewPresignClient(s3test.Client(admin))
	client := &tilestest.Client{URL: func(name string) (string, error) {
		r, err := ps.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(store.Key(name))}, s3.WithPresignExpires(10*time.Minute))
		if err != nil {
			return "", err
		}
		return r.URL, nil
	}}

	var previous int64
	for round := range 2 {
		if round == 1 {
			d.Seed(t, "radar", []string{awsapptest.RadarApproved}, "get_radar")
		}
		res, err := run(ctx, nil)
		if err != nil || res.Tiles == nil || !res.Tiles.Checkpoint || res.Tiles.Size != res.Head.Seq || res.Tiles.Previous != previous {
			t.Fatalf("round %d: %+v tiles %+v, %v", round, res, res.Tiles, err)
		}
		previous = res.Head.Seq
		l := tilestest.Open(t, client, vkey)
		if l.Size != res.Head.Seq || l.Origin != d.Origin {
			t.Fatalf("round %d: served checkpoint of %s size %d, want %d", round, l.Origin, l.Size, res.Head.Seq)
		}
		noteBytes, err := w.Blobs.Get(ctx, res.Note)
		if err != nil || string(noteBytes) != string(l.Note) {
			t.Errorf("round %d: the served checkpoint is not %s (%v)", round, res.Note, err)
		}
		entries := l.Entries(t)
		i := tilestest.Find(entries, `"type":"approved"`)
		if i < 0 {
			t.Fatalf("round %d: no approval among %d entries", round, len(entries))
		}
		l.Prove(t, i, entries[i])
		if cc := client.Header("checkpoint").Get("Cache-Control"); cc != s3tiles.CacheCheckpoint {
			t.Errorf("checkpoint Cache-Control %q", cc)
		}
	}
	// An unchanged log: the run publishes nothing.
	if res, err := run(ctx, nil); err != nil || res.Tiles == nil || res.Tiles.Checkpoint || res.Tiles.Tiles+res.Tiles.Bundles != 0 {
		t.Errorf("unchanged log: %+v, %v", res.Tiles, err)
	}
}
