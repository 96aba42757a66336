package awstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// SQS's limits on a batch call, which the guard enforces (moto does not check them all):
// at most 10 entries, and at most 256 KiB of message bodies in a SendMessageBatch — AWS
// has allowed 1 MiB since August 2025; the guard keeps the older, smaller bound, which
// code within it meets in any account.
const (
	sqsMaxBatchEntries = 10
	sqsMaxBatchBytes   = 256 << 10
)

const sqsErr = "com.amazonaws.sqs#"

// sqsAction is the IAM action that authorizes an SQS API operation: a batch operation is
// authorized by its single form (IAM has no sqs:SendMessageBatch).
func sqsAction(op string) string {
	return "sqs:" + strings.TrimSuffix(op, "Batch")
}

// sqsQueueARN is the ARN of the queue a queue URL names (http://host/ACCOUNT/NAME).
func sqsQueueARN(region, queueURL string) string {
	parts := strings.Split(strings.Trim(queueURL, "/"), "/")
	if len(parts) < 2 {
		return "*"
	}
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, parts[len(parts)-2], parts[len(parts)-1])
}

// sqs authorizes an SQS call (JSON protocol) on its queue's ARN, as IAM does — moto checks
// SQS actions against Resource "*" only — enforces the batch limits, then re-signs it as
// the administrator for moto.
func (g *guard) sqs(w http.ResponseWriter, r *http.Request, body []byte, akid, region, op string, forward func(http.ResponseWriter, *http.Request)) {
	id := lookup(akid)
	if id == nil {
		(&errorResponse{400, sqsErr + "InvalidClientTokenId", "The security token included in the request is invalid.", nil}).write(w)
		return
	}
	var in struct {
		QueueURL  string `json:"QueueUrl"`
		QueueName string
		Entries   []struct {
			MessageBody string
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		(&errorResponse{400, sqsErr + "InvalidParameterValue", "awstest: " + err.Error(), nil}).write(w)
		return
	}
	if strings.HasSuffix(op, "Batch") {
		if len(in.Entries) == 0 {
			(&errorResponse{400, sqsErr + "EmptyBatchRequest", "There should be at least one entry in the request.", nil}).write(w)
			return
		}
		if len(in.Entries) > sqsMaxBatchEntries {
			(&errorResponse{400, sqsErr + "TooManyEntriesInBatchRequest", fmt.Sprintf("Maximum number of entries per request are %d. You have sent %d.", sqsMaxBatchEntries, len(in.Entries)), nil}).write(w)
			return
		}
		total := 0
		for _, e := range in.Entries {
			total += len(e.MessageBody)
		}
		if total > sqsMaxBatchBytes {
			(&errorResponse{400, sqsErr + "BatchRequestTooLong", fmt.Sprintf("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", sqsMaxBatchBytes, total), nil}).write(w)
			return
		}
	}
	if !id.admin {
		res := "*"
		switch {
		case in.QueueURL != "":
			res = sqsQueueARN(region, in.QueueURL)
		case in.QueueName != "":
			res = fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, Account, in.QueueName)
		}
		q := Request{Principal: id.arn, Action: sqsAction(op), Resource: res}
		if d, err := Evaluate(id.statements, q); d != Allowed {
			why := "no identity-based policy allows the " + q.Action + " action"
			if d == Denied {
				why = "an explicit deny in an identity-based policy"
			}
			if err != nil {
				why += " (" + err.Error() + ")"
			}
			(&errorResponse{400, sqsErr + "AccessDenied", fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because %s", id.arn, q.Action, res, why), nil}).write(w)
			return
		}
	}
	if err := resign(r, body, "sqs", region); err != nil {
		http.Error(w, "awstest: re-sign: "+err.Error(), http.StatusInternalServerError)
		return
	}
	forward(w, r)
}
