// Package emf writes CloudWatch Embedded Metric Format (EMF) records: one JSON object per log
// line from which CloudWatch Logs extracts metrics as it ingests a Lambda function's output.
// A function publishes metrics this way without calling PutMetricData: no request on the
// invocation's path, no cloudwatch:PutMetricData permission in its role, and each value sits
// in the log next to the lines that explain it.
//
// A Record holds one namespace, one dimension set and its metrics, plus properties: further
// top-level members that are not metrics (free, and searchable with Logs Insights). Marshal
// refuses what CloudWatch would drop silently (empty or duplicate names, a member named twice,
// more than 30 dimensions or 100 metrics, values that are not finite numbers), so a broken
// record is an error here rather than a missing alarm there. Package emftest checks lines
// against the specification independently of this writer.
//
// Specification: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
package emf
