package warrant

import (
	"encoding/json"
	"maps"
	"time"
)

// MaxObservedBody bounds the body of one crawl_observed entry, in bytes. A record whose
// observations would not fit is written as several crawl_observed entries of the same
// crawl, Part of Parts, in tool order, each within the bound: an audit entry is a leaf of
// the log's tree and a record of its static tiles, and a c2sp.org/tlog-tiles entry bundle
// holds entries of at most 65,535 bytes (tiles.MaxEntryBytes). The bound leaves room for
// what the chain adds around the body (the number, type, actor and time).
const MaxObservedBody = 56 << 10

// observedEvents returns the crawl_observed events of one record: fields (server, crawl,
// source, times) and the observations, split into parts when one body would exceed
// MaxObservedBody. A record that fits is one event without part numbers, as before parts
// existed. extra, when set, adds a member to each part from that part's observations (the
// gateway's drift).
func observedEvents(by string, at time.Time, fields map[string]any, obs []Observation, extra func(part []Observation) (string, any)) []Event {
	body := func(part []Observation, n, of int) json.RawMessage {
		m := maps.Clone(fields)
		m["observations"] = observationsJSON(part)
		if extra != nil {
			k, v := extra(part)
			m[k] = v
		}
		if of > 1 {
			m["part"], m["parts"] = n, of
		}
		return mustJSON(m)
	}
	if whole := body(obs, 1, 1); len(whole) <= MaxObservedBody || len(obs) < 2 {
		return []Event{{Type: EventCrawlObserved, Actor: by, At: at, Body: whole}}
	}
	// Split by the size each observation adds (with its share of extra), against the
	// room left by the fields and the part numbers.
	empty := len(body(nil, 999999, 999999))
	room := MaxObservedBody - empty
	var parts [][]Observation
	start, size := 0, 0
	for i := range obs {
		n := len(body(obs[i:i+1], 999999, 999999)) - empty + 1 // + the comma
		if i > start && size+n > room {
			parts = append(parts, obs[start:i])
			start, size = i, 0
		}
		size += n
	}
	parts = append(parts, obs[start:])
	// The estimate is close, not exact (a list's brackets, null for an empty list): a
	// part over the bound is halved until each fits or holds one observation.
	var fit func(p []Observation) [][]Observation
	fit = func(p []Observation) [][]Observation {
		if len(p) < 2 || len(body(p, 999999, 999999)) <= MaxObservedBody {
			return [][]Observation{p}
		}
		return append(fit(p[:len(p)/2]), fit(p[len(p)/2:])...)
	}
	var fitted [][]Observation
	for _, p := range parts {
		fitted = append(fitted, fit(p)...)
	}
	parts = fitted
	events := make([]Event, len(parts))
	for i, p := range parts {
		events[i] = Event{Type: EventCrawlObserved, Actor: by, At: at, Body: body(p, i+1, len(parts))}
	}
	return events
}
