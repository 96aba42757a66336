package warrantaws_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
)

// TestCrawlHeadersFromSecrets: crawl header values named in ToolwarrantServers by Secrets
// Manager and SSM ARNs are read by the crawl function at each crawl, as the crawl role
// from template.yaml with CrawlHeaderSecretArns granting exactly those ARNs; a secret the
// role was not granted is refused by IAM and the server fails with what to do; no value
// reaches the result or the logs.
func TestCrawlHeadersFromSecrets(t *testing.T) {
	admin := awstest.Config(t)
	ctx := t.Context()
	sm, ps := secretsmanager.NewFromConfig(admin), ssm.NewFromConfig(admin)
	token, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("weather-token"), SecretString: aws.String("Bearer s3cr3t-token")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("not-granted"), SecretString: aws.String("Bearer 0ther-s3cr3t")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ps.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/agentgate/alerts-key"), Value: aws.String("k3y-s3cr3t"), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	param := "arn:aws:ssm:" + awstest.Region + ":" + awstest.Account + ":parameter/agentgate/alerts-key"
	tokenARN := aws.ToString(token.ARN)
	// The template grants a secret by a pattern ending in -?????? (its random suffix).
	granted := strings.TrimSuffix(tokenARN, tokenARN[len(tokenARN)-6:]) + "??????," + param
	d := awsapptest.DeployWith(t, map[string]string{"CrawlHeaderSecretArns": granted})

	weather, alerts, leaky := fixture.New(tool("get_forecast", "Forecast.")), fixture.New(tool("get_alerts", "Alerts.")), fixture.New(tool("x", "X."))
	urls := map[string]string{}
	for name, f := range map[string]*fixture.Server{"weather": weather, "alerts": alerts, "leaky": leaky} {
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		urls[name] = srv.URL + "/mcp"
	}
	servers, _ := json.Marshal([]map[string]any{
		{"name": "weather", "url": urls["weather"], "allowPrivate": true, "headers": []map[string]string{{"header": "Authorization", "secret": tokenARN}}},
		{"name": "alerts", "url": urls["alerts"], "allowPrivate": true, "headers": []map[string]string{{"header": "X-Key", "secret": param}}},
		{"name": "leaky", "url": urls["leaky"], "allowPrivate": true, "headers": []map[string]string{{"header": "Authorization", "secret": aws.ToString(other.ARN)}}},
	})
	env := map[string]string{"CATALOG_TABLE": d.Table, "AUDIT_KMS_KEY": d.Key, "CRAWL_ROLE_ARN": d.CrawlRoleARN(), "TOOLWARRANT_SERVERS": string(servers),
		"CRAWL_HEADER_SECRETS": granted}
	if _, err := config.LoadWarrantAWS(func(k string) string { return env[k] }, config.WarrantAWSNeeds{CrawlRole: true}); err == nil ||
		!strings.Contains(err.Error(), "not-granted") || !strings.Contains(err.Error(), "CrawlHeaderSecretArns") {
		t.Fatalf("cold start with a secret the role was not granted: %v", err)
	}
	// Grant it in the function's configuration but not in the role: IAM must refuse.
	env["CRAWL_HEADER_SECRETS"] = granted + "," + aws.ToString(other.ARN)
	c, err := config.LoadWarrantAWS(func(k string) string { return env[k] }, config.WarrantAWSNeeds{CrawlRole: true})
	if err != nil {
		t.Fatal(err)
	}
	role := withRetryer(d.Config(t, "CrawlRole"))
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	w, err := awsapp.NewWarrant(ctx, role, c, c.CrawlRole, log, awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}})
	if err != nil {
		t.Fatal(err)
	}
	bounds, _ := config.LoadToolwarrant(func(string) string { return "" })
	deps := awsapp.CrawlDeps{Warrant: w, Config: c, Bounds: bounds, Getenv: func(string) string { return "" }, Secrets: awsapp.NewSecrets(role), Logger: log}
	if err := awsapp.RegisterServers(ctx, deps); err != nil {
		t.Fatal(err)
	}
	res, err := awsapp.CrawlHandler(deps)(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	if res.Recorded != 2 || res.Failed != 1 {
		t.Fatalf("crawl: %s", out)
	}
	for _, so := range res.Servers {
		if so.Server == "leaky" && (!strings.Contains(so.Error, "may not read secret "+aws.ToString(other.ARN)) || !strings.Contains(so.Error, "CrawlHeaderSecretArns")) {
			t.Errorf("the ungranted secret: %q", so.Error)
		}
	}
	if got := weather.Header("Authorization"); got != "Bearer s3cr3t-token" {
		t.Errorf("weather saw Authorization %q", got)
	}
	if got := alerts.Header("X-Key"); got != "k3y-s3cr3t" {
		t.Errorf("alerts saw X-Key %q", got)
	}
	if leaky.Lists() != 0 {
		t.Error("the server whose secret could not be read was listed anyway")
	}
	for _, s := range []string{"s3cr3t-token", "k3y-s3cr3t", "0ther-s3cr3t"} {
		if strings.Contains(string(out), s) || strings.Contains(logs.String(), s) {
			t.Errorf("a secret value (%s) reached the result or the logs", s)
		}
	}
	// Rotation: the next crawl reads the secret again.
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: token.ARN, SecretString: aws.String("Bearer r0tated")}); err != nil {
		t.Fatal(err)
	}
	if _, err := awsapp.CrawlHandler(deps)(context.Background(), json.RawMessage(`{"servers":["weather"]}`)); err != nil {
		t.Fatal(err)
	}
	if got := weather.Header("Authorization"); got != "Bearer r0tated" {
		t.Errorf("after rotation weather saw %q", got)
	}
}
