package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// QueueProperties returns the resolved Properties of an AWS::SQS::Queue of the template,
// with res resolving its references (a redrive target's ARN, a parameter).
func (tpl *Template) QueueProperties(logicalID string, res Resources) (map[string]any, error) {
	rs := asMap(tpl.Resources[logicalID])
	if rs["Type"] != "AWS::SQS::Queue" {
		return nil, fmt.Errorf("%s is not an AWS::SQS::Queue", logicalID)
	}
	v, err := resolver{tpl: tpl, res: res}.eval(rs["Properties"])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logicalID, err)
	}
	return asMap(v), nil
}

// CreateQueue creates, as the administrator (CloudFormation's part), a queue shaped like
// the template's logicalID — its visibility timeout, retention and redrive policy, the
// redrive target resolved through res (create that queue first) — under a fresh name,
// records its URL in res and returns it. The queue is deleted when the test ends.
func CreateQueue(t testing.TB, cfg aws.Config, logicalID string, res Resources) string {
	t.Helper()
	props, err := LoadTemplate(t).QueueProperties(logicalID, res)
	if err != nil {
		t.Fatalf("awstest: %v", err)
	}
	attrs := map[string]string{}
	for _, k := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds", "MaximumMessageSize"} {
		if v, ok := props[k]; ok {
			attrs[k] = fmt.Sprint(v)
		}
	}
	if rp, ok := props["RedrivePolicy"]; ok {
		m := asMap(rp)
		if strings.HasPrefix(fmt.Sprint(m["deadLetterTargetArn"]), "arn:aws:unresolved:") {
			t.Fatalf("awstest: %s redrives to %v: create that queue first", logicalID, m["deadLetterTargetArn"])
		}
		b, _ := json.Marshal(map[string]string{"deadLetterTargetArn": fmt.Sprint(m["deadLetterTargetArn"]), "maxReceiveCount": fmt.Sprint(m["maxReceiveCount"])})
		attrs["RedrivePolicy"] = string(b)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "agentgate-test-" + hex.EncodeToString(b[:])
	client := sqs.NewFromConfig(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("awstest: create queue %s (%s): %v", logicalID, name, err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Logf("awstest: delete queue %s: %v", name, err)
		}
	})
	res[logicalID] = url
	return url
}
