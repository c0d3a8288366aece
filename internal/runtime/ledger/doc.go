// Package ledger is the runtime's local execution ledger,
// ~/.a2a/logs/<agent_id>/execution-ledger.jsonl (seed 001 §4.6, §7.6, §9):
// one JSON object per line recording what the runtime did, so the user and
// their agent can ask what happened without the platform.
//
// The ledger is also the durable outbox for complete/fail reports the
// platform could not be reached for: a report_pending line holds the exact
// body to re-send, and a later report_delivered or report_abandoned line
// closes it. A completion kept with the artifacts it stores first has their
// content in private files beside the ledger (outbox/<report_id>/<index>),
// and a report_artifact_written line for each the platform stored, so a
// retry skips it; the report's close removes the files. Platform task_runs
// stay the only execution truth; the outbox only makes sure a result is
// never lost and never sent twice with different content for one attempt.
package ledger
