package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
)

// HandledValue is how a status's lastHandled* field shows a request annotation's value
// (functions.dev/requested-at, functions.dev/rebuild-requested-at): as it is, or, over
// 64 bytes, "sha256:" and its digest, so that a tenant's annotation cannot grow the
// status.
func HandledValue(v string) string {
	if len(v) <= 64 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PendingRebuildRequest is the value of annotation functions.dev/rebuild-requested-at
// the operator has not handled yet, as status.lastHandledRebuildRequest would show it;
// "" when there is none.
func (fn *Function) PendingRebuildRequest() string {
	v := fn.Annotations[AnnotationRebuildRequestedAt]
	if v == "" || HandledValue(v) == fn.Status.LastHandledRebuildRequest {
		return ""
	}
	return HandledValue(v)
}
