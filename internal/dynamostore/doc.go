// Package dynamostore implements the Padlock storage port (locker.Store) on Amazon DynamoDB
// with aws-sdk-go-v2: one table, conditional writes and TransactWriteItems instead of a
// process lock. README.md describes the data model, each write algorithm with its condition
// expressions, the error mapping and the read/write units every route costs.
//
// The toolwarrant catalog driver will join this package; the pads driver lives in pads*.go.
package dynamostore
