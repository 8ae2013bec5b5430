package text

import "unicode/utf8"

// Prefix returns the longest start of s of at most n bytes that does not split a
// character (s itself when it has at most n bytes; "" when n is 0 or less).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Cut returns s when it has at most max bytes; otherwise its Prefix and mark, max
// bytes at most in all (mark alone, cut, when it is longer than max).
func Cut(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	if len(mark) >= max {
		return Prefix(mark, max)
	}
	return Prefix(s, max-len(mark)) + mark
}
