// Package dynamostore implements the Padlock storage port (locker.Store) on Amazon DynamoDB
// with aws-sdk-go-v2: one table, conditional writes and TransactWriteItems instead of a
// process lock. README.md describes the data model, each write algorithm with its condition
// expressions, the error mapping and the read/write units every route costs.
//
// It also implements the toolwarrant catalog port (warrant.Catalog) on a table of its own
// (NewCatalog, catalog*.go; catalog.md describes its items, writes and costs): it stores
// the tool index and approval states the domain derives, and derives nothing itself. The
// pads driver lives in pads*.go.
package dynamostore
