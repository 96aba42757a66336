package awswarrant

import (
	"context"
	"fmt"
	"github.com/agentgate-dev/agentgate/internal/findings"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/app/awsbase"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/kmssigner"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Options are extra client options (tests install call counters and faults).
type Options struct {
	DynamoDB []func(*dynamodb.Options)
	KMS      []func(*kms.Options)
	S3       []func(*s3.Options)
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Metrics is where the crawl and checkpoint functions write their EMF lines: os.Stdout
	// in Lambda (the function's log group). Nil: no metrics.
	Metrics io.Writer
}

// Warrant is the toolwarrant service composed over DynamoDB, KMS and S3 (the catalog's
// large objects; the checkpoint function's checkpoints), built once at cold start.
type Warrant struct {
	Catalog *dynamostore.Catalog
	Signer  *kmssigner.Signer
	Service *warrant.Service
	// Blobs is the checkpoint bucket; nil unless CHECKPOINT_BUCKET is set.
	Blobs *s3blob.Store
	// Notes is the checkpoint key (CHECKPOINT_KMS_KEY) and Origin the log's origin
	// (CHECKPOINT_ORIGIN); nil and "" unless set.
	Notes  *kmssigner.NoteSigner
	Origin string
	// Tiles is where the checkpoint function publishes the audit tree as c2sp.org/tlog-tiles
	// after each checkpoint note (TOOLWARRANT_TILES_BUCKET); nil unless set (it needs Notes).
	Tiles *TilesTarget
	// Identity is who the service acts as (the crawl role for crawls).
	Identity string
	// AWS is the SDK configuration the clients were built on (for more clients).
	AWS aws.Config
	Now func() time.Time
}

// New builds the catalog (reading its format marker; with its blob store when
// CATALOG_BLOB_BUCKET is set), the KMS log signer (one GetPublicKey) and the service
// acting as identity.
func New(ctx context.Context, awsCfg aws.Config, c config.WarrantAWS, identity string, log *slog.Logger, o Options) (*Warrant, error) {
	sig, err := kmssigner.New(ctx, kmssigner.Config{Client: kms.NewFromConfig(awsCfg, o.KMS...), KeyID: c.LogKey, Logger: log})
	if err != nil {
		return nil, err
	}
	chainer := &audit.Chainer{Signer: sig}
	// Decision records go through the log's sequencer (dynamostore, "Sequenced appends"):
	// queued, then integrated in batches by whichever writer holds the lease.
	cat, err := Catalog(ctx, awsCfg, CatalogOptions{Table: c.CatalogTable, BlobBucket: c.CatalogBlobBucket, S3PathStyle: c.S3PathStyle,
		DynamoDB: o.DynamoDB, S3: o.S3, Logger: log, Sequencer: &dynamostore.SequencerConfig{Log: chainer}})
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	svc, err := warrant.New(warrant.Config{Catalog: cat, Auditor: chainer, Sequencer: cat, Identity: identity, Now: now, FirstSight: findings.FirstSight})
	if err != nil {
		return nil, err
	}
	w := &Warrant{Catalog: cat, Signer: sig, Service: svc, Identity: identity, Now: now, AWS: awsCfg}
	if c.CheckpointBucket != "" {
		opts := append([]func(*s3.Options){func(so *s3.Options) { so.UsePathStyle = c.S3PathStyle }}, o.S3...)
		if w.Blobs, err = s3blob.New(s3blob.Config{Client: s3.NewFromConfig(awsCfg, opts...), Bucket: c.CheckpointBucket}); err != nil {
			return nil, err
		}
	}
	if c.CheckpointKey != "" {
		if w.Notes, err = kmssigner.NewNoteSigner(ctx, kmssigner.Config{Client: kms.NewFromConfig(awsCfg, o.KMS...), KeyID: c.CheckpointKey, Logger: log}); err != nil {
			return nil, err
		}
		w.Origin = c.CheckpointOrigin
		if c.TilesBucket != "" {
			w.Tiles = &TilesTarget{Bucket: c.TilesBucket, Prefix: c.TilesPrefix,
				S3: append([]func(*s3.Options){func(so *s3.Options) { so.UsePathStyle = c.S3PathStyle }}, o.S3...)}
		}
	}
	log.InfoContext(ctx, "toolwarrant on AWS", slog.Any("config", c), slog.Any("log_key", sig), slog.String("identity", identity))
	return w, nil
}

// TilesTarget is the S3 bucket and prefix of the tiled log. It is only where: awsapp
// builds the publisher (internal/tiles/s3tiles) for the checkpoint function, so a
// function that links this package alone (the interceptor) links no tile or checkpoint
// code (test/arch).
type TilesTarget struct {
	Bucket, Prefix string
	// S3 are the client options (path style for emulators; the tests' counters and faults).
	S3 []func(*s3.Options)
}

// AWSConfig loads the SDK configuration with the attempts of c.
func AWSConfig(ctx context.Context, c config.WarrantAWS) (aws.Config, error) {
	cfg, err := awsbase.AWSConfig(ctx, config.AWS{MaxAttempts: c.MaxAttempts})
	if err != nil {
		return aws.Config{}, fmt.Errorf("toolwarrant: %w", err)
	}
	return cfg, nil
}

// CatalogOptions say where the DynamoDB catalog is.
type CatalogOptions struct {
	// Table is the catalog table (CATALOG_TABLE). Required.
	Table string
	// BlobBucket is the bucket of the catalog's large objects (CATALOG_BLOB_BUCKET);
	// "" for none.
	BlobBucket string
	// S3PathStyle addresses BlobBucket path-style (emulators).
	S3PathStyle bool
	// DynamoDB and S3 are extra client options (tests install counters and faults).
	DynamoDB []func(*dynamodb.Options)
	S3       []func(*s3.Options)
	// Logger receives the catalog's warnings. Default: discard.
	Logger *slog.Logger
	// Sequencer turns on the catalog's sequenced appends (it needs the log key). Nil:
	// none, as for the roles that only read.
	Sequencer *dynamostore.SequencerConfig
}

// Catalog builds the DynamoDB catalog alone (no KMS key), with its blob store when
// o.BlobBucket is set: what the ExtMcp container needs to load and refresh the evidence
// of the servers it serves, and what New builds on. It reads the table's format
// marker and writes nothing: a role that may only read the table (the checkpoint
// function, the ExtMcp container) opens it.
func Catalog(ctx context.Context, awsCfg aws.Config, o CatalogOptions) (*dynamostore.Catalog, error) {
	cc := dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(awsCfg, o.DynamoDB...), Table: o.Table, Logger: o.Logger, Sequencer: o.Sequencer}
	if o.BlobBucket != "" {
		opts := append([]func(*s3.Options){func(so *s3.Options) { so.UsePathStyle = o.S3PathStyle }}, o.S3...)
		// The store reads as much as the catalog writes: definitions up to the crawl's
		// response cap, with room to spare (dynamostore.DefaultMaxBlobBytes).
		b, err := s3blob.New(s3blob.Config{Client: s3.NewFromConfig(awsCfg, opts...), Bucket: o.BlobBucket, MaxObjectBytes: dynamostore.DefaultMaxBlobBytes})
		if err != nil {
			return nil, err
		}
		cc.Blobs, cc.MaxBlobBytes = b, dynamostore.DefaultMaxBlobBytes
	}
	return dynamostore.NewCatalog(ctx, cc)
}

// ColdStart is the cold start of a toolwarrant Lambda main: the SDK configuration from
// the environment (unless awsCfg is given, as the functions' tests do), then New.
func ColdStart(ctx context.Context, c config.WarrantAWS, awsCfg *aws.Config, identity string, log *slog.Logger, o Options) (*Warrant, error) {
	if awsCfg == nil {
		cfg, err := AWSConfig(ctx, c)
		if err != nil {
			return nil, err
		}
		awsCfg = &cfg
	}
	return New(ctx, *awsCfg, c, identity, log, o)
}
