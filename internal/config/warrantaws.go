package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// WarrantAWS is the configuration of the toolwarrant Lambdas (crawl, approvals,
// checkpoint) beyond Toolwarrant's crawl bounds. Region, credentials and endpoints are the
// AWS SDK's own (AWS_REGION, AWS_ENDPOINT_URL[_DYNAMODB|_KMS|_S3]); template.yaml sets the
// rest.
type WarrantAWS struct {
	// CatalogTable is CATALOG_TABLE, template.yaml's CatalogTable. Required.
	CatalogTable string
	// LogKey is AUDIT_KMS_KEY, the KMS key (ARN, ID or alias) that signs every audit entry
	// and checkpoint. Required.
	LogKey string
	// CheckpointBucket is CHECKPOINT_BUCKET, template.yaml's CheckpointBucket. Required by
	// the checkpoint function only. Default "".
	CheckpointBucket string
	// CatalogBlobBucket is CATALOG_BLOB_BUCKET, template.yaml's CatalogBlobBucket: where
	// the catalog keeps what is too large for a DynamoDB item (tool definitions, indexes
	// and observations over 32 KB), by content digest. Set for the functions that read or
	// write tool definitions (crawl, approvals). Default "": none, and a definition too
	// large for an item is refused.
	CatalogBlobBucket string
	// CheckpointKey is CHECKPOINT_KMS_KEY, the KMS ECC_NIST_EDWARDS25519 key that signs the
	// C2SP checkpoint notes (template.yaml's CheckpointKey). Read by the checkpoint function.
	// Default "": only the JSON heads are written.
	CheckpointKey string
	// CheckpointOrigin is CHECKPOINT_ORIGIN, the log's origin (first line of its
	// checkpoints, the key's name). Required with CheckpointKey.
	CheckpointOrigin string
	// TilesBucket is TOOLWARRANT_TILES_BUCKET, the S3 bucket the checkpoint function
	// publishes the audit tree to as static c2sp.org/tlog-tiles after each checkpoint note
	// (internal/tiles/s3tiles), and TilesPrefix TOOLWARRANT_TILES_PREFIX the key prefix of
	// the log in it ("" for the bucket's root). Needs CheckpointKey. Default "": no tiles.
	TilesBucket, TilesPrefix string
	// S3PathStyle is CHECKPOINT_S3_PATH_STYLE=1: address both buckets (checkpoints, catalog
	// objects) path-style (emulators). Default false (virtual-hosted, as AWS wants).
	S3PathStyle bool
	// CrawlRole is CRAWL_ROLE_ARN, the crawl function's IAM role: the identity recorded as
	// every crawl's By, and a principal the approvals API never accepts. Required by crawl
	// and approvals.
	CrawlRole string
	// Servers is TOOLWARRANT_SERVERS, the catalog of servers as JSON
	// ([{"name":"weather","url":"https://…","allowPrivate":false,"headers":[{"header":"Authorization","env":"WEATHER_TOKEN"}]}]),
	// added (idempotently) by the crawl function at cold start. Default none.
	Servers []warrant.Server
	// HeaderSecrets is CRAWL_HEADER_SECRETS, the comma-separated ARNs (IAM patterns) of the
	// Secrets Manager secrets and SSM parameters the crawl role may read, as template.yaml
	// grants them (its CrawlHeaderSecretArns parameter). Every secret a server in Servers
	// names must match one. Default none.
	HeaderSecrets []string
	// MaxAttempts is TOOLWARRANT_DYNAMODB_MAX_ATTEMPTS, the SDK's attempts per AWS call.
	// Default 3, 1 to 10.
	MaxAttempts int
	// DeadlineMargin is CRAWL_DEADLINE_MARGIN, how long before the Lambda deadline the
	// crawl stops listing so it can still record what it saw. Default 10s.
	DeadlineMargin time.Duration
	// CrawlQueue is CRAWL_QUEUE_URL, the SQS queue (template.yaml's CrawlQueue) the crawl
	// dispatcher sends one message per batch of servers to, for the crawl workers. Required
	// by the dispatcher only.
	CrawlQueue string
	// ServersPerMessage is CRAWL_SERVERS_PER_MESSAGE, how many servers the dispatcher puts
	// in one queue message (a worker retries, and parks, a message whole). Default 1, 1 to 10.
	ServersPerMessage int
}

