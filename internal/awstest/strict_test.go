package awstest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

func str(s string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: s} }

func key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestRolesAsTheTemplateDeclares runs calls as template.yaml's roles against moto with
// IAM enforced: each is allowed or refused exactly as a real account would decide it.
func TestRolesAsTheTemplateDeclares(t *testing.T) {
	if External() {
		t.Skip("the harness enforces IAM only on the moto_server it starts")
	}
	cfg := Config(t)
	tbl := CreateTable(t, cfg, "CatalogTable")
	other := CreateTable(t, cfg, "CatalogTable")
	res := Resources{"CatalogTable": tbl}
	crawl := dynamodb.NewFromConfig(Role(t, "CrawlRole", res).Config(t))
	checkpoint := dynamodb.NewFromConfig(Role(t, "CheckpointRole", res).Config(t))
	interceptor := dynamodb.NewFromConfig(Role(t, "InterceptorRole", res).Config(t))
	if !strings.HasPrefix(res["CrawlRole"], "arn:aws:iam::"+Account+":role/") {
		t.Errorf("Role did not record the role's ARN: %q", res["CrawlRole"])
	}
	ctx := t.Context()
	put := func(c *dynamodb.Client, table string, item map[string]ddbtypes.AttributeValue) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		return err
	}
	update := func(c *dynamodb.Client, pk string) error {
		_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key(pk, "x"),
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": str("1")}})
		return err
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	denied := func(what string, err error) {
		t.Helper()
		if code(err) != "AccessDeniedException" {
			t.Errorf("%s: %v, want AccessDeniedException", what, err)
		}
	}
	must("crawl puts a new item", put(crawl, tbl, key("SRV#a", "VER#1")))
	denied("crawl puts into another table", put(crawl, other, key("SRV#a", "VER#1")))
	must("crawl updates SERVERS", update(crawl, "SERVERS"))
	must("crawl updates AUDIT", update(crawl, "AUDIT"))
	denied("crawl updates a history item", update(crawl, "SRV#a"))
	denied("crawl updates APPROVALS", update(crawl, "APPROVALS"))
	_, err := crawl.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key("SRV#a", "VER#1")})
	denied("crawl deletes", err)
	_, err = crawl.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :s)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": str("SRV#a"), ":s": str("VER#")}})
	must("crawl queries", err)
	// A transaction is authorized item by item: one update of a history item refuses it all.
	_, err = crawl.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(tbl), Item: key("SRV#b", "VER#1")}},
		{Update: &ddbtypes.Update{TableName: aws.String(tbl), Key: key("AUDIT", "HEAD"), UpdateExpression: aws.String("SET v = :v"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": str("1")}}},
	}})
	must("crawl's transaction of a put and an AUDIT update", err)
	_, err = crawl.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(tbl), Item: key("SRV#c", "VER#1")}},
		{Update: &ddbtypes.Update{TableName: aws.String(tbl), Key: key("SRV#a", "VER#1"), UpdateExpression: aws.String("SET v = :v"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": str("1")}}},
	}})
	denied("crawl's transaction updating a version", err)
	if _, err := crawl.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("SRV#c", "VER#1"), ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	// The interceptor records as the crawl does (a gateway crawl record, the server's last
	// crawl, the audit head) and can never approve: no APPROVALS update, no history update.
	must("interceptor puts a new item", put(interceptor, tbl, key("SRV#a", "CRAWL#2")))
	must("interceptor updates SERVERS", update(interceptor, "SERVERS"))
	must("interceptor updates AUDIT", update(interceptor, "AUDIT"))
	denied("interceptor updates APPROVALS", update(interceptor, "APPROVALS"))
	denied("interceptor updates a history item", update(interceptor, "SRV#a"))
	denied("interceptor puts into another table", put(interceptor, other, key("SRV#a", "CRAWL#2")))
	// The checkpoint role reads and never writes: the format-marker write of issue 14.
	denied("checkpoint writes", put(checkpoint, tbl, key("SCHEMA", "SCHEMA")))
	_, err = checkpoint.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("SCHEMA", "SCHEMA")})
	must("checkpoint reads", err)
	// An unknown access key is not an identity.
	stranger := cfg
	stranger.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIANOBODY", SecretAccessKey: "x"}, nil
	})
	_, err = dynamodb.NewFromConfig(stranger).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a", "b")})
	if code(err) != "UnrecognizedClientException" {
		t.Errorf("an unknown key: %v", err)
	}
}

