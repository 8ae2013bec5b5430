package function

// stallingError stops a reconcile that only a change of the Function, a Secret or the
// repository can fix: it is not retried with backoff, only at the next check interval.
type stallingError struct {
	reason  string
	message string
}

func (e *stallingError) Error() string { return e.reason + ": " + e.message }
