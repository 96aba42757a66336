package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoadWarrantAWS(t *testing.T) {
	env := map[string]string{"CATALOG_TABLE": "dev-toolwarrant-catalog", "AUDIT_KMS_KEY": "arn:aws:kms:us-east-1:1:key/k", "CHECKPOINT_BUCKET": "b-1",
		"CRAWL_ROLE_ARN": "arn:aws:iam::1:role/crawl", "CHECKPOINT_S3_PATH_STYLE": "1", "CRAWL_DEADLINE_MARGIN": "5s", "CATALOG_BLOB_BUCKET": "dev-catalogblobbucket-1a2b3c",
		"TOOLWARRANT_SERVERS": `[{"name":"weather","url":"https://weather.example.com/mcp","headers":[{"header":"Authorization","env":"WEATHER_TOKEN"}]}]`}
	c, err := LoadWarrantAWS(func(k string) string { return env[k] }, WarrantAWSNeeds{Bucket: true, CrawlRole: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.CatalogTable != "dev-toolwarrant-catalog" || !c.S3PathStyle || c.CatalogBlobBucket != "dev-catalogblobbucket-1a2b3c" || c.DeadlineMargin != 5*time.Second || len(c.Servers) != 1 ||
		c.Servers[0].Headers[0].Env != "WEATHER_TOKEN" || c.MaxAttempts != 3 {
		t.Errorf("config = %+v", c)
	}
	bad := map[string]string{"CATALOG_TABLE": "x", "TOOLWARRANT_SERVERS": `[{"name":"bad name","url":"ftp://x"}]`, "CHECKPOINT_S3_PATH_STYLE": "maybe",
		"CATALOG_BLOB_BUCKET": "Not_A_Bucket"}
	_, err = LoadWarrantAWS(func(k string) string { return bad[k] }, WarrantAWSNeeds{Bucket: true, CrawlRole: true})
	for _, want := range []string{"CATALOG_TABLE", "AUDIT_KMS_KEY", "CHECKPOINT_BUCKET", "CRAWL_ROLE_ARN", "TOOLWARRANT_SERVERS", "CHECKPOINT_S3_PATH_STYLE", "CATALOG_BLOB_BUCKET"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// TestHeaderSecretsMustBeGranted: a server whose header names a secret the crawl role is
// not granted (CRAWL_HEADER_SECRETS) is refused at cold start, with what to do.
func TestHeaderSecretsMustBeGranted(t *testing.T) {
	servers := `[{"name":"weather","url":"https://weather.example.com/mcp","headers":[{"header":"Authorization","secret":"arn:aws:secretsmanager:us-east-1:123456789012:secret:weather-AbCdEf"}]}]`
	env := map[string]string{"CATALOG_TABLE": "catalog", "AUDIT_KMS_KEY": "k", "TOOLWARRANT_SERVERS": servers}
	get := func(k string) string { return env[k] }
	if _, err := LoadWarrantAWS(get, WarrantAWSNeeds{}); err == nil || !strings.Contains(err.Error(), "add it to the CrawlHeaderSecretArns parameter") {
		t.Errorf("an ungranted secret: %v", err)
	}
	env["CRAWL_HEADER_SECRETS"] = "arn:aws:ssm:us-east-1:123456789012:parameter/x, arn:aws:secretsmanager:us-east-1:123456789012:secret:weather-??????"
	c, err := LoadWarrantAWS(get, WarrantAWSNeeds{})
	if err != nil || len(c.HeaderSecrets) != 2 || c.Servers[0].Headers[0].SecretKind() != "secretsmanager" {
		t.Errorf("a granted secret: %+v, %v", c, err)
	}
	env["TOOLWARRANT_SERVERS"] = strings.Replace(servers, `"secret"`, `"env":"X","secret"`, 1)
	if _, err := LoadWarrantAWS(get, WarrantAWSNeeds{}); err == nil || !strings.Contains(err.Error(), "both an environment variable and a secret") {
		t.Errorf("env and secret together: %v", err)
	}
}

// TestTilesSettings: the checkpoint function publishes tiles to TOOLWARRANT_TILES_BUCKET
// under TOOLWARRANT_TILES_PREFIX, only with the checkpoint key that signs their notes.
func TestTilesSettings(t *testing.T) {
	base := map[string]string{"CATALOG_TABLE": "catalog", "AUDIT_KMS_KEY": "k", "CHECKPOINT_KMS_KEY": "cp", "CHECKPOINT_ORIGIN": "toolwarrant.aws/1/us-east-1/dev"}
	with := func(kv ...string) func(string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := LoadWarrantAWS(with("TOOLWARRANT_TILES_BUCKET", "dev-tlog-1", "TOOLWARRANT_TILES_PREFIX", "log/v1/"), WarrantAWSNeeds{})
	if err != nil || c.TilesBucket != "dev-tlog-1" || c.TilesPrefix != "log/v1/" {
		t.Errorf("tiles settings: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"TOOLWARRANT_TILES_BUCKET", "Bad_Bucket"}, "TOOLWARRANT_TILES_BUCKET"},
		{[]string{"TOOLWARRANT_TILES_BUCKET", "dev-tlog-1", "CHECKPOINT_KMS_KEY", ""}, "needs CHECKPOINT_KMS_KEY"},
		{[]string{"TOOLWARRANT_TILES_PREFIX", "log/"}, "without TOOLWARRANT_TILES_BUCKET"},
		{[]string{"TOOLWARRANT_TILES_BUCKET", "dev-tlog-1", "TOOLWARRANT_TILES_PREFIX", "a/../b"}, "TOOLWARRANT_TILES_PREFIX"},
		{[]string{"TOOLWARRANT_TILES_BUCKET", "dev-tlog-1", "TOOLWARRANT_TILES_PREFIX", "a b"}, "TOOLWARRANT_TILES_PREFIX"},
	} {
		if _, err := LoadWarrantAWS(with(tc.kv...), WarrantAWSNeeds{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.kv, err, tc.want)
		}
	}
}
