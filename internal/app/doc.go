// Package app wires configuration to adapters and services, once, for every binary: lockerd
// and the pads Lambda compose the very same http.Handler over different stores.
package app