// LogValue logs the configuration (no secrets: header values are never here).
func (c WarrantAWS) LogValue() slog.Value {
	names := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		names[i] = s.Name
	}
	return slog.GroupValue(slog.String("catalog_table", c.CatalogTable), slog.String("audit_kms_key", c.LogKey),
		slog.String("checkpoint_bucket", c.CheckpointBucket), slog.String("catalog_blob_bucket", c.CatalogBlobBucket), slog.String("tiles_bucket", c.TilesBucket), slog.String("tiles_prefix", c.TilesPrefix), slog.String("crawl_role", c.CrawlRole), slog.Any("servers", names),
		slog.Any("header_secrets", c.HeaderSecrets), slog.Int("max_attempts", c.MaxAttempts), slog.Duration("deadline_margin", c.DeadlineMargin))
}

// WarrantAWSNeeds says which optional settings a function requires.
type WarrantAWSNeeds struct {
	Bucket, CrawlRole bool
	// Dispatch is the crawl dispatcher's: CRAWL_QUEUE_URL is required, and AUDIT_KMS_KEY
	// is not (it reads the catalog's servers and signs nothing).
	Dispatch bool
}

// LoadWarrantAWS reads the configuration through getenv and reports every problem at once.
func LoadWarrantAWS(getenv func(string) string, need WarrantAWSNeeds) (WarrantAWS, error) {
	c := WarrantAWS{MaxAttempts: 3, DeadlineMargin: 10 * time.Second, ServersPerMessage: 1}
	var errs []error
	c.CatalogTable = tableVar(getenv, "CATALOG_TABLE", "catalog", "", &errs)
	if c.LogKey = strings.TrimSpace(getenv("AUDIT_KMS_KEY")); c.LogKey == "" && !need.Dispatch {
		errs = append(errs, errors.New("AUDIT_KMS_KEY is not set: name the KMS key that signs the audit log (template.yaml sets it)"))
	}
	c.CheckpointBucket = strings.TrimSpace(getenv("CHECKPOINT_BUCKET"))
	if need.Bucket && c.CheckpointBucket == "" {
		errs = append(errs, errors.New("CHECKPOINT_BUCKET is not set: name the S3 bucket for audit checkpoints"))
	}
	c.CatalogBlobBucket = catalogBlobBucket(getenv, &errs)
	c.CheckpointKey, c.CheckpointOrigin = strings.TrimSpace(getenv("CHECKPOINT_KMS_KEY")), strings.TrimSpace(getenv("CHECKPOINT_ORIGIN"))
	if c.CheckpointKey != "" && (c.CheckpointOrigin == "" || strings.ContainsAny(c.CheckpointOrigin, " \t+")) {
		errs = append(errs, fmt.Errorf("CHECKPOINT_ORIGIN %q: with CHECKPOINT_KMS_KEY, name the log (a schema-less URL without spaces or '+'; template.yaml sets it)", c.CheckpointOrigin))
	}
	c.TilesBucket, c.TilesPrefix = strings.TrimSpace(getenv("TOOLWARRANT_TILES_BUCKET")), strings.TrimSpace(getenv("TOOLWARRANT_TILES_PREFIX"))
	switch {
	case c.TilesBucket != "" && !validBucketName(c.TilesBucket):
		errs = append(errs, fmt.Errorf("TOOLWARRANT_TILES_BUCKET=%q is not an S3 bucket name", c.TilesBucket))
	case c.TilesBucket != "" && c.CheckpointKey == "":
		errs = append(errs, errors.New("TOOLWARRANT_TILES_BUCKET needs CHECKPOINT_KMS_KEY: the tiles are published with the C2SP checkpoint notes the checkpoint key signs"))
	case c.TilesBucket == "" && c.TilesPrefix != "":
		errs = append(errs, errors.New("TOOLWARRANT_TILES_PREFIX is set without TOOLWARRANT_TILES_BUCKET"))
	}
	if p := strings.Trim(c.TilesPrefix, "/"); p != "" && !validKeyPrefix(p) {
		errs = append(errs, fmt.Errorf("TOOLWARRANT_TILES_PREFIX=%q must be printable ASCII '/'-separated segments, none empty, \".\" or \"..\"", c.TilesPrefix))
	}
	boolVar(getenv, "CHECKPOINT_S3_PATH_STYLE", &c.S3PathStyle, &errs)
	c.CrawlRole = strings.TrimSpace(getenv("CRAWL_ROLE_ARN"))
	if need.CrawlRole && !strings.HasPrefix(c.CrawlRole, "arn:") {
		errs = append(errs, fmt.Errorf("CRAWL_ROLE_ARN=%q must be the crawl function's role ARN (template.yaml sets it)", c.CrawlRole))
	}
	for _, a := range strings.Split(getenv("CRAWL_HEADER_SECRETS"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.HeaderSecrets = append(c.HeaderSecrets, a)
		}
	}
	if v := strings.TrimSpace(getenv("TOOLWARRANT_SERVERS")); v != "" {
		d := json.NewDecoder(strings.NewReader(v))
		d.DisallowUnknownFields()
		var raw []struct {
			Name         string              `json:"name"`
			URL          string              `json:"url"`
			AllowPrivate bool                `json:"allowPrivate"`
			Headers      []warrant.HeaderRef `json:"headers"`
		}
		if err := d.Decode(&raw); err != nil {
			errs = append(errs, fmt.Errorf("TOOLWARRANT_SERVERS is not a JSON list of {name, url, allowPrivate, headers}: %v", err))
		}
		seen := map[string]bool{}
		for _, r := range raw {
			s := warrant.Server{Name: r.Name, URL: r.URL, AllowPrivate: r.AllowPrivate, Headers: r.Headers}
			warrant.SortHeaders(s.Headers)
			if err := s.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("TOOLWARRANT_SERVERS: %w", err))
				continue
			}
			if seen[s.Name] {
				errs = append(errs, fmt.Errorf("TOOLWARRANT_SERVERS: server %q given twice", s.Name))
			}
			for _, h := range s.Headers {
				if h.Secret != "" && !slices.ContainsFunc(c.HeaderSecrets, func(p string) bool { return MatchARN(p, h.Secret) }) {
					errs = append(errs, fmt.Errorf("TOOLWARRANT_SERVERS: server %q header %s reads %s, which the crawl role may not read: add it to the CrawlHeaderSecretArns parameter (CRAWL_HEADER_SECRETS)", s.Name, h.Header, h.Secret))
				}
			}
			seen[s.Name] = true
			c.Servers = append(c.Servers, s)
		}
	}
	intVar(getenv, "TOOLWARRANT_DYNAMODB_MAX_ATTEMPTS", &c.MaxAttempts, 1, 10, &errs)
	if v := strings.TrimSpace(getenv("CRAWL_DEADLINE_MARGIN")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("CRAWL_DEADLINE_MARGIN=%q must be a duration such as 10s", v))
		} else {
			c.DeadlineMargin = d
		}
	}
	c.CrawlQueue = strings.TrimSpace(getenv("CRAWL_QUEUE_URL"))
	if u, err := url.Parse(c.CrawlQueue); c.CrawlQueue != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") == "") {
		errs = append(errs, fmt.Errorf("CRAWL_QUEUE_URL=%q must be an SQS queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/dev-toolwarrant-crawl (template.yaml sets it)", c.CrawlQueue))
	} else if need.Dispatch && c.CrawlQueue == "" {
		errs = append(errs, errors.New("CRAWL_QUEUE_URL is not set: name the SQS queue the crawl workers read (template.yaml's CrawlQueue)"))
	}
	intVar(getenv, "CRAWL_SERVERS_PER_MESSAGE", &c.ServersPerMessage, 1, 10, &errs)

	return c, errors.Join(errs...)
}

// validBucketName is an S3 bucket name (general purpose buckets): 3 to 63 of [a-z0-9.-],
// the first and last a lowercase letter or digit.
func validBucketName(s string) bool {
	if len(s) < 3 || len(s) > 63 {
		return false
	}
	lowerOrDigit := func(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !lowerOrDigit(c) && (i == 0 || i == len(s)-1 || c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// validKeyPrefix is an S3 key prefix that is also a relative path: printable ASCII without
// backslash, of '/'-separated segments none of which is empty, "." or "..", at most 256
// bytes.
func validKeyPrefix(p string) bool {
	if len(p) > 256 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x21 || p[i] > 0x7e || p[i] == '\\' {
			return false
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// catalogBlobBucket reads CATALOG_BLOB_BUCKET, the bucket of the DynamoDB catalog's large
// objects ("" when unset).
func catalogBlobBucket(getenv func(string) string, errs *[]error) string {
	v := strings.TrimSpace(getenv("CATALOG_BLOB_BUCKET"))
	if v != "" && !validBucketName(v) {
		*errs = append(*errs, fmt.Errorf("CATALOG_BLOB_BUCKET=%q is not an S3 bucket name", v))
	}
	return v
}
