package s3tiles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/tiles"
	"github.com/agentgate-dev/agentgate/internal/tiles/s3tiles"
	"github.com/agentgate-dev/agentgate/internal/tiles/storetest"
	"github.com/agentgate-dev/agentgate/internal/tiles/tilestest"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

func TestConformance(t *testing.T) {
	cfg := awstest.Config(t)
	c := s3test.Client(cfg)
	bucket := s3test.CreateVersionedBucket(t, cfg)
	n := 0
	storetest.Run(t, func(t *testing.T) tiles.Store {
		n++
		s, err := s3tiles.New(c, bucket, fmt.Sprintf("log%d/", n))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Presigned returns a tilestest client that GETs the log's objects over plain HTTP with
// presigned URLs: the requests a reader of a public bucket (or of CloudFront) makes, minus
// the credentials moto requires.
func presigned(t *testing.T, c *s3.Client, st *s3tiles.Store) *tilestest.Client {
	ps := s3.NewPresignClient(c)
	return &tilestest.Client{URL: func(name string) (string, error) {
		r, err := ps.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(st.Bucket()), Key: aws.String(st.Key(name))},
			s3.WithPresignExpires(10*time.Minute))
		if err != nil {
			return "", err
		}
		return r.URL, nil
	}}
}

type memLog struct{ recs []warrant.AuditRecord }

func (l *memLog) AuditHead(context.Context) (warrant.AuditHead, error) {
	if len(l.recs) == 0 {
		return warrant.Genesis(), nil
	}
	r := l.recs[len(l.recs)-1]
	return warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}, nil
}

func (l *memLog) AuditRecords(_ context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	var out []warrant.AuditRecord
	for _, r := range l.recs {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

// TestPublishOnS3: the log published to an Object Lock bucket (the checkpoint bucket's
// shape) at 300 entries and grown to 600, read back over HTTP by the independent client:
// the checkpoint verifies with sumdb/note, the tiles give its root, an approval is proved;
// full tiles are immutable for caches, partial ones and the checkpoint short-lived.
func TestPublishOnS3(t *testing.T) {
	ctx := t.Context()
	cfg := awstest.Config(t)
	c := s3test.Client(cfg)
	st, err := s3tiles.New(c, s3test.CreateBucket(t, cfg), "/tlog/")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logKey, _ := keysigner.Create(filepath.Join(dir, "log.key"), keysigner.ECDSAP256)
	cpKey, _ := keysigner.Create(filepath.Join(dir, "cp.key"), keysigner.Ed25519)
	const origin = "example.com/s3tiles"
	vkey, _ := checkpoint.VerifierKey(origin, cpKey.Public())
	log := &memLog{}
	tree := &audit.Tree{}
	grow := func(n int) []byte {
		head, _ := log.AuditHead(ctx)
		var evs []warrant.Event
		for i := range n {
			typ := "crawl_observed"
			if (len(log.recs)+i)%7 == 3 {
				typ = "approved"
			}
			evs = append(evs, warrant.Event{Type: typ, Actor: "alice@example.com", At: time.Unix(int64(1_800_000_000+len(log.recs)+i), 0),
				Body: json.RawMessage(fmt.Sprintf(`{"server":"weather","i":%d}`, len(log.recs)+i))})
		}
		recs, err := (&audit.Chainer{Signer: logKey}).Chain(ctx, head, evs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			_ = tree.Append(r.Body)
		}
		log.recs = append(log.recs, recs...)
		root, _ := tree.Root(tree.Size())
		b, err := checkpoint.SignNote(ctx, cpKey, origin, tree.Size(), root)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	w := &tiles.Writer{Store: st, VerifierKey: vkey}
	client := presigned(t, c, st)
	for _, size := range []int{300, 600} {
		res, err := w.PublishTiles(ctx, log, grow(size-len(log.recs)))
		if err != nil || !res.Checkpoint || res.Size != int64(size) {
			t.Fatalf("publish %d: %+v, %v", size, res, err)
		}
		l := tilestest.Open(t, client, vkey)
		if l.Size != int64(size) || l.Origin != origin {
			t.Fatalf("served checkpoint %s %d", l.Origin, l.Size)
		}
		entries := l.Entries(t)
		i := tilestest.Find(entries, `"type":"approved"`)
		if i < 0 || string(entries[i]) != string(log.recs[i].Body) {
			t.Fatalf("approval %d not found in the bundles", i)
		}
		l.Prove(t, i, entries[i])
	}
	for name, want := range map[string][2]string{
		"checkpoint":            {s3tiles.TypeCheckpoint, s3tiles.CacheCheckpoint},
		"tile/0/000":            {s3tiles.TypeTile, s3tiles.CacheFull},
		"tile/0/002.p/88":       {s3tiles.TypeTile, s3tiles.CachePartial},
		"tile/1/000.p/2":        {s3tiles.TypeTile, s3tiles.CachePartial},
		"tile/entries/001":      {s3tiles.TypeTile, s3tiles.CacheFull},
		"tile/entries/002.p/88": {s3tiles.TypeTile, s3tiles.CachePartial},
	} {
		h := client.Header(name)
		if h == nil {
			t.Errorf("%s was never fetched", name)
			continue
		}
		if got := [2]string{h.Get("Content-Type"), h.Get("Cache-Control")}; got != want {
			t.Errorf("%s: Content-Type, Cache-Control = %q, want %q", name, got, want)
		}
	}
	// The partial tiles of 300 are still served for that checkpoint's readers.
	if _, err := client.Fetch("tile/0/001.p/44"); err != nil {
		t.Errorf("the partial tile of size 300: %v", err)
	}
	if !strings.HasPrefix(st.Key("tile/0/000"), "tlog/tile/") {
		t.Errorf("key %q", st.Key("tile/0/000"))
	}
}
