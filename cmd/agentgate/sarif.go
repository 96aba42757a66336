package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/agentgate-dev/agentgate/internal/approvalproof"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/findings"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// SARIF 2.1.0 (OASIS), the subset GitHub code scanning reads: one run, the rules of
// docs/drift-grading.md as the driver's rules, one result per graded change located on the
// lockfile line of the item it concerns.

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations,omitempty"`
	Results     []sarifResult     `json:"results"`
}

// sarifInvocation says that the run could not check, and why (SARIF 2.1.0 §3.20): what a
// ci that exits 2 writes, with no results.
type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ExitCode                   int                 `json:"exitCode"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications"`
}

type sarifNotification struct {
	Level   string    `json:"level"`
	Message sarifText `json:"message"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	ShortDescription     sarifText      `json:"shortDescription"`
	HelpURI              string         `json:"helpUri"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           sarifRuleProps `json:"properties"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifRuleProps struct {
	// SecuritySeverity is what GitHub code scanning ranks security alerts by (0.0-10.0).
	SecuritySeverity string   `json:"security-severity"`
	Tags             []string `json:"tags"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

const (
	driftGradingURI = "https://github.com/agentgate-dev/agentgate/blob/main/docs/drift-grading.md"
	findingsURI     = "https://github.com/agentgate-dev/agentgate/blob/main/docs/findings.md"
	approvalsURI    = "https://github.com/agentgate-dev/agentgate/blob/main/docs/agentgate.md#approvals-ci-that-proves-every-pinned-tool-was-approved"
)

// ruleV1Drift is the one rule of a version 1 lockfile's findings: every drift fails.
const ruleV1Drift warrant.Rule = "tool-surface-drift"

// sarifSeverity is how SARIF shows a grade: the level of a result, and the
// security-severity GitHub ranks a rule's alerts by.
func sarifSeverity(s warrant.Severity) (level, securitySeverity string) {
	switch s {
	case warrant.Critical:
		return "error", "9.0"
	case warrant.Warning:
		return "warning", "5.0"
	}
	return "note", "2.0"
}

func sarifRules() []sarifRule {
	var out []sarifRule
	help := driftGradingURI
	add := func(id warrant.Rule, sev warrant.Severity, summary string) {
		level, score := sarifSeverity(sev)
		out = append(out, sarifRule{ID: string(id), ShortDescription: sarifText{summary}, HelpURI: help,
			DefaultConfiguration: sarifConfig{level}, Properties: sarifRuleProps{SecuritySeverity: score, Tags: []string{"security", "mcp", "supply-chain"}}})
	}
	for _, r := range warrant.Rules {
		add(r.Rule, r.Severity, r.Summary)
	}
	for _, r := range lockfile.PackageRules {
		add(r.Rule, r.Severity, r.Summary)
	}
	add(lockfile.RuleUngraded, warrant.Critical, "a change that cannot be graded because the locked definition is not in the snapshot (fail closed)")
	add(ruleV1Drift, warrant.Critical, "a tool's name, description or input schema differs from agentgate.lock (lockfile version 1)")
	help = approvalsURI
	for _, r := range approvalproof.Rules {
		add(r.Rule, r.Severity, r.Summary)
	}
	help = findingsURI
	for _, r := range findings.Rules {
		if r.Rule != findings.RuleHiddenCharacters { // graded by suspicious-text-added
			add(r.Rule, r.Severity, r.Summary)
		}
	}
	return out
}

// writeSARIF writes the findings as a SARIF 2.1.0 log to path, atomically.
func (a *app) writeSARIF(path string, fs []finding) error {
	return a.writeSARIFLog(path, fs, nil)
}

// writeSARIFFailure writes the SARIF of a ci that could not check: no results, and an
// invocation that failed with err's message. Code scanning then shows the failure instead
// of the upload step failing for want of a file.
func (a *app) writeSARIFFailure(path string, cause error) error {
	msg := "agentgate ci could not check the tool surface: " + cause.Error()
	for _, f := range a.failed {
		msg += "; " + f
	}
	inv := sarifInvocation{ExitCode: cli.ExitUsage, ToolExecutionNotifications: []sarifNotification{{Level: "error", Message: sarifText{msg}}}}
	return a.writeSARIFLog(path, nil, &inv)
}

func (a *app) writeSARIFLog(path string, fs []finding, inv *sarifInvocation) error {
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool:    sarifTool{Driver: sarifDriver{Name: "agentgate", Version: a.deps.version, InformationURI: "https://github.com/agentgate-dev/agentgate", Rules: sarifRules()}},
			Results: []sarifResult{},
		}},
	}
	if inv != nil {
		log.Runs[0].Invocations = []sarifInvocation{*inv}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].key < fs[j].key })
	for _, f := range fs {
		loc := sarifPhysical{ArtifactLocation: sarifArtifact{URI: f.file}}
		if f.line > 0 {
			loc.Region = &sarifRegion{StartLine: f.line}
		}
		sum := sha256.Sum256([]byte(f.key))
		level, _ := sarifSeverity(f.severity)
		log.Runs[0].Results = append(log.Runs[0].Results, sarifResult{
			RuleID: string(f.rule), Level: level, Message: sarifText{f.message},
			Locations:           []sarifLocation{{PhysicalLocation: loc}},
			PartialFingerprints: map[string]string{"agentgateChange/v1": hex.EncodeToString(sum[:16])},
		})
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, log); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("--sarif: %v", err))
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %v", a.rel(path), unwrapPath(err)))
	}
	a.sarifWritten = true
	return nil
}

// findingsV1 turns a version 1 report into findings: every drift is an error.
func findingsV1(rep *lockfile.Report, lines map[string]int, file, lockName, configName string) []finding {
	var out []finding
	for _, d := range driftLines(rep, lockName, configName) {
		key := d.server
		if d.tool != "" {
			key += "\x00" + d.tool
		}
		line := lines[key]
		if line == 0 {
			line = lines[d.server]
		}
		out = append(out, finding{rule: ruleV1Drift, severity: warrant.Critical, failing: true, message: d.text, file: file, line: line, key: key + "\x00" + d.text})
	}
	return out
}
