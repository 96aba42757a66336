package awsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/emf"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/tiles"
	"github.com/agentgate-dev/agentgate/internal/tiles/s3tiles"
)

// CheckpointHandler is the checkpoint Lambda's handler: on each scheduled event it runs
// checkpoint.Writer once (verify the entries since the last checkpoint, sign the head
// with KMS, put checkpoints/<seq>.json if absent; with the checkpoint key, also the C2SP
// note of the audit tree, checkpoints/<size>.note, signed by the KMS Ed25519 key). An error is returned — and the Lambda
// invocation fails, so the Errors alarm fires, Lambda retries and the event finally lands in
// the OnFailure queue — when the log does not verify against the last checkpoint or KMS/S3
// cannot be used; nothing is written then. Every run ends with one EMF line that tells the
// two apart (MetricCheckpointMismatch: possible tampering, its own alarm;
// MetricCheckpointUnavailable: an outage), so the page says which it is.
func CheckpointHandler(w *Warrant, log *slog.Logger, m Metrics) (func(context.Context, any) (checkpoint.Result, error), error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if w.Blobs == nil {
		return nil, errors.New("checkpoint: CHECKPOINT_BUCKET is not set")
	}
	cw := &checkpoint.Writer{Log: w.Catalog, Signer: w.Signer, Blobs: w.Blobs, Now: w.Now, Logger: log}
	if w.Notes != nil {
		cw.Notes, cw.Origin = w.Notes, w.Origin
	}
	if w.Tiles != nil && w.Notes != nil {
		// TOOLWARRANT_TILES_BUCKET: the tree as c2sp.org/tlog-tiles after each note.
		tw, err := TilesWriter(w)
		if err != nil {
			return nil, err
		}
		cw.Tiles = tw
	}
	return func(ctx context.Context, _ any) (checkpoint.Result, error) {
		res, err := cw.Run(ctx)
		mismatch, unavailable := checkpointOutcome(err)
		m.emit(ctx, log, []emf.Metric{
			{Name: MetricCheckpointMismatch, Unit: emf.Count, Value: flag(mismatch)},
			{Name: MetricCheckpointUnavailable, Unit: emf.Count, Value: flag(unavailable)},
		}, map[string]any{"head": res.Head.Seq, "previous": res.Previous, "written": res.Written})
		if err != nil {
			log.ErrorContext(ctx, "checkpoint failed", slog.String("error", err.Error()), slog.Int64("head", res.Head.Seq), slog.Bool("mismatch", mismatch))
			return res, err
		}
		return res, nil
	}, nil
}

// CheckpointSource opens s3://BUCKET (checkpoints under checkpoints/) for
// checkpoint.Verify, with cfg's credentials (the operator's: `toolwarrant audit verify
// --checkpoints s3://BUCKET`). pathStyle addresses emulators.
func CheckpointSource(ctx context.Context, cfg aws.Config, rawURL string, pathStyle bool) (checkpoint.Source, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "s3" || u.Host == "" || strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "checkpoints" {
		return nil, fmt.Errorf("--checkpoints %q: want s3://BUCKET (the stack's CheckpointBucketName output) or a directory", rawURL)
	}
	st, err := s3blob.New(s3blob.Config{Client: s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle }), Bucket: u.Host})
	if err != nil {
		return nil, err
	}
	return checkpoint.Store{Blobs: st, Name: "s3://" + u.Host + "/" + checkpoint.Prefix}, nil
}

// TilesWriter is the publisher of w's tiled log (w.Tiles, TOOLWARRANT_TILES_BUCKET and
// _PREFIX): its checkpoints are the notes of w's checkpoint key (w.Notes), so they verify
// under the log's verifier key.
func TilesWriter(w *Warrant) (*tiles.Writer, error) {
	if w.Tiles == nil || w.Notes == nil {
		return nil, errors.New("tiles: TOOLWARRANT_TILES_BUCKET and CHECKPOINT_KMS_KEY are required")
	}
	vkey, err := checkpoint.VerifierKey(w.Origin, w.Notes.Public())
	if err != nil {
		return nil, fmt.Errorf("tiles: %w", err)
	}
	st, err := s3tiles.New(s3.NewFromConfig(w.AWS, w.Tiles.S3...), w.Tiles.Bucket, w.Tiles.Prefix)
	if err != nil {
		return nil, fmt.Errorf("tiles: %w", err)
	}
	return &tiles.Writer{Store: st, VerifierKey: vkey}, nil
}
