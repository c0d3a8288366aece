package agents

// CancelForDelete is the last step of an agent's delete: canceling the
// open runs it listed.
var CancelForDelete = cancelForDelete
