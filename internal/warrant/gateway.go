package warrant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ObserveGateway records what the gateway processor saw server serve at at and did not
// pass on (internal/extmcp: tools new to the catalog, drifted, unapproved or refused) as
// one crawl record with Source SourceGateway, with its crawl_observed audit entry in the
// same write, signed by the Auditor like a crawl's. obs are one observation per tool
// (sorted here; of two for one tool the last wins), each with a tool name and exactly one
// of a valid digest or a refusal (ErrInvalid otherwise, and nothing is written).
//
// The record is partial: a tool it does not observe keeps its state (it is not removed).
// It opens no versions and no proposals — the processor passes digests, not definitions —
// so a digest first seen by the gateway is shown by Tools and `toolwarrant list` (DRIFT for
// an approved tool, PENDING for a new one) and the next crawl records its version and
// opens its proposal. Observations that change nothing — the tool's last observation, of
// either source, is already this one, or the server's last record is a gateway record
// that observed exactly this — are left out, and when none is left nothing is written:
// retrying a batch that was recorded records nothing twice.
//
// The write is check-and-set on the server's crawl sequence and the audit head; when a
// crawl or another observer wins the race (ErrConflict) everything is re-read and the
// write retried, at most Config.MaxAttempts times in all. ErrNotFound for an unknown
// server.
func (s *Service) ObserveGateway(ctx context.Context, server string, at time.Time, obs []Observation) error {
	obs, err := gatewayObservations(server, obs)
	if err != nil || len(obs) == 0 {
		return err
	}
	if at.IsZero() {
		at = s.clock()
	}
	at = at.UTC()
	by := s.identity
	var rec CrawlRecord
	write := true
	err = s.audited(ctx, "record gateway observations of "+server, func() ([]Event, error) {
		srv, err := s.cat.Server(ctx, server)
		if err != nil {
			return nil, err
		}
		tools, err := s.cat.ServerTools(ctx, server)
		if err != nil {
			return nil, err
		}
		byTool := map[string]ToolRecord{}
		for _, t := range tools {
			byTool[t.Tool] = t
		}
		var last []Observation // the server's last record, when it is a gateway record
		if srv.LastCrawl > 0 {
			c, err := s.cat.Crawl(ctx, server, srv.LastCrawl)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			if c.Source == SourceGateway {
				last = c.Observations
			}
		}
		fresh := make([]Observation, 0, len(obs))
		type driftJSON struct {
			Tool     string `json:"tool"`
			Digest   Digest `json:"digest,omitempty"`
			Refused  string `json:"refused,omitempty"`
			Approved Digest `json:"approved"`
		}
		drift := []driftJSON{}
		for _, o := range obs {
			t, known := byTool[o.Tool]
			if known && t.Listed() && t.Current == o.Digest && t.Refused == o.Refused && t.LastCrawl > 0 {
				continue // the catalog's last observation of the tool is this one
			}
			if i, found := slices.BinarySearchFunc(last, o.Tool, func(x Observation, tool string) int { return strings.Compare(x.Tool, tool) }); found && last[i] == o {
				continue // recorded by the server's last record (a retry, or a tool Tools does not list)
			}
			fresh = append(fresh, o)
			if known && t.Approved != "" && t.Approved != o.Digest {
				drift = append(drift, driftJSON{o.Tool, o.Digest, o.Refused, t.Approved})
			}
		}
		if write = len(fresh) > 0; !write {
			return nil, nil
		}
		seq := srv.LastCrawl + 1
		rec = CrawlRecord{Crawl: Crawl{Server: server, Seq: seq, Source: SourceGateway, StartedAt: at, FinishedAt: at, By: by, Observations: fresh}}
		return observedEvents(by, at, map[string]any{
			"server": server, "crawl": seq, "source": SourceGateway, "startedAt": at.Format(time.RFC3339Nano),
			"finishedAt": at.Format(time.RFC3339Nano)}, fresh, func(part []Observation) (string, any) {
			tools := make(map[string]bool, len(part))
			for _, o := range part {
				tools[o.Tool] = true
			}
			in := []driftJSON{}
			for _, d := range drift {
				if tools[d.Tool] {
					in = append(in, d)
				}
			}
			return "drift", in
		}), nil
	}, func(a AuditAppend) error {
		if !write {
			return nil
		}
		return s.cat.RecordCrawl(ctx, rec, a)
	})
	return err
}

// gatewayObservations checks obs and returns them sorted by tool, one per tool (the last
// given wins).
func gatewayObservations(server string, obs []Observation) ([]Observation, error) {
	out := slices.Clone(obs)
	for i, o := range out {
		if !ValidToolName(o.Tool) || (o.Digest == "") == (o.Refused == "") || (o.Digest != "" && !o.Digest.Valid()) {
			return nil, fmt.Errorf("%w: gateway observation %d of server %q: needs a tool name and exactly one of a valid digest or a refusal", ErrInvalid, i, server)
		}
	}
	slices.SortStableFunc(out, func(a, b Observation) int { return cmp.Compare(a.Tool, b.Tool) })
	dedup := out[:0]
	for _, o := range out {
		if n := len(dedup); n > 0 && dedup[n-1].Tool == o.Tool {
			dedup[n-1] = o
			continue
		}
		dedup = append(dedup, o)
	}
	return dedup, nil
}

// observationsJSON spells observations out for an audit body (the body must not follow
// Observation's Go fields).
func observationsJSON(obs []Observation) any {
	type obsJSON struct {
		Tool    string `json:"tool"`
		Digest  Digest `json:"digest,omitempty"`
		Refused string `json:"refused,omitempty"`
	}
	out := make([]obsJSON, len(obs))
	for i, o := range obs {
		out[i] = obsJSON{o.Tool, o.Digest, o.Refused} //nolint:staticcheck // spelled out: the audit body must not follow Observation's fields
	}
	return out
}
