// Package harness holds what the bench (cmd/recordhub-bench) and the chaos
// harness (cmd/recordhub-chaos) both need around the service they start:
// its environment, free ports, a readiness wait, tenants made with the
// CLI and set up through the API, and a webhook receiver in the harness's
// process. Each tool keeps its own flags, measurements and reports.
package harness