// TestDynamoLimitsEnforced sends, as the administrator, what DynamoDB refuses for size.
func TestDynamoLimitsEnforced(t *testing.T) {
	if External() {
		t.Skip("the limits layer sits in front of the moto_server the harness starts")
	}
	cfg := Config(t)
	tbl := CreateTable(t, cfg, "CatalogTable")
	c := dynamodb.NewFromConfig(cfg)
	big := func(sk string, n int) map[string]ddbtypes.AttributeValue {
		k := key("P", sk)
		k["v"] = &ddbtypes.AttributeValueMemberB{Value: bytes.Repeat([]byte{7}, n)}
		return k
	}
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: big("a", MaxItemBytes)})
	if code(err) != "ValidationException" {
		t.Errorf("a put of 400 KB + key: %v", err)
	}
	var items []ddbtypes.TransactWriteItem
	for i := range 11 {
		items = append(items, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String(tbl), Item: big(string(rune('a'+i)), 390*1024)}})
	}
	_, err = c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if code(err) != "ValidationException" || !strings.Contains(err.Error(), "4 MB") {
		t.Errorf("a 4.2 MB transaction: %v", err)
	}
	if _, err := c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: items[:10]}); err != nil {
		t.Errorf("a 3.9 MB transaction: %v", err)
	}
	// Query pages stop at 1 MB, as DynamoDB's do: the ten 390 KB items above come in pages
	// of at most three, so a reader that ignores LastEvaluatedKey loses items. (moto cuts
	// at 1,000,000 bytes of its own measure; this pins that it still does.)
	pages, n := 0, 0
	in := &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": str("P")}}
	for p := dynamodb.NewQueryPaginator(c, in); p.HasMorePages() && pages < 20; pages++ {
		out, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) > 3 {
			t.Errorf("a Query page holds %d items of 390 KB: more than 1 MB", len(out.Items))
		}
		n += len(out.Items)
	}
	if n != 10 || pages < 4 {
		t.Errorf("Query returned %d items in %d pages, want 10 in at least 4", n, pages)
	}
}

// TestS3MissingKeyWithoutListBucket: S3 answers a missing key with 403 to a caller that
// may not list the bucket, and 404 to one that may.
func TestS3MissingKeyWithoutListBucket(t *testing.T) {
	if External() {
		t.Skip("the S3 rule is applied in front of the moto_server the harness starts")
	}
	cfg := Config(t)
	admin := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	bucket := "agentgate-test-strict-s3"
	if _, err := admin.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	getOnly := RoleWith(t, "GetOnly", []Statement{{Effect: "Allow", Action: []string{"s3:GetObject"}, Resource: []string{"arn:aws:s3:::" + bucket + "/*"}}}, nil)
	lister := RoleWith(t, "Lister", []Statement{{Effect: "Allow", Action: []string{"s3:GetObject"}, Resource: []string{"arn:aws:s3:::" + bucket + "/*"}},
		{Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{"arn:aws:s3:::" + bucket}}}, nil)
	status := func(p *Principal, key string) int {
		c := s3.NewFromConfig(p.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
		_, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			return re.HTTPStatusCode()
		}
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		return http.StatusOK
	}
	if _, err := admin.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("here"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if got := status(getOnly, "here"); got != http.StatusOK {
		t.Errorf("get of a present key without ListBucket: %d", got)
	}
	if got := status(getOnly, "missing"); got != http.StatusForbidden {
		t.Errorf("get of a missing key without ListBucket: %d, want 403", got)
	}
	if got := status(lister, "missing"); got != http.StatusNotFound {
		t.Errorf("get of a missing key with ListBucket: %d, want 404", got)
	}
	// moto checks S3 resources itself: an object of another bucket is refused.
	if _, err := admin.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket + "-2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket + "-2"), Key: aws.String("here"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	c := s3.NewFromConfig(getOnly.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket + "-2"), Key: aws.String("here")}); code(err) != "AccessDenied" {
		t.Errorf("get from a bucket not granted: %v", err)
	}
}
