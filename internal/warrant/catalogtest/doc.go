// Package catalogtest is the conformance suite of the warrant.Catalog port: every driver
// (sqlitestore, dynamostore) runs the same tests through Run from its own
// _test.go file, so that "put if absent", "record crawl N only after N-1", "decide only
// if the approval is still what was read" and "append audit records only on the head
// read" mean the same thing on every backend, and that each reads, after one scenario
// (Scenario), exactly what the drivers of catalog format 1 read (Catalog1Golden), which
// the drivers' upgrade tests also check on catalogs that code wrote.
package catalogtest
