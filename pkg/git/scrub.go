package git

import (
	"regexp"
	"strings"
)

// userinfoInURL matches the credentials of a URL such as https://user:secret@host, and
// any user of an HTTP(S) URL, which is often a token (https://TOKEN@host). A user part
// may hold an '@' (url.Parse, as go-git, splits at the last one): the match runs to
// the last '@' before the path.
var userinfoInURL = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s]*:[^/\s]*@|(https?://)[^/\s]+@`)

// scrub removes credentials from a message: every secret value it knows of, and
// the user:password part of any URL.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 3 { // a value this short would mangle ordinary words
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return userinfoInURL.ReplaceAllString(msg, "${1}${2}[redacted]@")
}

// lineBreaksEscaped writes the line breaks a URL may hold (the API server admits a
// carriage return in one) as escapes, so that a message quoting it stays on one line.
var lineBreaksEscaped = strings.NewReplacer("\r", `\r`, "\n", `\n`)
