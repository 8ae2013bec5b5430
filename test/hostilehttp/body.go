package hostilehttp

import (
	"bytes"
	"io"
)

// Parts of the padded JSON error body.
const (
	jsonHead = `{"errors":[{"code":"UNKNOWN","message":"hostile error body","detail":"`
	jsonTail = `"}]}` + "\n"
	// chunk is the most written at once, so a stopped write ends soon.
	chunk = 32 << 10
)

// filler pads the body's detail.
var filler = bytes.Repeat([]byte("x"), chunk)

// writeJSONPadded writes exactly n bytes to w, in chunks: a registry-style JSON
// error whose detail is padded with "x" (or only "x" when n is too small for
// the JSON around it).
func writeJSONPadded(w io.Writer, n int) error {
	head, tail := []byte(jsonHead), []byte(jsonTail)
	if n < len(head)+len(tail) {
		head, tail = nil, nil
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	for pad := n - len(head) - len(tail); pad > 0; {
		k := min(pad, chunk)
		if _, err := w.Write(filler[:k]); err != nil {
			return err
		}
		pad -= k
	}
	_, err := w.Write(tail)
	return err
}
